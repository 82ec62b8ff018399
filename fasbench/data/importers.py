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
say so, data/read_regions.py), else SWE-Explore's "read-core regions" (fasbench/field.py compares
published numbers only on the same kind). An instance that is a SWE-bench Lite/Verified task takes that task's query,
repository, version, gold patch (hunk gold, entity gold on materialisation) and split; any other
needs ``problem_statement`` and a repository (``repo`` or an ``owner__name-N`` id) and is served
online at its ``base_commit``.

``locbench``: Loc-Bench-style entity lists, as LocAgent's ground-truth files write them: either
``file_changes: [{"file": path, "changes": {"edited_entities": ["path:Class.method"],
"edited_modules": ["path:Class"]}}]`` or a flat ``edit_functions: ["path:Class.method", ...]``
(Loc-Bench on the Hugging Face hub). Functions and modules become ``gold.entities`` (module =
``path:`` + the first name component when only functions are given, as LocAgent derives it).

``contextbench``: ContextBench's rows (parquet, JSONL or JSON list): fasbench/data/contextbench.py.
``swebench-pro``: SWE-bench Pro's public records (``fasbench.data.swebench_pro``): gold from the gold
patch at file and line level in every language, entity gold for Python files; corpora online only.

Records that cannot become a task are returned as dropped rows with a reason; line ranges are
placed on the corpus later, by ``fasbench.data.corpus.materialize`` (data/relocate.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fasbench.data import swebench_tasks
from fasbench.data.corpus import checkout_names, root_dir, try_materialize
from fasbench.data.contextbench import import_contextbench
from fasbench.data.splits import assign
from fasbench.data.swebench_pro import tasks_from_records
from fasbench.paths import UnsafeName
from fasbench.records import Gold, Task, iter_jsonl

FORMATS = ("swe-explore", "locbench", "contextbench", "swebench-pro")
_ID = re.compile(r"^(?P<owner>[^_]+(?:_[^_]+)*)__(?P<name>.+)-(?P<num>\d+)$")


class ImportError_(ValueError):
    """The input file as a whole cannot be read; the message says why."""


def _records(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.is_file():
        raise ImportError_(f"{p} does not exist")
    text = p.read_text(encoding="utf-8") if p.suffix != ".gz" else None
    if text is not None and text.lstrip().startswith("["):
        data = json.loads(text)
        if not isinstance(data, list):
            raise ImportError_(f"{p}: expected a JSON list or JSONL of objects")
        return data
    try:
        return list(iter_jsonl(p))
    except ValueError as e:
        raise ImportError_(str(e)) from e



def _repo_from_id(iid: str) -> str | None:
    m = _ID.match(iid)
    return f"{m['owner']}/{m['name']}" if m else None


def _region(r) -> list:
    if isinstance(r, dict):
        return [str(r["path"]), int(r["start"]), int(r["end"])]
    return [str(r[0]), int(r[1]), int(r[2])]


def _base_task(rec: dict, known: dict[str, Task], gold_source: str) -> tuple[Task | None, str]:
    iid = str(rec.get("instance_id") or "")
    if not iid:
        return None, "no-instance-id"
    if iid in known:
        t = known[iid]
        return Task(iid, t.query, t.repo, Gold(dict(t.gold.edited), None, t.gold.source, dict(t.gold.variants)),
                    t.base_commit, t.version, None, t.split, dict(t.meta)), ""
    query = rec.get("problem_statement") or rec.get("issue")
    if not query:
        return None, "no-query"
    repo = rec.get("repo") or _repo_from_id(iid)
    if not repo:
        return None, "no-repo"
    meta = {k: rec[k] for k in ("repo_dir", "patch", "clone_url") if rec.get(k)}
    return Task(iid, str(query), str(repo), Gold({}, None, gold_source), rec.get("base_commit"),
                rec.get("version"), None, None, meta), ""


def _whole_reads(regions: list[list], steps) -> dict[str, int]:
    """{path: N} of the regions ``[path, 1, N]`` that are whole-file reads (module doc)."""
    steps = steps if isinstance(steps, dict) else {}
    out: dict[str, int] = {}
    for p, s, e in regions:
        reads = steps.get(p) if isinstance(steps.get(p), list) else []
        if s != 1 or e < 1 or not any(isinstance(x, dict) and x.get("end") == -1 and x.get("start") in (1, 0, None)
                                      for x in reads):
            continue
        if any(q == p and e2 > e for q, _, e2 in regions):
            continue  # a region of the record reaches past line e: the file is longer
        out[p] = max(out.get(p, 0), e)
    return out


def import_swe_explore(path: str | Path) -> tuple[list[Task], list[dict]]:
    known = swebench_tasks()
    tasks, dropped = [], []
    for i, rec in enumerate(_records(path)):
        gt = rec.get("ground_truth") if isinstance(rec, dict) else None
        iid = rec.get("instance_id", f"record {i + 1}") if isinstance(rec, dict) else f"record {i + 1}"
        if not isinstance(gt, dict):
            dropped.append({"id": iid, "reason": "no-ground-truth"})
            continue
        try:
            core = [_region(r) for r in gt.get("read_core_regions") or []]
            opt = [_region(r) for regs in (gt.get("read_optional_regions_map") or {}).values() for r in regs]
        except (KeyError, TypeError, ValueError) as e:
            dropped.append({"id": iid, "reason": "bad-region", "detail": str(e)})
            continue
        if not core:
            dropped.append({"id": iid, "reason": "empty-core"})  # eval_runner's --skip-empty-core default
            continue
        t, why = _base_task(rec, known, "swe-explore")
        if t is None:
            dropped.append({"id": iid, "reason": why})
            continue
        opt_files = sorted({p for fs in (gt.get("read_optional_files_map") or {}).values() for p in fs})
        steps = rec.get("read_step_info") if isinstance(rec.get("read_step_info"), dict) else {}
        whole = _whole_reads(core + opt, steps)

        def as_read(r: list) -> list:
            return [r[0], 1, -1] if r[1] == 1 and whole.get(r[0]) == r[2] else r

        t.gold.explore = {"core_files": list(gt.get("read_core_files") or []), "core_regions": [as_read(r) for r in core],
                          "optional_files": opt_files, "optional_regions": [as_read(r) for r in opt],
                          "modified_files": list(gt.get("modified_core_files") or []),
                          "count_paths": sorted({r[0] for r in core + opt}), "whole_files": whole}
        if not t.gold.edited:
            t.gold.edited = {p: [] for p in gt.get("modified_core_files") or []}
        if rec.get("test_patch") and not t.meta.get("test_patch"):
            t.meta["test_patch"] = str(rec["test_patch"])
        t.meta["gold_import"] = {"format": "swe-explore", "file": str(path), "main_files": gt.get("main_files") or [],
                                 "read_step_info": steps,
                                 "gold_kind": str((rec.get("meta") or {}).get("gold_kind") or "read-core regions")}
        tasks.append(t)
    return assign(tasks), dropped


def import_locbench(path: str | Path) -> tuple[list[Task], list[dict]]:
    known = swebench_tasks()
    tasks, dropped = [], []
    for i, rec in enumerate(_records(path)):
        iid = rec.get("instance_id", f"record {i + 1}") if isinstance(rec, dict) else f"record {i + 1}"
        funcs, mods, files = [], [], []
        for fc in rec.get("file_changes") or []:
            files.append(fc.get("file"))
            ch = fc.get("changes") or {}
            funcs += ch.get("edited_entities") or []
            mods += ch.get("edited_modules") or []
        funcs += rec.get("edit_functions") or []
        if not funcs and not files:
            dropped.append({"id": iid, "reason": "no-entities"})
            continue
        bad = [f for f in funcs if ":" not in f]
        if bad:
            dropped.append({"id": iid, "reason": "bad-entity", "detail": f"not path:Qual.name: {bad[0]!r}"})
            continue
        mods = mods or [f"{f.split(':', 1)[0]}:{f.split(':', 1)[1].split('.')[0]}" for f in funcs]
        files = [f for f in files if f] or [f.split(":", 1)[0] for f in funcs]
        t, why = _base_task(rec, known, "locbench")
        if t is None:
            dropped.append({"id": iid, "reason": why})
            continue
        t.gold.source = "locbench"
        if not t.gold.edited:
            t.gold.edited = {p: [] for p in dict.fromkeys(files)}
        t.gold.entities = {"file": list(dict.fromkeys(files)), "module": list(dict.fromkeys(mods)),
                           "function": list(dict.fromkeys(funcs))}
        t.meta["gold_import"] = {"format": "locbench", "file": str(path)}
        tasks.append(t)
    return assign(tasks), dropped


def usability(task: Task) -> dict[str, str]:
    """Whether ``task`` is usable offline (materialised on its picked sdist, downloading it when
    missing: ``usable``, with how its imported regions were placed, else the drop reason and detail) and online (the exact base commit: checked when its
    checkout is cached, else said to be unchecked)."""
    t, why = try_materialize(task, mode="offline")
    if t is not None:
        rel = t.meta.get("explore_relocation") or {}
        lost = rel.get("core_dropped") or []
        offline = "usable" + (f" ({len(lost)} core regions dropped, {100 * rel['core_lines_placed']:.1f}% of the core "
                              f"lines placed: {', '.join(sorted({d['reason'] for d in lost}))})" if lost else "")
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
        online = f"usable at the exact commit {task.base_commit[:12]} (gold as recorded; no checkout cached, not cloned)"
    return {"offline": offline, "online": online}


def import_swebench_pro(path: str | Path) -> tuple[list[Task], list[dict]]:
    """SWE-bench Pro records (fasbench/data/swebench_pro.py) → tasks with the gold patch's gold."""
    return tasks_from_records(_records(path), path)


def import_gold(fmt: str, path: str | Path) -> tuple[list[Task], list[dict]]:
    if fmt not in FORMATS:
        raise ImportError_(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return {"swe-explore": import_swe_explore, "locbench": import_locbench, "contextbench": import_contextbench,
            "swebench-pro": import_swebench_pro}[fmt](path)
