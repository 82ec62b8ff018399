"""Agent-trace-derived search tasks (Relace's data set (1)) from real mini-swe-agent trajectories.

For each trajectory: query = the SWE-bench problem statement; ``gold.edited`` = files changed by the
submitted diff (with ``hunk``/``changed`` ranges like PR gold; files the diff *creates* are left out,
since a searcher cannot find them, and listed in ``meta["created_files"]``); ``gold.viewed`` = files
the agent displayed or that appeared in its search output before its first edit of a submitted file.

The trajectory is read by ``fasbench.trajectories``: its calls by ``raw.read_actions``, the viewed
files and the first edit by ``viewed.viewing`` (displayed and searched files, paths by
``paths.agent_path``, the first edit by ``first_edit.edits_files``; the rules are written there).
Tasks with an empty submission (or one that only creates files) are dropped with a reason
(``dropped()``).
"""

from __future__ import annotations

from pathlib import Path

from fasbench.data import swebench
from fasbench.data.locations import find_data
from fasbench.data.patches import PatchError, gold_variants, parse_diff
from fasbench.records import Gold, Task
from fasbench.trajectories.raw import load_json, read_actions
from fasbench.trajectories.viewed import viewing

RUNS = {  # name -> (folder under data/trajectories or shared data, SWE-bench set)
    "gemini-3-pro": ("mini-swe-agent_gemini-3-pro_swebench-verified", "verified"),
    "deepseek-chat": ("mini-swe-agent-v2_deepseek-chat_swebench-lite-first100", "lite"),
}


def trajectory_dir(run: str) -> Path:
    """The folder of a shipped agent run (``RUNS``): ``trajs/`` and ``resolved.json.gz`` inside."""
    if run not in RUNS:
        raise ValueError(f"unknown agent run {run!r}; choose from {', '.join(RUNS)}")
    folder = RUNS[run][0]
    return find_data(f"trajectories/{folder}", folder)


# ---------------------------------------------------------------- tasks


def _swebench_index() -> dict[str, Task]:
    idx = {t.id: t for t in swebench.tasks("swebench-verified")}
    idx.update({t.id: t for t in swebench.tasks("swebench-lite")})
    return idx


def _build(run: str, traj: dict, ref: Task | None) -> tuple[Task | None, str]:
    iid = traj.get("instance_id")
    if ref is None:
        return None, "not-in-swebench"
    sub = (traj.get("info") or {}).get("submission") or ""
    if not sub.strip():
        return None, "empty-submission"
    try:
        files = parse_diff(sub)
    except PatchError:
        return None, "unparseable-submission"
    created = sorted(f.path for f in files if f.created)
    kept = [f for f in files if not f.created]
    if not kept:
        return None, "submission-only-creates-files"
    var = gold_variants(kept)
    actions = read_actions(traj)
    v = viewing(actions, set(var["hunk"]))
    viewed = v.displayed | v.searched
    if not viewed:
        return None, "nothing-viewed-before-first-edit"
    gold = Gold(
        edited={p: [list(r) for r in rs] for p, rs in var["hunk"].items()},
        viewed=viewed,
        source="agent-trace",
        variants=var,
    )
    meta = {
        "instance_id": iid,
        "agent_run": run,
        "patch": sub,
        "created_files": created,
        "viewed_displayed": sorted(v.displayed),
        "viewed_searched": sorted(v.searched),
        "first_edit_action": v.first_edit,
        "n_actions": v.n_actions,
        "search_dumps_skipped": v.dumps_skipped,
        "exit_status": (traj.get("info") or {}).get("exit_status"),
        "sets": ref.meta.get("sets", []),
    }
    return Task(
        id=f"{iid}@{run}",
        query=ref.query,
        repo=ref.repo,
        gold=gold,
        base_commit=ref.base_commit,
        version=ref.version,
        meta=meta,
    ), ""


def build(
    runs: tuple[str, ...] = tuple(RUNS), progress: bool = False, instances: set[str] | None = None
) -> tuple[list[Task], list[dict]]:
    """Agent-trace tasks of the given runs (only ``instances`` when given) and the dropped ones
    ``[{id, run, reason}]``."""
    idx = _swebench_index()
    # local import: tqdm.auto is heavy to import (asyncio, importlib.metadata), paid by every `fasbench`
    # command through the data CLI's imports
    from tqdm.auto import tqdm

    tasks, dropped = [], []
    for run in runs:
        d = trajectory_dir(run) / "trajs"
        files = sorted(d.glob("*.traj.json*"))
        if instances is not None:
            files = [f for f in files if f.name.split(".traj.json")[0] in instances]
        if not files:
            raise FileNotFoundError(f"no trajectories in {d}")
        for fn in tqdm(files, desc=run, disable=not progress):
            traj = load_json(fn)
            t, why = _build(run, traj, idx.get(traj.get("instance_id")))
            if t is None:
                dropped.append({"id": traj.get("instance_id"), "run": run, "reason": why})
            else:
                tasks.append(t)
    return tasks, dropped
