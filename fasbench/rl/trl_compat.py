"""The TRL versions fasbench's GRPO supports, checked in one place.

``fasbench.rl.train.HarnessGRPOTrainer`` overrides private members of TRL's ``GRPOTrainer`` (the tool loop of
``environment_factory``), which TRL may change in any release:

- ``_generate_single_turn`` (to start a new turn in every environment, for ``max_calls_per_turn``),
- ``_tool_call_loop`` and ``_get_tool_suffix_ids`` (to append the harness's last-turn note after the
  tool results of the turn before the last),
- ``_generate_and_score_completions`` (to log the episode statistics),
- and it reads ``_env_tools`` (a ``{environment name: tools}`` dict, TRL's multi-environment layout,
  huggingface/trl PR #6002), ``_metrics`` and ``environments``.

``SUPPORTED`` is the range tested: the installed series when this was written (TRL 1.16.0) up to the
next major. The lower bound is the tested release, not the first release with these members (the
stored TRL history did not say which release first had the multi-environment ``_env_tools``).
:func:`check_grpo_trainer` runs when the trainer is built, so an unsupported TRL fails at once with
one message naming the range, not deep inside a training step.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version

# packaging is a dependency of TRL itself (Requires-Dist: packaging), so it is there whenever TRL is.
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

SUPPORTED = ">=1.16,<2"
PRIVATE_METHODS = (
    "_generate_single_turn",
    "_tool_call_loop",
    "_get_tool_suffix_ids",
    "_generate_and_score_completions",
)


class TRLVersionError(ImportError):
    """The installed TRL is outside the supported range or lacks a member fasbench.rl.train overrides."""


def trl_version() -> str:
    """The installed TRL's version string."""
    try:
        return installed_version("trl")
    except PackageNotFoundError as e:
        raise TRLVersionError(
            f"TRL is not installed; fasbench's GRPO needs trl{SUPPORTED} (pip install 'trl{SUPPORTED}')"
        ) from e


def check_version(v: str) -> None:
    """Raise TRLVersionError unless ``v`` is in ``SUPPORTED``."""
    try:
        ok = Version(v) in SpecifierSet(SUPPORTED)
    except InvalidVersion:
        ok = False
    if not ok:
        raise TRLVersionError(
            f"TRL {v} is installed; fasbench's GRPO supports trl{SUPPORTED} (it overrides "
            f"private GRPOTrainer methods of those releases): pip install 'trl{SUPPORTED}'"
        )


def check_grpo_trainer(trainer_cls: type, v: str | None = None) -> None:
    """Check the TRL version (``v``, default: the installed one) and that ``trainer_cls`` (TRL's
    ``GRPOTrainer``) has every private method fasbench.rl.train overrides."""
    v = trl_version() if v is None else v
    check_version(v)
    missing = [m for m in PRIVATE_METHODS if not callable(getattr(trainer_cls, m, None))]
    if missing:
        raise TRLVersionError(
            f"TRL {v}: GRPOTrainer has no {', '.join(missing)}, which fasbench's GRPO "
            f"overrides; supported: trl{SUPPORTED}"
        )


def check_env_tools(trainer) -> None:
    """After construction: ``_env_tools`` must be TRL's ``{environment name: tools}`` dict."""
    if not isinstance(getattr(trainer, "_env_tools", None), dict):
        raise TRLVersionError(
            f"TRL {trl_version()}: GRPOTrainer._env_tools is not a {{environment: tools}} dict, "
            f"as fasbench's GRPO expects; supported: trl{SUPPORTED}"
        )
