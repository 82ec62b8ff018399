"""A subagent tree (issue 39, item 3): a main agent with two search episodes (real harness runs of the
scripted demo searches) nested under the calls that delegated to them, as rows, text, static HTML
(escaped) and a widget; written to ATIF v1.7 with the episodes embedded and read back with the same
tree; fasbench e2e's live layout (records.jsonl, trajs/, search_traces.jsonl) as a tree with its
hand-off; `trajectories export-atif` of an e2e run folder."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.records import append_jsonl
from fasbench.replay.demo import demo_episode, symbol_task
from fasbench.replay.subagent_tree import agent_tree, e2e_tree, tree_html, tree_rows, tree_text, with_episodes
from fasbench.replay.tree_widget import SubagentTree
from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.atif_tree import embedded_traces, tree_to_atif
from fasbench.trajectories.parsers import parse_file, trace_trajectory

KEYS = ("depth", "role", "via", "turn", "call", "turns", "calls", "tokens", "episode")


@pytest.fixture(scope="module")
def episodes():
    task = symbol_task("click", "BadParameter")
    return task, demo_episode(task, parallel=True), demo_episode(task, parallel=False)


def _tc(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def main_chat(query: str, agent: str = "scripted-main") -> dict:
    """A mini-swe-agent v2 tool-call trajectory of a main agent that delegates two searches with the
    `subagent` tool (FastContext's delegation tool) and reads and edits between them."""

    def asst(calls, usage):
        return {"role": "assistant", "content": "", "tool_calls": calls, "extra": {"response": {"usage": usage}}}

    u = lambda p, c: {"prompt_tokens": p, "completion_tokens": c}  # noqa: E731
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "click-BadParameter",
        "info": {"mini_version": agent, "submission": ""},
        "messages": [
            {"role": "system", "content": "You fix bugs."},
            {"role": "user", "content": query},
            asst([_tc("c1", "subagent", {"description": "find it", "prompt": query})], u(900, 40)),
            {"role": "tool", "tool_call_id": "c1", "content": "click/exceptions.py:1-40"},
            asst([_tc("c2", "bash", {"command": "sed -n 1,40p click/exceptions.py"})], u(1200, 30)),
            {"role": "tool", "tool_call_id": "c2", "content": "class BadParameter(UsageError):"},
            asst(
                [_tc("c3", "subagent", {"description": "find callers", "prompt": "Who raises BadParameter?"})],
                u(1900, 35),
            ),
            {"role": "tool", "tool_call_id": "c3", "content": "click/types.py"},
            asst([_tc("c4", "bash", {"command": "grep -n raise click/types.py"})], u(2300, 20)),
            {"role": "tool", "tool_call_id": "c4", "content": "12: raise"},
        ],
    }


@pytest.fixture
def tree(episodes, tmp_path):
    task, par, seq = episodes
    p = tmp_path / "main.traj.json"
    p.write_text(json.dumps(main_chat(task.query)))
    main = parse_file(p).trajectories[0]
    main, traces = with_episodes(main, delegated={(1, 0): par, (3, 0): seq})
    return main, traces, par, seq


def test_two_search_episodes_nest_under_their_calls(tree):
    main, traces, par, seq = tree
    rows = tree_rows(agent_tree(main, traces))
    assert [(r["depth"], r["turn"], r["call"], r["episode"]) for r in rows] == [
        (0, None, None, None),
        (1, 1, 0, par.trace_id),
        (1, 3, 0, seq.trace_id),
    ]
    assert (
        rows[0]["turns"] == 4
        and rows[0]["calls"] == 4
        and rows[0]["tokens"] == 900 + 40 + 1200 + 30 + 1900 + 35 + 2300 + 20
    )
    assert (rows[1]["turns"], rows[1]["calls"]) == (par.n_turns, par.n_calls) == (3, 7)
    assert (rows[2]["turns"], rows[2]["calls"]) == (seq.n_turns, seq.n_calls) == (7, 7)
    est = trace_trajectory(par)  # the scripted episode records no tokens: estimated, and marked so
    assert rows[1]["tokens"] == sum(t.prompt_tokens + t.completion_tokens for t in est.turns) > 0
    assert rows[1]["tokens_estimated"] and not rows[0]["tokens_estimated"]
    assert rows[1]["wall_s"] == pytest.approx(par.wall_time) and rows[1]["via"].startswith("subagent: find it")
    text = tree_text(agent_tree(main, traces))
    assert text.count("\n") == 2 and "└─ subagent" in text and "turn 3, call 1" in text


def test_the_static_tree_escapes_data_and_holds_each_episode(tree):
    main, traces, par, seq = tree
    main.agent = "<script>alert(1)</script>"
    h = tree_html(agent_tree(main, traces))
    assert "<script>" not in h and "&lt;script&gt;" in h
    w = SubagentTree(agent_tree(main, traces))
    static = w.static_html()
    assert static.count("fasbench-static-replay") == 2  # each episode's static replay under its node
    label = next(k for k, v in w.episodes.items() if v is seq)
    assert w.open(label).trace is seq and w.holder.children == (w.replay.widget,)
    assert "text/html" in w._repr_mimebundle_()


def test_the_tree_round_trips_through_atif(tree, tmp_path):
    main, traces, par, seq = tree
    doc = tree_to_atif(main, traces)
    assert doc["schema_version"] == "ATIF-v1.7" and len(doc["subagent_trajectories"]) == 2
    p = tmp_path / "tree.json"
    p.write_text(json.dumps(doc))
    back = parse_file(p)
    assert back.format == "atif" and len(back.trajectories) == 1
    got = tree_rows(agent_tree(back.trajectories[0], embedded_traces(doc)))
    want = tree_rows(agent_tree(main, traces))
    assert [{k: r[k] for k in KEYS} for r in got] == [{k: r[k] for k in KEYS} for r in want]
    assert [t.to_dict() for t in embedded_traces(doc).values()] == [par.to_dict(), seq.to_dict()]
    # and the analysis counts the delegated search both ways
    s = analyze_paths([p], progress=False).summary()
    assert s["overall"]["delegations"] == 2 and s["overall"]["with_subagents"]["calls"] == 4 + 7 + 7


def _e2e_folder(tmp_path, task, episode):
    out = tmp_path / "e2e"
    (out / "trajs" / "search").mkdir(parents=True)
    chat = main_chat(task.query)
    chat["messages"] = chat["messages"][:2] + chat["messages"][4:6]  # the hand-off replaced the first search
    (out / "trajs" / "search" / "t1.traj.json").write_text(json.dumps(chat))
    append_jsonl(out / "search_traces.jsonl", [episode])
    append_jsonl(
        out / "records.jsonl",
        [
            {
                "task_id": task.id,
                "arm": "search",
                "search_trace_id": episode.trace_id,
                "trajectory": "trajs/search/t1.traj.json",
            }
        ],
    )
    return out


def test_the_e2e_live_layout_is_a_tree_with_its_hand_off(episodes, tmp_path):
    task, par, _ = episodes
    out = _e2e_folder(tmp_path, task, par)
    rows = tree_rows(e2e_tree(out, task.id))
    assert [(r["depth"], r["turn"], r["via"], r["episode"]) for r in rows] == [
        (0, None, "", None),
        (1, 0, "hand-off in the task text", par.trace_id),
    ]
    r = CliRunner().invoke(app, ["trajectories", "export-atif", str(out), "--out", str(tmp_path / "atif")])
    assert r.exit_code == 0, r.output
    (f,) = (tmp_path / "atif").glob("*.json")
    doc = json.loads(f.read_text())
    back = tree_rows(agent_tree(parse_file(f).trajectories[0], embedded_traces(doc)))
    assert [{k: x[k] for k in KEYS} for x in back] == [{k: x[k] for k in KEYS} for x in rows]


def test_an_e2e_record_naming_a_path_outside_the_run_is_refused(episodes, tmp_path):
    task, par, _ = episodes
    out = _e2e_folder(tmp_path, task, par)
    (tmp_path / "outside.traj.json").write_text("{}")
    append_jsonl(out / "records.jsonl", [{"task_id": "x", "arm": "search", "trajectory": "../outside.traj.json"}])
    with pytest.raises(ValueError, match="does not read"):
        e2e_tree(out, "x")


def test_notebook_07s_scripted_main_agent_delegates_each_search(episodes):
    from fasbench.replay.demo import demo_main

    task, par, seq = episodes
    other = symbol_task("click", "echo")
    ep2 = demo_episode(other, parallel=True)
    main, traces = demo_main([task, other], [par, ep2])
    rows = tree_rows(agent_tree(main, traces))
    assert [(r["depth"], r["turn"], r["episode"]) for r in rows] == [
        (0, None, None),
        (1, 1, par.trace_id),
        (1, 3, ep2.trace_id),
    ]
    assert rows[0]["calls"] == 4 and rows[0]["tokens_estimated"]
    with pytest.raises(ValueError, match="one episode per task"):
        demo_main([task], [par, seq])


def tree_report(tmp_path):
    """A main agent delegating two searches (two Task calls, two episodes) in an executed notebook →
    fasbench.mainjob.report's page (returned): the static tree with each episode's static replay."""
    import nbformat
    from nbclient import NotebookClient

    from fasbench.mainjob.report import write_report

    src = (
        "import sys; sys.path.insert(0, %r)\n"
        % str(__import__("pathlib").Path(__file__).parent)
        + "from test_widgets import hand_trace\n"
        "from fasbench.trajectories.trajectory import AgentTurn, Call, Trajectory\n"
        "from fasbench.trajectories.parsers import trace_trajectory\n"
        "from fasbench.replay.subagent_tree import agent_tree\nfrom fasbench.replay.tree_widget import SubagentTree\n"
        "a, b = hand_trace(), hand_trace('q', 'task2')\n"
        "one = Call('Task', '{}', {'subagent_type': 'Explore <b>x</b>'}, trace_trajectory(a))\n"
        "two = Call('Task', '{}', {'subagent_type': 'Explore callers'}, trace_trajectory(b))\n"
        "main = Trajectory('m', 'i', 'main-agent', 'gpt', 'x', [AgentTurn(1, [one], 100, 10), AgentTurn(2, [two], 200, 5)])\n"
        "SubagentTree(agent_tree(main, {a.trace_id: a, b.trace_id: b}))"
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=180, kernel_name="python3", store_widget_state=True).execute()
    out = nb.cells[0].outputs[-1]["data"]
    assert "application/vnd.jupyter.widget-view+json" in out and "fasbench-static-tree" in out["text/html"]
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, tmp_path / "nb" / "01_tree.ipynb")
    return write_report(tmp_path / "nb", tmp_path / "report")


@pytest.mark.slow
def test_the_static_report_shows_the_tree(tmp_path):
    """The tree of a main agent with two search episodes in the static report: both nested under the main
    agent (escaped), each with its static replay, no widget view."""
    page = tree_report(tmp_path).read_text()
    assert "fasbench-static-tree" in page and "main-agent" in page and "2 turns · 2 calls · 315 tokens" in page
    assert "Task: Explore &lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page and "Task: Explore callers" in page
    tree = page[page.index("fasbench-static-tree") :]
    main_li = tree.index("main-agent")
    nested = [tree.index(f"replay of episode {t}") for t in ("trace-p-task1", "trace-q-task2")]
    assert main_li < nested[0] < nested[1]  # both under the main agent's node, in the order delegated
    assert tree[main_li : nested[0]].count("<ul>") == 1  # one level down
    assert page.count("fasbench-static-replay") >= 2
    assert page.count("Turn 1 / 3") >= 2  # each episode's static replay under its node


def test_fasbench_replay_of_an_e2e_run_prints_the_tree(episodes, tmp_path):
    task, par, _ = episodes
    out = _e2e_folder(tmp_path, task, par)
    r = CliRunner().invoke(app, ["replay", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("main mini-swe-agent scripted-main") and "└─ subagent" in r.output
    assert "before turn 1: hand-off in the task text" in r.output
    r = CliRunner().invoke(app, ["replay", str(out), task.id, "--html", str(tmp_path / "t.html")])
    assert r.exit_code == 0 and "fasbench-static-tree" in (tmp_path / "t.html").read_text()


def test_an_e2e_run_with_a_broken_line_still_shows_its_tree(episodes, tmp_path):
    """Red team of issue 36: a records.jsonl line that is no object and a search_traces.jsonl line that
    is no trace (turns a string) stopped the tree of every task (AttributeError); now they are passed
    over (the broken trace with a warning) and the task's tree is shown."""
    task, par, _ = episodes
    out = _e2e_folder(tmp_path, task, par)
    bad = dict(par.to_dict(), turns="not turns")
    (out / "records.jsonl").write_text("[1, 2]\n" + (out / "records.jsonl").read_text())
    (out / "search_traces.jsonl").write_text(json.dumps(bad) + "\n" + (out / "search_traces.jsonl").read_text())
    with pytest.warns(UserWarning, match="skipped"):
        rows = tree_rows(e2e_tree(out, task.id))
    assert [(r["depth"], r["episode"]) for r in rows] == [(0, None), (1, par.trace_id)]
