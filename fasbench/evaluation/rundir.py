"""THE run directory: one typed model of ``run.json``, one ``migrate`` for older layouts, one reader of
``summary.parquet``.

A run directory (written by :func:`fasbench.evaluation.evaluate.run_eval`) holds ``run.json``
(:class:`RunMeta`: the configuration — policy, tool set, limits, report contract, headline reward,
shard — the tasks asked for with their corpus kind, provenance — task source, code version, creation
time, the code versions that resumed it — each call's counts and the query sources),
``traces.jsonl``, ``tasks.jsonl`` (the tasks with their gold), ``summary.parquet`` (:func:`load_summary`)
and where they apply ``skipped.jsonl`` / ``excluded.jsonl``.

``run.json`` is data from disk: :func:`read_run` reads it through ``fasbench.base.contain`` (no FIFO,
bounded), :func:`migrate` lifts an older layout to the current one and :meth:`RunMeta.from_dict`
validates every field (one-line ``ValueError`` naming the bad field). Layouts:

- 1 (every release before ``layout`` was written): no headline reward recorded — migrated to
  ``relace``, the default of ``run_eval`` and ``fasbench eval --reward`` in every layout-1 release
  (a layout-1 run made with another ``--reward`` cannot be told apart: its ``reward`` column is then
  read as relace's; every reward's own ``reward_NAME`` column is exact anyway); no report contract
  before it existed — ``free``; the shard in a separate ``shard.json`` — read into ``shard``; tasks,
  corpus, calls and query sources possibly absent — left unrecorded (None / []), and a resume records
  them.
- 2: the above recorded in ``run.json`` itself (``layout: 2``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import polars as pl

from fasbench.base.contain import read_json, read_regular
from fasbench.base.provenance import code_version, timestamp

LAYOUT = 2
LAYOUT1_REWARD = "relace"  # the headline reward of every layout-1 run (the default then; see the module doc)
#: run.json keys that must match on a resume (a run directory never mixes two requests)
CONFIG = ("policy", "toolset", "max_turns", "max_calls", "report_contract", "reward", "shard")


def _str(v) -> bool:
    return isinstance(v, str)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _keys(v, spec: dict) -> bool:
    return isinstance(v, dict) and all(k in v and ok(v[k]) for k, ok in spec.items())


#: field -> (what it must be, in words; its check); None is allowed for every field but layout
_CHECKS = {
    "layout": ("an integer", _int),
    "policy": ("a string", _str),
    "toolset": ("a string", _str),
    "max_turns": ("an integer", _int),
    "max_calls": ("an integer", _int),
    "report_contract": ("a string", _str),
    "reward": ("a string", _str),
    "task_source": ("a string", _str),
    "corpus": ("a string", _str),
    "tasks": ("an object {n: integer, key: string}", lambda v: _keys(v, {"n": _int, "key": _str})),
    "shard": (
        "an object {index, count, tasks_before_sharding: integers}",
        lambda v: _keys(v, {"index": _int, "count": _int, "tasks_before_sharding": _int}),
    ),
    "query_sources": ("an object of counts", lambda v: isinstance(v, dict) and all(map(_int, v.values()))),
    "code_version": ("an object", lambda v: isinstance(v, dict)),
    "created": ("a string", _str),
    "resumed_with": ("a list of strings", lambda v: isinstance(v, list) and all(map(_str, v))),
    "calls": ("a list of objects", lambda v: isinstance(v, list) and all(isinstance(c, dict) for c in v)),
}


@dataclass
class RunMeta:
    """``run.json`` of an evaluation run (current layout); unknown keys are kept in ``extra``."""

    policy: str | None = None  # policy spec, e.g. "heuristic:turns=3"
    toolset: str | None = None  # relace | fastcontext | …
    max_turns: int | None = None  # Limits.max_turns
    max_calls: int | None = None  # Limits.max_calls_per_turn
    report_contract: str = "free"  # Limits.report_contract
    reward: str = LAYOUT1_REWARD  # the headline: what the summary's `reward` column is
    shard: dict | None = None  # {index, count, tasks_before_sharding} of `fasbench eval --shard i/n`
    task_source: str | None = None  # the task set as asked for (provenance, not compared)
    corpus: str | None = None  # offline | online | … : the corpus kind the tasks were chosen on
    tasks: dict | None = None  # {n, key}: the tasks asked for (tasks_key)
    query_sources: dict | None = None  # what the explorers were given, with counts
    code_version: dict = field(default_factory=dict)
    created: str | None = None
    resumed_with: list = field(default_factory=list)  # code versions of later resumes
    calls: list = field(default_factory=list)  # each call's counts (ran, resumed, asked, at, …)
    layout: int = LAYOUT
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict, where: str = "run.json") -> RunMeta:
        """Validate a run.json mapping of the current layout (:func:`migrate` it first)."""
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if k not in _CHECKS:
                continue
            what, ok = _CHECKS[k]
            if v is None and k != "layout":
                continue
            if not ok(v):
                raise ValueError(f"{where}: field {k!r} must be {what}, got {json.dumps(v, default=str)[:80]}")
            kw[k] = v
        return cls(**kw, extra={k: v for k, v in d.items() if k not in _CHECKS})

    def to_dict(self) -> dict:
        d = asdict(self)
        return {**d.pop("extra"), **d}

    def config(self, shard: bool = True) -> dict:
        """What a resume must match (:data:`CONFIG`; without the shard for comparing shards of one run)."""
        return {k: getattr(self, k) for k in CONFIG if shard or k != "shard"}

    def last_call(self) -> dict:
        """The last call's counts (``ran``, ``resumed``, ``asked``, ``at``, ``resumed_since``, ``warnings``);
        {} for a run written before calls were recorded."""
        return self.calls[-1] if self.calls else {}

    def resume_note(self) -> str | None:
        """ "resumed: k of n episodes from an earlier run (date)" when the last call found episodes on
        disk, else None (every episode ran in that call)."""
        c = self.last_call()
        if not c.get("resumed"):
            return None
        when = str(c.get("resumed_since") or "")[:16].replace("T", " ")
        return f"resumed: {c['resumed']} of {c['resumed'] + c.get('ran', 0)} episodes from an earlier run" + (
            f" ({when})" if when else ""
        )

    def query_source_label(self) -> str | None:
        """One line for the runs table: the query sources with their counts; None when not recorded."""
        if not self.query_sources:
            return None
        return ", ".join(f"{k} {v}" for k, v in sorted(self.query_sources.items(), key=lambda kv: (-kv[1], kv[0])))

    def limits_label(self) -> str | None:
        """The budget: ``6 turns × 12 calls`` (None when not recorded)."""
        t, c = self.max_turns, self.max_calls
        ids = ", cites by ID" if self.report_contract == "ids" else ""  # fasbench.tools.contract
        return f"{t} turns × {c} calls{ids}" if t is not None and c is not None else None

    def describe(self) -> str | None:
        """``describe`` of the code version that wrote the run (None when not recorded)."""
        return self.code_version.get("describe") if isinstance(self.code_version.get("describe"), str) else None


def migrate(d: dict, shard_json: dict | None = None) -> dict:
    """A run.json mapping of any layout as the current layout (the module doc lists what changes);
    ``shard_json``: a layout-1 run's ``shard.json``. The input is not changed."""
    d = dict(d)
    layout = d.get("layout", 1)
    if not _int(layout) or not 1 <= layout <= LAYOUT:
        raise ValueError(f"run.json: field 'layout' must be an integer 1…{LAYOUT}, got {json.dumps(layout)[:40]}")
    if layout == 1:
        d.setdefault("report_contract", "free")
        d.setdefault("reward", LAYOUT1_REWARD)
        if shard_json is not None and d.get("shard") is None:
            d["shard"] = shard_json
        d["layout"] = 2
    return d


def read_run(out: str | Path) -> RunMeta:
    """``run.json`` of a run directory, migrated and validated (an empty layout-1 record for a run written
    before run.json; a FIFO, a bad file or a bad field: one-line ``ValueError``)."""
    f = Path(out) / "run.json"
    raw = read_json(f, want=dict) if f.exists() else {}
    s = Path(out) / "shard.json"
    shard = read_json(s, want=dict) if s.exists() and raw.get("layout", 1) == 1 else None
    return RunMeta.from_dict(migrate(raw, shard), str(f))


def write_run(out: str | Path, meta: RunMeta) -> None:
    """Write ``run.json`` atomically (a crash never leaves half a file)."""
    f = Path(out) / "run.json"
    tmp = f.with_name("run.json.tmp")
    tmp.write_text(json.dumps(meta.to_dict(), indent=1), encoding="utf-8")
    os.replace(tmp, f)


def params_key(params: Mapping) -> str:
    """A short key (8 hex digits) of a parameter mapping: equal parameters, equal key."""
    blob = json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def tasks_key(ids: Iterable[str]) -> str:
    """A key of a set of task ids (order does not matter)."""
    return hashlib.sha256("\n".join(sorted(set(ids))).encode()).hexdigest()[:12]


def run_name(prefix: str, params: Mapping) -> str:
    """A default run directory name: ``prefix`` (the notebook or command, e.g. ``03`` or ``eval-bm25``)
    and the key of every parameter that changes what the run holds (policy, tool set, task set with
    its split, corpus kind, limits, n, the task ids...), so two notebooks or two parameter sets never
    share a run directory: ``03-1a2b3c4d``."""
    slug = re.sub(r"[^\w.-]+", "-", str(prefix)).strip("-")[:100] or "run"
    return f"{slug}-{params_key(params)}"  # [\w.-] and a key: one path component, never . or ..


def _shard_text(s: dict | None) -> str:
    return f"shard {s['index']}/{s['count']} of {s['tasks_before_sharding']} tasks" if s else "no shard"


def open_run(out: Path, want: RunMeta, ids: Sequence[str] = (), done: Collection[str] = frozenset()) -> RunMeta:
    """Start a run directory with ``want`` (its configuration, task source and corpus; the tasks asked
    for — ``tasks``: their count and :func:`tasks_key` — code version and creation time are added), or
    check that a resume asks for the same configuration and the same tasks (one-line ``ValueError``
    otherwise: a run directory never mixes two requests; another headline reward is refused, as it would
    redefine the ``reward`` column). Provenance is not compared; a resume records what an older layout
    lacks and adds its code version to ``resumed_with`` when it differs. Returns the run.json written."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder (a run directory)")
    req = {"n": len(ids), "key": tasks_key(ids)}
    ver = code_version()
    if not (out / "run.json").exists():
        out.mkdir(parents=True, exist_ok=True)
        meta = replace(want, tasks=req, code_version=ver, created=timestamp(), layout=LAYOUT)
        write_run(out, meta)
        return meta
    old = read_run(out)
    if old.reward != want.reward:
        layout1 = "layout" not in read_json(out / "run.json", want=dict)
        raise ValueError(
            f"{out} holds a run whose headline reward is {old.reward}"
            + (" (its run.json, of an older layout, records none: the default then)" if layout1 else "")
            + f", not {want.reward}: --reward {want.reward} would redefine its `reward` column; every "
            f"reward is a column anyway (reward_{want.reward}); use another --out for another headline"
        )
    if old.shard != want.shard:
        raise ValueError(f"{out} holds {_shard_text(old.shard)}, not {_shard_text(want.shard)}; use another --out")
    a, b = old.config(), want.config()
    diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    if want.corpus and old.corpus and old.corpus != want.corpus:
        diff["corpus"] = (old.corpus, want.corpus)
    if diff:
        raise ValueError(
            f"{out} holds a run with another configuration {diff} (was, now); use another --out or delete it"
        )
    if old.tasks and old.tasks.get("key") != req["key"]:
        raise ValueError(
            f"{out} holds a run on other tasks ({old.tasks.get('n')} tasks, key {old.tasks.get('key')}; "
            f"now {req['n']} tasks, key {req['key']}); use another --out (or the default run name) "
            "or delete it"
        )
    extra = set(done) - set(ids)
    if not old.tasks and extra:  # a layout-1 run.json without the tasks key: its traces say what it holds
        raise ValueError(
            f"{out} holds traces of {len(extra)} tasks not asked for now (e.g. {sorted(extra)[0]}); "
            "use another --out (or the default run name) or delete it"
        )
    new = replace(
        old, task_source=old.task_source or want.task_source, corpus=old.corpus or want.corpus, tasks=old.tasks or req
    )
    if old.describe() != ver["describe"] and ver["describe"] not in old.resumed_with:
        new.resumed_with = [*old.resumed_with, ver["describe"]]
    write_run(out, new)  # a layout-1 run.json is rewritten as layout 2 on its first resume
    return new


def resume_note(out: str | Path) -> str | None:
    """:meth:`RunMeta.resume_note` of a run directory (for tables and findings)."""
    return read_run(out).resume_note()


def record_call(out: str | Path, call: dict | None, query_sources: dict | None = None) -> RunMeta:
    """Append one call's counts (when given) and set the run's query sources (when given) in ``run.json``."""
    meta = read_run(out)
    if call is not None:
        meta.calls = [*meta.calls, call]
    if query_sources is not None:
        meta.query_sources = query_sources
    write_run(out, meta)
    return meta


def check_config(out: Path, cfg) -> dict:
    """``run.json`` of a run directory of another kind (a dataclass ``cfg``, e.g. the e2e runner's: not
    a :class:`RunMeta`): written with the code version and creation time, or checked on a resume
    (one-line ``ValueError`` naming the keys that differ). Returns the mapping."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder (a run directory)")
    f = out / "run.json"
    if f.exists():
        old = read_json(f, want=dict)
        diff = {k: (old.get(k), v) for k, v in asdict(cfg).items() if old.get(k) != v}
        if diff:
            raise ValueError(
                f"{out} holds a run with another configuration {diff} (was, now); use another --out or delete it"
            )
        return old
    out.mkdir(parents=True, exist_ok=True)
    meta = {**asdict(cfg), "code_version": code_version(), "created": timestamp()}
    f.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def load_summary(out: str | Path, key: str = "task_id"):
    """A run's ``summary.parquet``, older layouts read as the current one (``acc_at_k`` columns as
    ``all_gold_at_k``; no ``failed`` column: the episodes whose ``stop_reason`` is ``policy_error``); one-line
    errors for a missing, unreadable or foreign file, or one without the ``key`` column its reader joins on
    (the replay joins on ``trace_id``)."""
    p = Path(out) / "summary.parquet"
    if not p.exists():
        raise FileNotFoundError(f"{p} not found; run `fasbench eval --out {out}` first")
    try:  # read through contain: a FIFO or a special file is refused, never waited on
        df = pl.read_parquet(read_regular(p, 1 << 30)[0])
    except Exception as e:  # polars raises its own error types for a truncated or foreign file
        raise ValueError(
            f"{p} is not a readable summary ({type(e).__name__}: {e}); it is rebuilt from "
            f"traces.jsonl by rerunning `fasbench eval --out {out}` with the same options"
        ) from None
    if key not in df.columns:
        raise ValueError(f"{p} has no {key} column; not a fasbench eval summary")
    # summaries written before the all-gold@k columns had their own name called them acc_at_k
    legacy = {c: "all_gold" + c[3:] for c in df.columns if re.fullmatch(r"acc_at_\d+", c)}
    df = df.rename({c: n for c, n in legacy.items() if n not in df.columns})
    if "failed" not in df.columns and "stop_reason" in df.columns:  # summaries written before `failed`
        df = df.with_columns((pl.col("stop_reason") == "policy_error").fill_null(False).alias("failed"))
    return df


assert set(_CHECKS) == {f.name for f in fields(RunMeta)} - {"extra"}
