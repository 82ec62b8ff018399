"""Demo episodes for the replay: a search task on an installed package (:func:`symbol_task`) and a
scripted search for it, batched in parallel or one call per turn (:func:`demo_episode`), run through
the real harness. The scripted turns are data: ``data/demo/scripted_search.json`` (see its SOURCE.md)."""

from __future__ import annotations

import importlib
import inspect
import json
import re
from functools import lru_cache
from pathlib import Path

from fasbench.base.paths import cache_dir, child, data_dir, name_key
from fasbench.harness import Limits, run_episode
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.records import Gold, Task, Trace
from fasbench.trajectories.e2e_runs import with_episodes
from fasbench.trajectories.parsers import parse_file

SCRIPT = Path("demo") / "scripted_search.json"  # under data/
MAIN_SCRIPT = Path("demo") / "scripted_main.json"  # under data/
_WHOLE = re.compile(r"^\{(\w+)\}$")


def symbol_task(package: str, symbol: str) -> Task:
    """A search task on an installed pure-Python package: find where ``package.symbol`` is
    defined; gold = the lines of its definition (from ``inspect``), corpus = the package folder."""
    mod = importlib.import_module(package)
    if not getattr(mod, "__file__", None):
        raise ValueError(f"package {package!r} has no source folder")
    root = Path(mod.__file__).parent
    if not hasattr(mod, symbol):
        raise ValueError(f"{package} has no attribute {symbol!r}")
    obj = inspect.unwrap(getattr(mod, symbol))
    src = Path(inspect.getsourcefile(obj)).resolve()
    try:
        rel = src.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ValueError(f"{package}.{symbol} is defined outside {root} ({src})") from None
    lines, start = inspect.getsourcelines(obj)
    gold = [start, start + len(lines) - 1]
    return Task(
        id=f"{package}-{symbol}",
        query=f"Where is {symbol} defined in {package}, and what does it do?",
        repo=package,
        root=str(root),
        gold=Gold(edited={rel: [gold]}, source="manual"),
    )


@lru_cache(maxsize=2)
def _script(name: Path = SCRIPT) -> dict:
    """One of the demo scripts under data/ (``SCRIPT``, ``MAIN_SCRIPT``)."""
    return json.loads((data_dir() / name).read_text())


def _fill(x, values: dict):
    """The template ``x`` with its ``{name}`` fields filled; a string that is one field alone
    becomes the value itself (a line number stays a number)."""
    if isinstance(x, str):
        m = _WHOLE.match(x)
        return values[m.group(1)] if m else x.format(**values)
    if isinstance(x, list):
        return [_fill(v, values) for v in x]
    if isinstance(x, dict):
        return {_fill(k, values): _fill(v, values) for k, v in x.items()}
    return x


def demo_turns(task: Task, toolset: str = "relace", parallel: bool = True) -> list[dict]:
    """The scripted search for the symbol of a :func:`symbol_task`: two searches, a directory
    listing and a first look at the file, then a read around the definition and a search for
    imports, then the report. ``parallel=True`` batches them (3 turns); ``False`` makes one call
    per turn (7 turns): the same work, the same answer, different latency."""
    script = _script()
    if toolset not in script["toolsets"]:
        raise ValueError(f"unknown tool set {toolset!r}; choose {' or '.join(script['toolsets'])}")
    ((path, ranges),) = task.gold.edited.items()
    a, b = ranges[0]
    values = {
        "symbol": task.id.split("-", 1)[1],
        "path": path,
        "a": a,
        "b": b,
        "lo": max(1, a - 5),
        "hi": b + 5,
        "limit": b - a + 11,
    }
    ts = _fill(script["toolsets"][toolset], values)
    if parallel:
        texts = _fill(script["texts"]["parallel"], values)
        return [{"text": t, "calls": calls} for t, calls in zip(texts, ts["batches"])] + [ts["report"]]
    calls = [c for batch in ts["batches"] for c in batch]
    step = script["texts"]["sequential"]
    return [{"text": step.format(step=i + 1, name=c["name"]), "calls": [c]} for i, c in enumerate(calls)] + [
        ts["report"]
    ]


def demo_episode(task: Task, toolset: str = "relace", parallel: bool = True) -> Trace:
    """Run the scripted search of :func:`demo_turns` through the real harness."""
    turns = demo_turns(task, toolset, parallel)
    policy = ScriptedPolicy(turns, name=f"scripted-{'parallel' if parallel else 'sequential'}")
    return run_episode(task, policy, toolset, Limits(max_turns=len(turns) + 1))


def demo_main(tasks: list[Task], episodes: list[Trace]):
    """A scripted main agent (turns in ``data/demo/scripted_main.json``) that delegates one search per
    task with the ``subagent`` tool, each answered by the episode of the same position in ``episodes``,
    and reads what it found: (its ``Trajectory`` with the episodes nested under the delegating calls,
    the episodes by trajectory id), for :func:`fasbench.replay.subagent_tree.agent_tree`. The chat is written to
    the cache and read by the trajectory reader, as any main agent's file is."""
    if len(tasks) != len(episodes) or not tasks:
        raise ValueError(f"demo_main needs one episode per task (got {len(tasks)} tasks, {len(episodes)} episodes)")
    script = _script(MAIN_SCRIPT)
    package = tasks[0].repo
    msgs = [
        {"role": "system", "content": script["system"]},
        {"role": "user", "content": script["user"].format(package=package, query=" ".join(t.query for t in tasks))},
    ]
    for n, (task, ep) in enumerate(zip(tasks, episodes), 1):
        ((path, ranges),) = task.gold.edited.items()
        a, b = ranges[0]
        values = {
            "symbol": task.id.split("-", 1)[1],
            "path": path,
            "a": a,
            "b": b,
            "n": n,
            "package": package,
            "episode": ep.trace_id,
        }
        msgs += _fill(script["per_task"], values)
    msgs.append({"role": "assistant", "content": script["final"]})
    f = child(cache_dir("demo"), name_key("scripted-main-" + "-".join(t.id for t in tasks)), ".traj.json", "demo")
    f.write_text(
        json.dumps(
            {
                "trajectory_format": "mini-swe-agent-1.1",
                "instance_id": tasks[0].id,
                "info": {"mini_version": "scripted-main"},
                "messages": msgs,
            }
        )
    )
    main = parse_file(f).trajectories[0]
    calls = [(t.index, k) for t in main.turns for k, c in enumerate(t.calls) if c.tool == "subagent"]
    return with_episodes(main, delegated=dict(zip(calls, episodes)))
