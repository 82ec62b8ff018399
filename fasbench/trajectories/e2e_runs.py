"""fasbench e2e's live run folder read as trajectories: :func:`with_episodes` (a main agent's trajectory with
fasbench search episodes nested in it) and :func:`e2e_main`, the ``search`` arm's main agent of a
task (its mini-swe-agent trajectory, the path its record names read only inside the run folder through
:mod:`fasbench.base.contain`) with the search episode handed off to it. The replay's subagent tree
(:func:`fasbench.replay.subagent_tree.e2e_tree`) and ``fasbench trajectories export-atif`` of an e2e run read it
here, below both."""

from __future__ import annotations

from pathlib import Path

from fasbench.base import contain
from fasbench.records import Trace, iter_jsonl, iter_traces
from fasbench.trajectories.parsers import parse_file, trace_trajectory
from fasbench.trajectories.trajectory import Trajectory


def with_episodes(
    main: Trajectory, handoffs: list[Trace] = (), delegated: dict[tuple[int, int], Trace] | None = None
) -> tuple[Trajectory, dict[str, Trace]]:
    """``main`` with fasbench search episodes nested: ``handoffs`` before its first turn, ``delegated``
    under the call at (turn index, call index); and the episodes by trajectory id (for
    :func:`agent_tree`). Raises ValueError naming a (turn, call) the trajectory does not have."""
    traces: dict[str, Trace] = {}
    for tr in handoffs:
        main.handed_off.append(trace_trajectory(tr))
        traces[tr.trace_id] = tr
    turns = {t.index: t for t in main.turns}
    for (ti, ci), tr in (delegated or {}).items():
        if ti not in turns or not 0 <= ci < len(turns[ti].calls):
            raise ValueError(
                f"trajectory {main.trajectory_id} has no call {ci} in turn {ti} to nest episode {tr.trace_id} under"
            )
        turns[ti].calls[ci].subagent = trace_trajectory(tr)
        traces[tr.trace_id] = tr
    return main, traces


def e2e_main(out: str | Path, task_id: str) -> tuple[Trajectory, dict[str, Trace]]:
    """:func:`fasbench.replay.subagent_tree.e2e_tree`'s main agent with its hand-off nested, and the episodes by trajectory id."""
    out = Path(out)
    rec = (
        next(
            (
                r
                for r in iter_jsonl(out / "records.jsonl")  # a line that is no object names no task
                if isinstance(r, dict) and r.get("task_id") == task_id and r.get("arm") == "search"
            ),
            None,
        )
        if (out / "records.jsonl").is_file()
        else None
    )
    if rec is None:
        raise ValueError(f"{out}: no record of task {task_id!r} in the search arm (records.jsonl)")
    if not isinstance(rec.get("trajectory"), str):
        raise ValueError(f"{out}: the record of {task_id!r} names no trajectory file")
    try:  # a path from the data: inside the run folder, a regular file (checked by opening it there)
        path = contain.real_path(out, rec["trajectory"])
        contain.open_file(out, rec["trajectory"]).close()
    except contain.PathRefused as e:
        raise ValueError(f"{out}: the record of {task_id!r} names a trajectory fasbench does not read: {e}") from e
    main = parse_file(path).trajectories[0]
    sid = rec.get("search_trace_id")
    traces = (
        [
            tr
            for tr in iter_traces(out / "search_traces.jsonl")  # a line that is no trace: skipped, said
            if tr.trace_id == sid
        ]
        if (out / "search_traces.jsonl").is_file()
        else []
    )
    return with_episodes(main, traces[:1])
