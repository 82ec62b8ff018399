"""Gold definitions as data: importers that turn other benchmarks' files into fasbench Task JSONL.

``swe-explore``: SWE-Explore-Bench's benchmark JSONL (format documented in the README of
Last-Humans-Coding-Under-White-Nights/SWE-Explore-Bench): one instance a line,
``{"instance_id", "ground_truth": {"read_core_files", "read_core_regions": [{"path", "start",
"end"}], "read_optional_files_map": {model: [path]}, "read_optional_regions_map": {model: [region]},
"modified_core_files", "main_files"}, "problem_statement"?, "repo"?, "base_commit"?, ...}``.
The read-core regions become ``gold.explore`` (optional regions and files: the union over models,
as eval.py takes them). The benchmark's builder (``bench_build.py::build_instance_ground_truth`` at
ab8d6b857e57a914debb90e0e38827e4e2e3f010) writes a whole-file read (``cat F``, an editor view
without a range: ``end = -1``) as ``1..N``, N the file's length on its snapshot, and keeps the
unresolved read in ``read_step_info`` (``{path: [{"traj_path", "step_idx", "start", "end"}]}``).
A region ``[F, 1, N]`` is a whole-file read here when ``read_step_info`` records a read of F with
``end == -1`` from line 1 and no region of the record on F ends past N; it is written
``[F, 1, -1]`` (the whole file on any corpus version) with N kept in ``whole_files``.
``read_step_info`` is kept in ``meta["gold_import"]``, the record's ``test_patch`` in
``meta["test_patch"]`` (its hunks anchor regions in test files, data/relocate.py), and
``count_paths`` lists every path the record's regions name (eval_runner's line-count paths).
``meta["gold_import"]["gold_kind"]`` is the record's ``meta.gold_kind`` (fasbench's one-run files
say so, data/read_regions.py), else SWE-Explore's "read-core regions" (fasbench/studies/field.py compares
published numbers only on the same kind). An instance that is a SWE-bench Lite/Verified task takes that task's query,
repository, version, gold patch (hunk gold, entity gold on materialisation) and split; any other
needs ``problem_statement`` and a repository (``repo`` or an ``owner__name-N`` id) and is served
online at its ``base_commit``.

``locbench``: Loc-Bench-style entity lists, as LocAgent's ground-truth files write them: either
``file_changes: [{"file": path, "changes": {"edited_entities": ["path:Class.method"],
"edited_modules": ["path:Class"]}}]`` or a flat ``edit_functions: ["path:Class.method", ...]``
(Loc-Bench on the Hugging Face hub). Functions and modules become ``gold.entities`` (module =
``path:`` + the first name component when only functions are given, as LocAgent derives it).

``contextbench``: ContextBench's rows (parquet, JSONL or JSON list): fasbench/data/contextbench_tasks.py.
``swebench-pro``: SWE-bench Pro's public records (``fasbench.data.swebench_pro``): gold from the gold
patch at file and line level in every language, entity gold for Python files; corpora online only.

Records that cannot become a task are returned as dropped rows with a reason; line ranges are
placed on the corpus later, by ``fasbench.data.corpus.materialize`` (data/relocate.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from fasbench.base.paths import UnsafeName
from fasbench.data import swebench_tasks
from fasbench.data.contextbench_tasks import import_contextbench
from fasbench.data.corpus import checkout_names, root_dir, try_materialize
from fasbench.data.splits import assign
from fasbench.data.swebench_pro import tasks_from_records
from fasbench.records import Gold, RecordError, Task, fields, read_records

FORMATS = ("swe-explore", "locbench", "contextbench", "swebench-pro")
_ID = re.compile(r"^(?P<owner>[^_]+(?:_[^_]+)*)__(?P<name>.+)-(?P<num>\d+)$")


class InputFileError(ValueError):
    """The input file as a whole cannot be read; the message says why."""


def _records(path: str | Path) -> list:
    try:
        return read_records(path)
    except FileNotFoundError:
        raise InputFileError(f"{path} does not exist") from None
    except RecordError as e:
        raise InputFileError(str(e)) from e


def _repo_from_id(iid: str) -> str | None:
    m = _ID.match(iid)
    return f"{m['owner']}/{m['name']}" if m else None


def _region(r) -> list:
    """A SWE-Explore region ``{"path", "start", "end"}`` (or ``[path, start, end]``), checked at the
    boundary (fasbench.records.fields.region: integers, ordered, bounded; ``end -1`` to the end of file)."""
    if isinstance(r, dict):
        r = [r.get("path"), r.get("start"), r.get("end")]
    return fields.region(r, "region", tail=True)


def _mapping(v, where: str) -> dict:
    """An optional JSON object of the record (``{model: [...]}``); RecordError for any other type."""
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, list) for x in v.values()):
        raise RecordError(f"{where}: expected an object {{model: [...]}}, got {type(v).__name__}")
    return v


def _strings(v, where: str) -> list[str]:
    """An optional JSON list of strings of the record; RecordError for any other type."""
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise RecordError(f"{where}: expected a list of strings, got {fields.show(v)}")
    return v


def _base_task(rec: dict, known: dict[str, Task], gold_source: str) -> tuple[Task | None, str]:
    if not rec.get("instance_id"):
        return None, "no-instance-id"
    iid = fields.record_id(rec["instance_id"], "instance_id")
    if iid in known:
        t = known[iid]
        return Task(
            iid,
            t.query,
            t.repo,
            Gold(dict(t.gold.edited), None, t.gold.source, dict(t.gold.variants)),
            t.base_commit,
            t.version,
            None,
            t.split,
            dict(t.meta),
        ), ""
    query = rec.get("problem_statement") or rec.get("issue")
    if not query:
        return None, "no-query"
    repo = rec.get("repo") or _repo_from_id(iid)
    if not repo:
        return None, "no-repo"
    meta = {k: fields.text(rec[k], k) for k in ("repo_dir", "patch", "clone_url") if rec.get(k)}
    return Task(
        iid,
        fields.text(query, "problem_statement"),
        fields.repo_name(repo),
        Gold({}, None, gold_source),
        rec.get("base_commit") or None,
        rec.get("version") or None,
        None,
        None,
        meta,
    ), ""


def _whole_reads(regions: list[list], steps) -> dict[str, int]:
    """{path: N} of the regions ``[path, 1, N]`` that are whole-file reads (module doc)."""
    steps = steps if isinstance(steps, dict) else {}
    out: dict[str, int] = {}
    for p, s, e in regions:
        reads = steps.get(p) if isinstance(steps.get(p), list) else []
        if (
            s != 1
            or e < 1
            or not any(isinstance(x, dict) and x.get("end") == -1 and x.get("start") in (1, 0, None) for x in reads)
        ):
            continue
        if any(q == p and e2 > e for q, _, e2 in regions):
            continue  # a region of the record reaches past line e: the file is longer
        out[p] = max(out.get(p, 0), e)
    return out


def import_swe_explore(path: str | Path) -> tuple[list[Task], list[dict]]:
    known = swebench_tasks()

    def one(rec: dict, iid: str) -> tuple[Task | None, dict | None]:
        gt = rec.get("ground_truth")
        if not isinstance(gt, dict):
            return None, {"reason": "no-ground-truth"}
        try:
            core = [_region(r) for r in _list(gt.get("read_core_regions"), "read_core_regions")]
            opt = [
                _region(r)
                for regs in _mapping(gt.get("read_optional_regions_map"), "read_optional_regions_map").values()
                for r in regs
            ]
        except RecordError as e:
            return None, {"reason": "bad-region", "detail": str(e)[:300]}
        if not core:
            return None, {"reason": "empty-core"}  # eval_runner's --skip-empty-core default
        t, why = _base_task(rec, known, "swe-explore")
        if t is None:
            return None, {"reason": why}
        opt_files = sorted(
            {
                p
                for fs in _mapping(gt.get("read_optional_files_map"), "read_optional_files_map").values()
                for p in _strings(fs, "read_optional_files_map")
            }
        )
        steps = rec.get("read_step_info") if isinstance(rec.get("read_step_info"), dict) else {}
        whole = _whole_reads(core + opt, steps)

        def as_read(r: list) -> list:
            return [r[0], 1, -1] if r[1] == 1 and whole.get(r[0]) == r[2] else r

        modified = _strings(gt.get("modified_core_files"), "modified_core_files")
        t.gold.explore = {
            "core_files": _strings(gt.get("read_core_files"), "read_core_files"),
            "core_regions": [as_read(r) for r in core],
            "optional_files": opt_files,
            "optional_regions": [as_read(r) for r in opt],
            "modified_files": list(modified),
            "count_paths": sorted({r[0] for r in core + opt}),
            "whole_files": whole,
        }
        if not t.gold.edited:
            t.gold.edited = {p: [] for p in modified}
        if rec.get("test_patch") and not t.meta.get("test_patch"):
            t.meta["test_patch"] = fields.text(rec["test_patch"], "test_patch")
        meta = rec.get("meta") if isinstance(rec.get("meta"), dict) else {}
        t.meta["gold_import"] = {
            "format": "swe-explore",
            "file": str(path),
            "main_files": _strings(gt.get("main_files"), "main_files"),
            "read_step_info": steps,
            "gold_kind": str(meta.get("gold_kind") or "read-core regions"),
        }
        return t, None

    tasks, dropped = fields.each_record(_records(path), one)
    return assign(tasks), dropped


def _list(v, where: str) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        raise RecordError(f"{where}: expected a list, got {type(v).__name__}")
    return v


def import_locbench(path: str | Path) -> tuple[list[Task], list[dict]]:
    known = swebench_tasks()

    def one(rec: dict, iid: str) -> tuple[Task | None, dict | None]:
        funcs, mods, files = [], [], []
        for fc in _list(rec.get("file_changes"), "file_changes"):
            if not isinstance(fc, dict):
                raise RecordError(f"file_changes: expected objects, got {type(fc).__name__}")
            if fc.get("file") is not None:
                files.append(fields.path(fc["file"], "file_changes.file"))
            ch = fc.get("changes") if isinstance(fc.get("changes"), dict) else {}
            funcs += _strings(ch.get("edited_entities"), "edited_entities")
            mods += _strings(ch.get("edited_modules"), "edited_modules")
        funcs += _strings(rec.get("edit_functions"), "edit_functions")
        if not funcs and not files:
            return None, {"reason": "no-entities"}
        bad = [f for f in funcs if ":" not in f]
        if bad:
            return None, {"reason": "bad-entity", "detail": f"not path:Qual.name: {bad[0]!r}"[:300]}
        mods = mods or [f"{f.split(':', 1)[0]}:{f.split(':', 1)[1].split('.')[0]}" for f in funcs]
        files = [f for f in files if f] or [f.split(":", 1)[0] for f in funcs]
        t, why = _base_task(rec, known, "locbench")
        if t is None:
            return None, {"reason": why}
        t.gold.source = "locbench"
        if not t.gold.edited:
            t.gold.edited = {p: [] for p in dict.fromkeys(files)}
        t.gold.entities = {
            "file": list(dict.fromkeys(files)),
            "module": list(dict.fromkeys(mods)),
            "function": list(dict.fromkeys(funcs)),
        }
        t.meta["gold_import"] = {"format": "locbench", "file": str(path)}
        return t, None

    tasks, dropped = fields.each_record(_records(path), one)
    return assign(tasks), dropped


def usability(task: Task) -> dict[str, str]:
    """Whether ``task`` is usable offline (materialised on its picked sdist, downloading it when
    missing: ``usable``, with how its imported regions were placed, else the drop reason and detail) and online (the exact base commit: checked when its
    checkout is cached, else said to be unchecked)."""
    t, why = try_materialize(task, mode="offline")
    if t is not None:
        rel = t.meta.get("explore_relocation") or {}
        lost = rel.get("core_dropped") or []
        offline = "usable" + (
            f" ({len(lost)} core regions dropped, {100 * rel['core_lines_placed']:.1f}% of the core "
            f"lines placed: {', '.join(sorted({d['reason'] for d in lost}))})"
            if lost
            else ""
        )
        how = (t.meta.get("context_relocation") or {}).get("how") or {}
        if how:  # ContextBench's gold context: how its regions were placed
            offline += " (regions placed: " + ", ".join(f"{k} {n}" for k, n in sorted(how.items())) + ")"
    else:
        offline = f"{why['reason']}: {why['detail']}"
    try:
        checkout = checkout_names(task)[1] if task.base_commit else ""
    except UnsafeName as e:  # a repository or commit that cannot name a folder: said, not a traceback
        checkout = ""
        online = f"bad-task: {e}"
    if not task.base_commit:
        online = "no-base-commit"
    elif not checkout:
        pass
    elif (root_dir() / "worktrees" / checkout / ".git").is_dir():
        t, why = try_materialize(task, mode="online")
        online = "usable" if t is not None else f"{why['reason']}: {why['detail']}"
    else:
        online = (
            f"usable at the exact commit {task.base_commit[:12]} (gold as recorded; no checkout cached, not cloned)"
        )
    return {"offline": offline, "online": online}


def import_swebench_pro(path: str | Path) -> tuple[list[Task], list[dict]]:
    """SWE-bench Pro records (fasbench/data/swebench_pro.py) → tasks with the gold patch's gold."""
    return tasks_from_records(_records(path), path)


def import_gold(fmt: str, path: str | Path) -> tuple[list[Task], list[dict]]:
    if fmt not in FORMATS:
        raise InputFileError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return {
        "swe-explore": import_swe_explore,
        "locbench": import_locbench,
        "contextbench": import_contextbench,
        "swebench-pro": import_swebench_pro,
    }[fmt](path)


def check_usability(tasks: list[Task]) -> Iterator[str]:
    """``fasbench data import``'s check: per task, :func:`usability` recorded in ``meta["gold_import"]["usable"]``
    and one line ``ID<TAB>offline: …<TAB>online: …``."""
    for t in tasks:
        u = usability(t)
        t.meta.setdefault("gold_import", {})["usable"] = u
        yield f"{t.id}\toffline: {u['offline']}\tonline: {u['online']}"
