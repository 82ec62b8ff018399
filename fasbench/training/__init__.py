"""What the training workflows (``fasbench.sft``, ``fasbench.rl``) share: one profile loader with
``--set`` overrides (:mod:`~fasbench.training.profiles`) and one run folder layout for the step log
and checkpoints (:mod:`~fasbench.training.log`)."""

from pathlib import Path


def profile_help(prefix: str) -> str:
    """The ``--config`` help of ``fasbench sft`` / ``fasbench rl``: every shipped ``<prefix>_*.yaml``
    profile by name (read from the folder, so a new profile is listed without an edit here)."""
    names = sorted(
        p.stem[len(prefix) + 1 :] for p in (Path(__file__).resolve().parents[1] / "configs").glob(f"{prefix}_*.yaml")
    )
    return f"profile ({' | '.join(names)}) or a YAML config file"
