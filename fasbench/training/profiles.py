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

- every key must be a field (a one-line error names the file, the bad key and the closest field);
  every value must have the field's type (a one-line error names the file, the key, the value and
  the type expected). pydantic checks them: each dataclass has a strict model of its fields
  (:func:`model_of`: no ``1`` for ``true``, no ``"3"`` for ``3``, an integer where a number goes,
  ``1e-4`` a number though YAML 1.1 reads it as a string); the dataclass keeps its defaults and its
  own checks (``__post_init__``), and this module writes the one-line errors;
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
import functools
import importlib.util
import os
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any

import pydantic
import yaml

from fasbench.base.errors import UserError
from fasbench.base.paths import cache_dir, repo_root

CONFIGS_DIR = Path(__file__).resolve().parents[1] / "configs"

# Experiment trackers (TrainingArguments.report_to) -> the modules transformers imports for them.
# The first three are installed by fasbench's `track` extra (tensorboard is also a dependency: the
# shipped profiles' default); the others are transformers' remaining integrations, passed through.
TRACKERS: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "trackio": ("trackio",),
    "wandb": ("wandb",),
    "mlflow": ("mlflow",),
    "comet_ml": ("comet_ml",),
    "clearml": ("clearml",),
    "neptune": ("neptune",),
    "swanlab": ("swanlab",),
    "dvclive": ("dvclive",),
    "codecarbon": ("codecarbon",),
    "azure_ml": ("azureml",),
    "dagshub": ("dagshub",),
    "flyte": ("flytekit",),
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
    return sorted(p.stem[len(kind.prefix) + 1 :] for p in CONFIGS_DIR.glob(f"{kind.prefix}_*.yaml"))


def profile_path(kind: Kind, name_or_path: str | os.PathLike) -> Path:
    """An existing file, else the shipped profile of that name (``tiny`` -> ``configs/<prefix>_tiny.yaml``)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    cand = CONFIGS_DIR / f"{kind.prefix}_{name_or_path}.yaml"
    if cand.is_file():
        return cand
    raise UserError(
        f"{kind.prefix} profile {str(name_or_path)!r}: no such file and no shipped profile of that "
        f"name (profiles: {', '.join(profiles(kind))})"
    )


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


# ---------------------------------------------------------------- fields, as pydantic models


def _is_union(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _accepts(hint, typ: type) -> bool:
    return hint is typ or (_is_union(hint) and typ in typing.get_args(hint))


def describe(hint) -> str:
    """``int | None`` -> 'an integer or null' (for error messages)."""
    if hint is Any:
        return "anything"
    if _is_union(hint):
        return " or ".join(describe(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "null"
    origin, a = typing.get_origin(hint) or hint, typing.get_args(hint)
    if origin in (list, tuple):
        return f"a list of {describe(a[0]).removeprefix('a ').removeprefix('an ')}s" if a else "a list"
    if origin is dict:
        return f"a mapping of {describe(a[1]).removeprefix('a ').removeprefix('an ')}s" if a else "a mapping"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(origin, origin.__name__)


def _field_type(hint):
    """``hint`` checked strictly (no 1 for true, no "3" for 3), with two readings before the check: a
    tuple is a list, and a string is a number where the field takes a number and no string (YAML 1.1
    reads ``1e-4`` as a string)."""
    to_float = _accepts(hint, float) and not _accepts(hint, str)

    def before(v):
        if isinstance(v, tuple):
            return list(v)
        if to_float and isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                pass
        return v

    return Annotated[hint, pydantic.BeforeValidator(before)]


@functools.cache
def model_of(cls: type) -> type[pydantic.BaseModel]:
    """The pydantic model of a flat dataclass's fields: strict types, no other key."""
    hints = typing.get_type_hints(cls)
    return pydantic.create_model(
        f"{cls.__name__}Fields",
        __config__=pydantic.ConfigDict(extra="forbid", strict=True),
        **{
            f.name: (
                _field_type(hints[f.name]),
                pydantic.Field(default=f.default)
                if f.default is not MISSING
                else pydantic.Field(default_factory=f.default_factory),
            )
            for f in fields(cls)
        },
    )


def _error(e: pydantic.ValidationError, cls: type, values: Mapping, where: str) -> UserError:
    """A one-line error of the first problem pydantic found: the key, the value, the type expected."""
    loc = e.errors()[0]["loc"][0]
    k = next(k for k in values if k == loc or str(k) == str(loc))  # a YAML key need not be a string
    hints = typing.get_type_hints(cls)
    if k not in hints:
        return UserError(f"{where}: unknown field {k!r}{_suggest(str(k), [f.name for f in fields(cls)])}")
    return UserError(f"{where}: {k} expects {describe(hints[k])}, got {values[k]!r}")


def build(cls: type, values: Mapping, where: str):
    """A ``cls`` (a flat dataclass) of ``values``, each checked against its field (one-line
    ``UserError`` naming ``where``, the key and the value); the fields not given keep their defaults,
    ``cls``'s own checks (``__post_init__``) run as it is built."""
    try:
        got = model_of(cls).model_validate(dict(values))
    except pydantic.ValidationError as e:
        raise _error(e, cls, values, where) from None
    return cls(**{k: getattr(got, k) for k in got.model_fields_set})


def parse_value(text: str, cls: type, name: str) -> Any:
    """A ``--set`` value of the field ``name`` of ``cls`` read as its type: YAML (numbers, true/false,
    null, [lists], {mappings}); a field that takes a string takes the text as is when YAML reads
    something else. ``ValueError`` when it is not of that type."""
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        v = text
    for cand in (v, text) if _accepts(typing.get_type_hints(cls)[name], str) else (v,):
        try:
            return getattr(model_of(cls).model_validate({name: cand}), name)
        except pydantic.ValidationError:
            pass
    raise ValueError(f"{text!r} is not a value of {cls.__name__}.{name}")


# ---------------------------------------------------------------- loading


def _suggest(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_key(kind: Kind, key: str) -> tuple[str, str]:
    """(section, field) of an override key ``field`` or ``section.field``; one-line errors."""
    secs = {s: {f.name for f in fields(c)} for s, c in kind.sections.items()}
    if key in kind.extra:
        return "", key
    sec, dot, name = key.rpartition(".")
    if dot:
        if sec not in secs or not sec:
            raise UserError(
                f"{kind.prefix} config: no section {sec!r} in {key!r} "
                f"(sections: {', '.join(s for s in secs if s) or 'none; use the bare field name'})"
            )
        if name not in secs[sec]:
            raise UserError(f"{kind.prefix} config: {sec} has no field {name!r}{_suggest(name, secs[sec])}")
        return sec, name
    holders = [s for s, names in secs.items() if key in names]
    if len(holders) > 1:
        raise UserError(
            f"{kind.prefix} config: field {key!r} is in several sections; write "
            + " or ".join(f"{s}.{key}" for s in holders)
        )
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
        cls = kind.sections[sec]
        try:
            out[k] = parse_value(v, cls, name)
        except ValueError:
            raise UserError(f"--set {p}: {k} expects {describe(typing.get_type_hints(cls)[name])}, got {v!r}") from None
    return out


def load(
    kind: Kind, name_or_path: str | os.PathLike, overrides: Mapping[str, Any] | None = None, sets: Sequence[str] = ()
) -> Loaded:
    """Read a profile, apply ``overrides`` (``{key or section.key: value}``) then ``sets``
    (``["key=value"]``), check every key and value, and build one dataclass per section."""
    path = profile_path(kind, name_or_path)
    data = read_mapping(path)
    where = f"{kind.prefix} profile {path}"
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
            raise UserError(
                f"{where}: unknown key {k!r}{_suggest(str(k), [*kind.sections, *kind.extra])} "
                f"(a {kind.prefix} profile has {', '.join([*kind.extra, *kind.sections])})"
            )
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
        parts[s] = build(cls, per[s], f"{where}{': ' + s if s else ''}")
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
    if not (
        value is None
        or isinstance(value, str)
        or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))
    ):
        raise UserError(f"{where}: report_to expects a tracker name or a list of them, got {value!r}")
    names = report_to_list(value)
    for n in names:
        if n not in TRACKERS:
            raise UserError(
                f"{where}: report_to {n!r} is not a tracker{_suggest(n, TRACKERS)} "
                f"(choose {', '.join(TRACK_EXTRA)}, none, auto, or another transformers "
                f"integration: {', '.join(k for k in TRACKERS if k not in TRACK_EXTRA)})"
            )
        if not _installed(TRACKERS[n]):
            how = "pip install 'fasbench[track]'" if n in TRACK_EXTRA else f"pip install {TRACKERS[n][0]}"
            raise UserError(
                f"{where}: report_to {n!r} needs the {TRACKERS[n][0]} package, which is not "
                f"installed: {how} (or set report_to: none)"
            )
    return names


def device_args(checkpointing: bool, use_cpu: bool) -> dict[str, Any]:
    """The ``TrainingArguments`` fields that depend on the machine, shared by the SFT and GRPO configs:
    activation checkpointing under the name the installed transformers reads (``activation_checkpointing``
    since 5.x; ``gradient_checkpointing``, which 5.x warns is deprecated, before), and pinned host memory
    for the data loader only where an accelerator takes the batches (torch warns on every loader else)."""
    import torch  # local import: torch is heavy (callers have imported it already, through trl)
    from transformers import TrainingArguments  # local import: transformers adds to torch

    names = {f.name for f in fields(TrainingArguments)}
    key = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    accel = getattr(torch, "accelerator", None)
    has_accelerator = accel.is_available() if accel is not None else torch.cuda.is_available()
    return {key: bool(checkpointing), "dataloader_pin_memory": bool(has_accelerator and not use_cpu)}
