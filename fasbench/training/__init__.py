"""What the training workflows (``fasbench.sft``, ``fasbench.rl``) share: one profile loader with
``--set`` overrides (:mod:`~fasbench.training.config`) and one run folder layout for the step log
and checkpoints (:mod:`~fasbench.training.log`)."""
