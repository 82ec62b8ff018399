"""One loader for the run profiles of every training workflow (SFT and RL): lookup, YAML, checks,
overrides.

A *profile* is a YAML file ``fasbench/configs/<kind>_<name>.yaml`` (found by name) or any YAML/JSON
file (found by path). Its fields are those of flat dataclasses, one per component of the workflow:

- RL has one component (:class:`fasbench.rl.config.RLConfig`): its fields are the profile's
  top-level keys;
- SFT has three (:class:`~fasbench.sft.data.BuildConfig`, :class:`~fasbench.sft.train.TrainConfig`,
  :class:`~fasbench.sft.train.EvalConfig`), each a flat section ``build:`` / ``train:`` / ``eval:``
  of the profile, because the data builder, the trainer and the evaluator each read one of them and
  a few names mean different things in two of them (``build.max_turns``, the turns of the training
  episodes, vs ``eval.max_turns``, those of the evaluation: 4 vs 2 in ``sft_tiny``; ``build.reward``
  filters data, ``eval.reward`` scores the evaluation).

The same rules for both:

- every key must be a field (a one-line error names the bad key and the closest field); every value
  must have the field's type (a one-line error names the key, the value and the type expected);
- overrides are ``key=value`` (``--set`` on the command line, a ``{key: value}`` mapping in Python);
  ``key`` is a field name, or ``section.key`` where the bare name is in two sections; on the command
  line the value is read as the field's type (``--set max_steps=8``, ``--set dtype=null``,
  ``--set reference_runs=[a,b]``; a ``str`` field takes the text as is);
- ``None`` (YAML ``null``) is a value like any other, allowed where the field's type allows it: an
  override of ``None`` sets the field to ``None``; to keep the profile's value, leave the key out;
- ``{cache}`` and ``{repo}`` in paths expand to the cache folder and the repository (:func:`expand`);
- a ``report_to`` field (the experiment trackers, TRL's ``report_to``) is checked when the profile
  loads, before any model: every tracker it names must be installed, else a one-line error names the
  extra to install (``pip install 'fasbench[track]'``) (:func:`check_report_to`).
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from fasbench.errors import UserError
from fasbench.paths import cache_dir, repo_root

CONFIGS_DIR = Path(__file__).resolve().parents[1] / "configs"

# Experiment trackers (TrainingArguments.report_to) -> the modules transformers imports for them.
# The first three are installed by fasbench's `track` extra (tensorboard is also a dependency: the
# shipped profiles' default); the others are transformers' remaining integrations, passed through.
TRACKERS: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"), "trackio": ("trackio",), "wandb": ("wandb",),
    "mlflow": ("mlflow",), "comet_ml": ("comet_ml",), "clearml": ("clearml",), "neptune": ("neptune",),
    "swanlab": ("swanlab",), "dvclive": ("dvclive",), "codecarbon": ("codecarbon",), "azure_ml": ("azureml",),
    "dagshub": ("dagshub",), "flyte": ("flytekit",),
}
TRACK_EXTRA = ("tensorboard", "trackio", "wandb")  # pyproject.toml: [project.optional-dependencies] track


@dataclass(frozen=True)
class Kind:
    """The profiles of one workflow: file prefix and components (``""``: fields at the top level)."""

    prefix: str  # fasbench/configs/<prefix>_<name>.yaml
    sections: Mapping[str, type]  # section name -> flat dataclass; {"": cls} for a one-component workflow
    extra: tuple[str, ...] = ()  # other top-level keys (sft: name)


@dataclass
class Loaded:
    """A loaded profile: its file, its name, one dataclass instance per section, the extra keys."""

    path: Path
    name: str
    parts: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


def expand(p: str | os.PathLike) -> str:
    """``{cache}`` -> the cache folder, ``{repo}`` -> the repository, ``~`` -> home."""
    return os.path.expanduser(str(p).replace("{cache}", str(cache_dir())).replace("{repo}", str(repo_root())))


def profiles(kind: Kind) -> list[str]:
    """The names of the shipped profiles of ``kind``."""
    return sorted(p.stem[len(kind.prefix) + 1:] for p in CONFIGS_DIR.glob(f"{kind.prefix}_*.yaml"))


def profile_path(kind: Kind, name_or_path: str | os.PathLike) -> Path:
    """An existing file, else the shipped profile of that name (``tiny`` -> ``configs/<prefix>_tiny.yaml``)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    cand = CONFIGS_DIR / f"{kind.prefix}_{name_or_path}.yaml"
    if cand.is_file():
        return cand
    raise UserError(f"{kind.prefix} profile {str(name_or_path)!r}: no such file and no shipped profile of that "
                    f"name (profiles: {', '.join(profiles(kind))})")


def read_mapping(path: Path) -> dict:
    """The mapping in a YAML (or JSON) file; one-line errors for text that is not one."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        raise UserError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: a profile is a mapping of config fields, got {type(data).__name__}")
    return data


# ---------------------------------------------------------------- types of fields

def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _args(hint) -> tuple:
    return typing.get_args(hint)


def _is_union(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def describe(hint) -> str:
    """``int | None`` -> 'an integer or null' (for error messages)."""
    if hint is Any:
        return "anything"
    if _is_union(hint):
        return " or ".join(describe(a) for a in _args(hint))
    if hint is type(None):
        return "null"
    origin = typing.get_origin(hint) or hint
    if origin in (list, tuple):
        a = _args(hint)
        return f"a list of {describe(a[0]).removeprefix('a ').removeprefix('an ')}s" if a else "a list"
    if origin is dict:
        a = _args(hint)
        return f"a mapping of {describe(a[1]).removeprefix('a ').removeprefix('an ')}s" if a else "a mapping"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(origin, origin.__name__)


class _Mismatch(Exception):
    pass


def coerce(value: Any, hint) -> Any:
    """``value`` as the type ``hint`` (an int where a float is expected becomes a float); raises
    ``_Mismatch`` when it is not of that type."""
    if hint is Any:
        return value
    if _is_union(hint):
        for a in _args(hint):
            try:
                return coerce(value, a)
            except _Mismatch:
                pass
        raise _Mismatch
    if hint is type(None):
        if value is None:
            return None
        raise _Mismatch
    origin = typing.get_origin(hint) or hint
    a = _args(hint)
    if origin is bool:
        if isinstance(value, bool):
            return value
    elif origin is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif origin is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif origin is str:
        if isinstance(value, str):
            return value
    elif origin in (list, tuple):
        if isinstance(value, (list, tuple)):
            return [coerce(v, a[0]) for v in value] if a else list(value)
    elif origin is dict:
        if isinstance(value, dict):
            return {coerce(k, a[0]): coerce(v, a[1]) for k, v in value.items()} if a else dict(value)
    elif isinstance(value, origin):
        return value
    raise _Mismatch


def _accepts(hint, typ: type) -> bool:
    return hint is typ or (_is_union(hint) and typ in _args(hint))


def _accepts_str(hint) -> bool:
    return _accepts(hint, str)


def parse_value(text: str, hint) -> Any:
    """A ``--set`` value read as the type ``hint``: YAML (numbers, true/false, null, [lists],
    {mappings}; ``1e-4`` too, which YAML 1.1 reads as a string); a field that takes a string takes the
    text as is when YAML reads something else."""
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        v = text
    try:
        return coerce(v, hint)
    except _Mismatch:
        pass
    if isinstance(v, str) and _accepts(hint, float):  # YAML 1.1 reads 1e-4 as a string
        try:
            return float(v)
        except ValueError:
            pass
    if _accepts_str(hint):
        return text
    raise _Mismatch


# ---------------------------------------------------------------- loading

def _suggest(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _where(kind: Kind, path: Path) -> str:
    return f"{kind.prefix} profile {path}"


def resolve_key(kind: Kind, key: str) -> tuple[str, str]:
    """(section, field) of an override key ``field`` or ``section.field``; one-line errors."""
    secs = {s: {f.name for f in fields(c)} for s, c in kind.sections.items()}
    if key in kind.extra:
        return "", key
    sec, dot, name = key.rpartition(".")
    if dot:
        if sec not in secs or not sec:
            raise UserError(f"{kind.prefix} config: no section {sec!r} in {key!r} "
                            f"(sections: {', '.join(s for s in secs if s) or 'none; use the bare field name'})")
        if name not in secs[sec]:
            raise UserError(f"{kind.prefix} config: {sec} has no field {name!r}{_suggest(name, secs[sec])}")
        return sec, name
    holders = [s for s, names in secs.items() if key in names]
    if len(holders) > 1:
        raise UserError(f"{kind.prefix} config: field {key!r} is in several sections; write "
                        + " or ".join(f"{s}.{key}" for s in holders))
    if not holders:
        known = set().union(*secs.values())
        raise UserError(f"{kind.prefix} config: unknown field {key!r}{_suggest(key, known)}")
    return holders[0], key


def parse_sets(kind: Kind, pairs: Sequence[str]) -> dict[str, Any]:
    """``["key=value", ...]`` (``--set``) -> ``{key: value}``, each value read as its field's type."""
    out: dict[str, Any] = {}
    for p in pairs or ():
        k, eq, v = p.partition("=")
        k = k.strip()
        if not eq or not k:
            raise UserError(f"--set expects key=value, got {p!r}")
        sec, name = resolve_key(kind, k)
        if not sec and name in kind.extra:
            out[k] = v
            continue
        hint = _hints(kind.sections[sec])[name]
        try:
            out[k] = parse_value(v, hint)
        except _Mismatch:
            raise UserError(f"--set {p}: {k} expects {describe(hint)}, got {v!r}") from None
    return out


def _build(cls: type, values: dict, where: str):
    hints = _hints(cls)
    known = {f.name for f in fields(cls)}
    for k in values:
        if k not in known:
            raise UserError(f"{where}: unknown field {k!r}{_suggest(k, known)}")
    kw = {}
    for k, v in values.items():
        try:
            kw[k] = coerce(v, hints[k])
        except _Mismatch:
            try:  # YAML 1.1 reads 1e-4 (no dot) as a string
                kw[k] = float(v) if isinstance(v, str) and _accepts(hints[k], float) else coerce(v, hints[k])
            except (_Mismatch, ValueError):
                raise UserError(f"{where}: {k} expects {describe(hints[k])}, got {v!r}") from None
    return cls(**kw)


def load(kind: Kind, name_or_path: str | os.PathLike, overrides: Mapping[str, Any] | None = None,
         sets: Sequence[str] = ()) -> Loaded:
    """Read a profile, apply ``overrides`` (``{key or section.key: value}``) then ``sets``
    (``["key=value"]``), check every key and value, and build one dataclass per section."""
    path = profile_path(kind, name_or_path)
    data = read_mapping(path)
    where = _where(kind, path)
    flat = "" in kind.sections
    per: dict[str, dict] = {s: {} for s in kind.sections}
    extra: dict[str, Any] = {}
    for k, v in data.items():
        if k in kind.extra:
            extra[k] = v
        elif flat:
            per[""][k] = v
        elif k in kind.sections:
            if v is None:
                continue
            if not isinstance(v, dict):
                raise UserError(f"{where}: section {k!r} must be a mapping of fields, got {v!r}")
            per[k].update(v)
        else:
            homes = [s for s, c in kind.sections.items() if k in {f.name for f in fields(c)}]
            if homes:
                raise UserError(f"{where}: {k!r} is a field of the {' or '.join(homes)} section; write it there")
            raise UserError(f"{where}: unknown key {k!r}{_suggest(str(k), [*kind.sections, *kind.extra])} "
                            f"(a {kind.prefix} profile has {', '.join([*kind.extra, *kind.sections])})")
    over = dict(overrides or {})
    over.update(parse_sets(kind, sets))
    for k, v in over.items():
        sec, name = resolve_key(kind, k)
        if not sec and name in kind.extra:
            extra[name] = v
        else:
            per[sec][name] = v
    parts = {}
    for s, cls in kind.sections.items():
        parts[s] = _build(cls, per[s], f"{where}{': ' + s if s else ''}")
        if hasattr(parts[s], "report_to"):
            check_report_to(parts[s].report_to, f"{where}{': ' + s if s else ''}")
    name = str(extra.get("name") or path.stem.removeprefix(kind.prefix + "_"))
    return Loaded(path, name, parts, extra)



# ---------------------------------------------------------------- experiment trackers (report_to)

def _installed(modules: Sequence[str]) -> bool:
    return any(importlib.util.find_spec(m) is not None for m in modules)


def report_to_list(value: Any) -> list[str]:
    """TRL's ``report_to`` of a profile's value: ``"none"``/null/[] -> [], a name -> [name], a list as
    is; ``"auto"`` -> tensorboard when installed, plus wandb when installed and configured
    (``WANDB_API_KEY`` or ``WANDB_MODE`` set)."""
    if value in (None, "none", [], ["none"]):
        return []
    if value == "auto":
        out = ["tensorboard"] if _installed(TRACKERS["tensorboard"]) else []
        if _installed(TRACKERS["wandb"]) and (os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_MODE")):
            out.append("wandb")
        return out
    return [value] if isinstance(value, str) else list(value)


def check_report_to(value: Any, where: str = "config") -> list[str]:
    """The trackers of ``value`` (:func:`report_to_list`), each known and installed; else a one-line
    ``UserError`` naming the package and the extra that installs it. Fast (``find_spec``, no import)."""
    if not (value is None or isinstance(value, str) or
            (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))):
        raise UserError(f"{where}: report_to expects a tracker name or a list of them, got {value!r}")
    names = report_to_list(value)
    for n in names:
        if n not in TRACKERS:
            raise UserError(f"{where}: report_to {n!r} is not a tracker{_suggest(n, TRACKERS)} "
                            f"(choose {', '.join(TRACK_EXTRA)}, none, auto, or another transformers "
                            f"integration: {', '.join(k for k in TRACKERS if k not in TRACK_EXTRA)})")
        if not _installed(TRACKERS[n]):
            how = "pip install 'fasbench[track]'" if n in TRACK_EXTRA else f"pip install {TRACKERS[n][0]}"
            raise UserError(f"{where}: report_to {n!r} needs the {TRACKERS[n][0]} package, which is not "
                            f"installed: {how} (or set report_to: none)")
    return names


def device_args(checkpointing: bool, use_cpu: bool) -> dict[str, Any]:
    """The ``TrainingArguments`` fields that depend on the machine, shared by the SFT and GRPO configs:
    activation checkpointing under the name the installed transformers reads (``activation_checkpointing``
    since 5.x; ``gradient_checkpointing``, which 5.x warns is deprecated, before), and pinned host memory
    for the data loader only where an accelerator takes the batches (torch warns on every loader else)."""
    import torch  # local import: torch ~1.9 s (callers have imported it already, through trl)
    from transformers import TrainingArguments  # local import: transformers ~0.6 s over torch

    names = {f.name for f in fields(TrainingArguments)}
    key = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    accel = getattr(torch, "accelerator", None)
    has_accelerator = accel.is_available() if accel is not None else torch.cuda.is_available()
    return {key: bool(checkpointing), "dataloader_pin_memory": bool(has_accelerator and not use_cpu)}
