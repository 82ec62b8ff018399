"""GRPO over the evaluation harness: TRL ``GRPOTrainer`` with ``environment_factory``.

Modules (one concept each; nothing is re-exported here, so that ``fasbench rl ...`` starts without
importing the harness or torch):

- :mod:`~fasbench.rl.config` — :class:`RLConfig` (one flat profile, ``fasbench/configs/rl_*.yaml``),
  ``load_config``, ``resolve_model_spec``, the names of a run's files;
- :mod:`~fasbench.rl.tasks` — ``load_rl_tasks``: the config's task fields mapped onto the shared task-set
  loader and corpus helper (:mod:`fasbench.data.tasksets`, :mod:`fasbench.data.corpora`);
- :mod:`~fasbench.rl.env` — ``HarnessEnv``: the harness tools as environment methods, and the
  episode of a rollout rebuilt from its messages;
- :mod:`~fasbench.rl.episode_reward` — ``EpisodeReward`` (the TRL reward function) and the batch statistics;
- :mod:`~fasbench.rl.train` — ``HarnessGRPOTrainer``, ``grpo_args``, ``make_trainer``, ``train``;
- :mod:`~fasbench.rl.trl_compat` — the supported TRL range and the check of the private methods
  the trainer overrides;
- :mod:`~fasbench.rl.run_analysis` — ``log_frame``, ``read_rollouts``, ``incentive_landscape``;
- :mod:`~fasbench.rl.turn_curves`, :mod:`~fasbench.rl.plots` — turns and accuracy over training, figures;
- :mod:`~fasbench.rl.mini` — the RL miniature (profiles ``sft_mini`` / ``rl_mini``, notebook 06): before vs
  after with intervals and paired tests, the acceptance checks, a run's CPU cost, the findings;
- :mod:`~fasbench.rl.cli` — ``fasbench rl train | config | log``.

Before vs after training is the checkpoint evaluator every workflow shares,
:func:`fasbench.evaluation.checkpoints.evaluate_checkpoint` (notebook 06 calls it with the run's tool set, limits
and reward). The tables here (incentive landscape, logged rollouts, start vs target) are rows of the
one episode table, :func:`fasbench.evaluation.episodes.episode_row` (columns: ``fasbench.evaluation.episodes.COLUMNS``;
a reward's parts are ``reward_NAME__PART``), with the few columns each analysis adds in front or behind.

Where TRL's loop differs from ``run_episode``: the harness's last-turn note is appended as a user
message after the tool results of the turn before the last (``HarnessGRPOTrainer._get_tool_suffix_ids``),
as ``run_episode`` does; its no-call reminder is not, since TRL's tool loop ends the rollout at a reply
without tool calls; calls made after the report get an error observation instead of ending the
rollout at once (the reward ignores them); the turn counter that enforces ``max_calls_per_turn`` is
advanced by the trainer at every generation.
"""
