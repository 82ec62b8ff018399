"""The ids report contract (fasbench.tools.contract): shown ranges carry IDs, the answer names IDs,
fasbench renders the paths; an ungrounded citation cannot be rendered."""

import json
import re

import pytest
from tools_fixture import make_repo

from fasbench.evaluation.rundir import RunMeta, migrate, open_run
from fasbench.harness import Limits, run_episode
from fasbench.policies import ScriptedPolicy, make_policy
from fasbench.records import Gold, Reply, Report, Shown, Task, ToolCall, ToolResult
from fasbench.scoring.process import process_row
from fasbench.tools import TOOLSETS, answer_tool, calls_for, make_toolset, seen
from fasbench.tools.contract import IDS_HEADER, IdLedger, blocks, cite_ids, shown_ids, strip_ids


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("contract"))


def task(root):
    return Task(
        id="t",
        query="Login fails: check() in auth returns False",
        repo="local",
        root=str(root),
        gold=Gold(edited={"src/pkg/auth.py": [[4, 10]]}),
    )


def test_blocks_are_runs_of_consecutive_lines_of_ranges_and_hits():
    s = Shown(ranges={"a.py": [[1, 3], [4, 5]], "b.py": [[10, 12]]}, hits=[["a.py", 9], ["b.py", 13], ["c.py", 2]])
    assert blocks(s) == [("a.py", 1, 5), ("a.py", 9, 9), ("b.py", 10, 13), ("c.py", 2, 2)]


def test_ledger_numbers_reuses_and_renders_only_what_was_shown_before():
    led = IdLedger()
    r0 = ToolResult("c0", "text", shown=Shown(ranges={"a.py": [[10, 20]]}))
    err = ToolResult("c1", "Error: x", is_error=True, shown=Shown(ranges={"z.py": [[1, 2]]}))
    led.annotate(0, [r0, err])
    assert r0.output.endswith(f"\n{IDS_HEADER}\n[r1] a.py:10-20") and err.output == "Error: x"
    again = ToolResult("c2", "t", shown=Shown(ranges={"a.py": [[10, 20]]}, hits=[["b.py", 7]]))
    led.annotate(1, [again])
    assert again.output.endswith("[r1] a.py:10-20\n[r2] b.py:7")  # same range, same ID
    cites = [("r1", [[12, 15], [18, 30]]), ("[r1] a.py", [[40, 50]]), ("r9", []), ("a.py", [[1, 5]]), ("r2", [])]
    rep, rec = led.render(cites, 1, Report(explanation="why"))
    assert rep.files == {"a.py": [[12, 15], [18, 20]]} and rep.explanation == "why"
    # r1:40-50 wholly outside, r9 never shown, a path instead of an ID, r2 first shown in the answer's turn
    assert rec == {"cited": ["r1"], "dropped": ["r1:40-50", "r9", "a.py", "r2"], "clipped": 1}


def test_cite_ids_narrows_to_the_overlap_and_cites_a_whole_file_by_all_its_ids():
    ids = {"r1": ("a.py", 10, 20), "r2": ("a.py", 30, 40), "r3": ("b.py", 1, 5)}
    assert cite_ids({"a.py": [[5, 12], [30, 40]], "b.py": [], "c.py": [[1, 2]]}, ids) == {
        "r1": [[10, 12]],
        "r2": [],
        "r3": [],
    }


def test_parsers_read_the_tool_output_without_the_id_list():
    call = ToolCall("c", "grep_search", {"query": "Login"})
    text = "src/pkg/auth.py:4:def Login(user, password):"
    tagged = text + f"\n{IDS_HEADER}\n[r1] src/pkg/auth.py:4"
    assert strip_ids(tagged) == text and strip_ids(text + f"\n{IDS_HEADER}\nnot a tag") != text
    assert (
        seen("relace", call, ToolResult("c", tagged)).shown.to_dict()
        == seen("relace", call, ToolResult("c", text)).shown.to_dict()
    )
    assert shown_ids([{"role": "tool", "content": tagged}]) == {"r1": ("src/pkg/auth.py", 4, 4)}


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_heuristic_cites_by_id_and_cites_nothing_unshown(repo, toolset):
    t = task(repo)
    tr = run_episode(t, make_policy("heuristic"), toolset, Limits(max_turns=4, report_contract="ids"))
    assert tr.stop_reason == "reported" and tr.meta["report_contract"] == "ids"
    assert "Report contract: cite by ID." in tr.prompt[0]["content"]
    assert any(IDS_HEADER in r.output for turn in tr.turns for r in turn.results)
    assert tr.meta["citation"]["cited"] and not tr.meta["citation"]["dropped"]
    assert "src/pkg/auth.py" in tr.report.files
    if answer_tool(toolset):  # the answer names IDs, never paths
        keys = list(tr.turns[-1].calls[-1].arguments["files"])
    else:
        keys = [r.split()[0] for r in tr.turns[-1].text.splitlines()[1:-1] if not r.startswith("confidence")]
    assert keys and all(re.fullmatch(r"r\d+(:\d+-\d+)?", k) for k in keys)
    row = process_row(tr, t)
    assert row["cited_lines_unseen"] == 0 and row["cited_ids_dropped"] == 0 and row["cited_lines"] > 0
    free = run_episode(t, make_policy("heuristic"), toolset, Limits(max_turns=4))
    assert process_row(free, t)["cited_ids_dropped"] is None and "report_contract" not in free.meta


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_a_fabricated_citation_is_counted_under_free_and_impossible_under_ids(repo, toolset):
    c = calls_for(toolset)  # the tool set's own call shapes
    view = c.read("v", "src/pkg/auth.py", 1, 6)

    def answer(files, ids=False):
        return (c.report_ids if ids else c.report)("r", files, "e")

    t = task(repo)
    free = run_episode(t, ScriptedPolicy([Reply(calls=[view]), answer({"src/pkg/auth.py": [[1, 20]]})]), toolset)
    assert process_row(free, t)["cited_lines_unseen"] == 8  # lines 7-14 (the file ends there) were never shown
    ids = run_episode(
        t,
        ScriptedPolicy(
            [Reply(calls=[view]), answer({"r1": [[2, 20]], "r7": [], "src/pkg/auth.py": [[1, 20]]}, ids=True)]
        ),
        toolset,
        Limits(report_contract="ids"),
    )
    assert ids.report.files == {"src/pkg/auth.py": [[2, 6]]}
    assert ids.meta["citation"] == {"cited": ["r1"], "dropped": ["r7", "src/pkg/auth.py"], "clipped": 1}
    row = process_row(ids, t)
    assert row["cited_lines_unseen"] == 0 and row["cited_ids_dropped"] == 2


def test_bad_contract_is_one_line_and_run_json_records_it(tmp_path):
    with pytest.raises(ValueError, match="unknown report contract 'paths'; choose one of free, ids"):
        Limits(report_contract="paths")
    open_run(tmp_path, RunMeta("heuristic", report_contract="ids"))
    assert json.loads((tmp_path / "run.json").read_text())["report_contract"] == "ids"
    with pytest.raises(ValueError, match="another configuration"):
        open_run(tmp_path, RunMeta("heuristic"))
    old = tmp_path / "old"
    open_run(old, RunMeta("heuristic"))
    meta = json.loads((old / "run.json").read_text())
    del meta["report_contract"], meta["layout"]  # a layout-1 run.json, written before the key: free, and it resumes
    (old / "run.json").write_text(json.dumps(meta))
    open_run(old, RunMeta("heuristic"))


def test_rl_environment_renders_id_citations_as_run_episode_does(repo):
    from fasbench.rl.env import environment_class

    t = task(repo)
    lim = Limits(max_turns=4, max_calls_per_turn=4, report_contract="ids")
    replies = [
        Reply(
            "Reading.",
            [
                ToolCall("a", "view_file", {"path": "src/pkg/auth.py", "view_range": [1, 8]}),
                ToolCall("b", "grep_search", {"query": "def check"}),
            ],
        ),
        Reply(
            "Done.", [ToolCall("d", "report_back", {"explanation": "e", "files": {"r1": [[4, 6]], "r2": [], "r5": []}})]
        ),
    ]
    trace = run_episode(t, ScriptedPolicy(list(replies)), "relace", lim)
    env = environment_class("relace", lim)()
    env.reset(task=json.dumps(t.to_dict()))
    completion = []
    for r in replies:  # TRL's loop: generate (a new turn), run each call, append its tool message
        env._begin_turn()
        completion.append(
            {
                "role": "assistant",
                "content": r.text,
                "tool_calls": [
                    {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in r.calls
                ],
            }
        )
        completion += [
            {"role": "tool", "name": c.name, "content": getattr(env, c.name)(**c.arguments)} for c in r.calls
        ]
    ep = env._episode(completion)
    assert ep.report == trace.report and ep.report.files == {"src/pkg/auth.py": [[4, 6], [9, 9]]}
    assert ep.meta["citation"] == trace.meta["citation"] == {"cited": ["r1", "r2"], "dropped": ["r5"], "clipped": 0}
    assert [r.output for tt in ep.turns for r in tt.results] == [r.output for tt in trace.turns for r in tt.results]


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_sft_episodes_cite_by_id_and_examples_record_the_contract(repo, toolset):
    from fasbench.sft.data import BuildConfig, linerange_episode, trace_example

    t = task(repo)
    with pytest.raises(ValueError, match="unknown report contract"):
        BuildConfig(report_contract="path")
    for contract in ("free", "ids"):
        cfg = BuildConfig(toolset=toolset, report_contract=contract, linerange_context=2)
        tr = linerange_episode(t, cfg)
        assert tr.report.files == {"src/pkg/auth.py": [[4, 10]]}  # the gold ranges, rendered from IDs under ids
        assert (tr.meta.get("citation") or {}).get("dropped", []) == []
        ex = trace_example(tr, make_toolset(toolset, t.root).schemas, t, source="linerange")
        assert ex["report_contract"] == contract
        last = ex["messages"][-1]
        if answer_tool(toolset):  # the trained answer names IDs under ids, paths under free
            args = last["tool_calls"][0]["function"]["arguments"]
            keys = list((json.loads(args) if isinstance(args, str) else args)["files"])
        else:
            keys = [r.split()[0].split(":")[0] for r in last["content"].splitlines()[1:-1]]
        assert keys == (["r1"] if contract == "ids" else ["src/pkg/auth.py"])


def test_runs_of_the_two_contracts_are_not_repeats_of_one_policy():
    from fasbench.evaluation.runs import policy_key

    free, old = (
        {"policy": "heuristic", "max_turns": 6, "max_calls": 12, "report_contract": "free"},
        {"policy": "heuristic", "max_turns": 6, "max_calls": 12},
    )
    free, old, ids = (RunMeta.from_dict(migrate(d)) for d in (free, old, {**free, "report_contract": "ids"}))
    assert policy_key(free) == policy_key(old) != policy_key(ids)
    assert ids.limits_label() == "6 turns × 12 calls, cites by ID" and old.limits_label() == "6 turns × 12 calls"


@pytest.mark.parametrize("toolset", ["relace", "fastcontext"])
def test_the_benchmark_pairs_ids_beside_free_on_the_same_tasks(repo, toolset, tmp_path):
    """benchmarks/report_contract.py's pairing on two real eval runs of the heuristic (free and ids, all
    else equal) on the same tasks: the ids run's unseen cited share is 0, the file-level score of each is
    reported with the paired difference and its interval."""
    import importlib.util

    from fasbench.base.paths import repo_root
    from fasbench.evaluation.evaluate import run_eval

    spec = importlib.util.spec_from_file_location(
        "report_contract_bench", repo_root() / "benchmarks" / "report_contract.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    queries = ["Login fails: check() in auth returns False", "where is Login defined?", "the session token is wrong"]
    tasks = [
        Task(id=f"t{i}", query=q, repo="local", root=str(repo), gold=Gold(edited={"src/pkg/auth.py": [[4, 10]]}))
        for i, q in enumerate(queries)
    ]
    for c in ("free", "ids"):
        run_eval(
            tasks,
            "heuristic",
            toolset,
            tmp_path / c,
            limits=Limits(max_turns=4, report_contract=c),
            progress=False,
            warn=False,
        )
    row, free_tokens, ids_tokens = bench.pair(toolset, str(tmp_path / "free"), str(tmp_path / "ids"))
    assert row["n"] == 3 and row["unseen_ids"] == 0 and row["dropped_ids"] == 0
    assert 0 <= row["unseen_free"] <= 1 and 0 <= row["file_f2_ids"] <= 1 and 0 <= row["file_f2_free"] <= 1
    assert row["diff"] == pytest.approx(row["file_f2_ids"] - row["file_f2_free"])
    assert "lo" in row and "hi" in row  # the paired interval (sign-flip: none exists below 6 differing tasks)
    assert row["lo"] != row["lo"] or row["lo"] <= row["diff"] <= row["hi"]
    assert ids_tokens > 0 and free_tokens > 0
