"""What the training workflows (``fasbench.sft``, ``fasbench.rl``) share: one profile loader with
``--set`` overrides (:mod:`~fasbench.training.profiles`) and one run folder layout for the step log
and checkpoints (:mod:`~fasbench.training.log`)."""

from pathlib import Path


def _purpose(path: Path) -> str:
    """A profile's purpose: its YAML's first comment line up to the first ``:``, `` (`` or ``.``."""
    try:
        first = path.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return ""
    text = first.lstrip("# ").strip() if first.startswith("#") else ""
    cut = min((i for i in (text.find(":"), text.find(" ("), text.find(". ")) if i > 0), default=len(text))
    return text[:cut].strip()


def profile_help(prefix: str) -> str:
    """The ``--config`` help of ``fasbench sft`` / ``fasbench rl``: every shipped ``<prefix>_*.yaml``
    profile by name with what it is for (its YAML's first comment; read from the folder, so a new profile
    is listed without an edit here)."""
    files = sorted((Path(__file__).resolve().parents[1] / "configs").glob(f"{prefix}_*.yaml"))
    listed = "; ".join(f"{p.stem[len(prefix) + 1 :]}" + (f" = {what}" if (what := _purpose(p)) else "") for p in files)
    return f"a profile ({listed}) or a YAML config file; `fasbench {prefix} config NAME` prints one resolved"
