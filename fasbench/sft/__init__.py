"""SFT of a search subagent from reference traces with TRL. See README.md in this folder.

``build(BuildConfig, out)`` makes the data set, ``train(Profile)`` runs TRL's SFTTrainer,
``evaluate(model, tasks, ...)`` runs a model through the harness; ``load_profile(name_or_path)``
reads ``fasbench/configs/sft_<name>.yaml``.
"""

from fasbench.sft.data import SOURCES, BuildConfig, build, load_dataset

__all__ = ["SOURCES", "BuildConfig", "build", "load_dataset"]
