"""SFT of a search subagent from reference traces with TRL. See README.md in this folder.

``build(BuildConfig, out)`` makes the data set (``sft.data``), ``train(Profile)`` runs TRL's
SFTTrainer (``sft.train``), ``evaluate(model, tasks, ...)`` runs a model through the harness
(``sft.before_after``); ``load_profile(name_or_path)`` reads ``fasbench/configs/sft_<name>.yaml``.

The package imports nothing itself: ``fasbench sft`` commands are registered at CLI start-up and
these modules load the harness, the policies and tqdm (benchmarks/README.md: import costs), so each is imported where it is used.
"""
