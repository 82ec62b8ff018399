"""Best-of-N stop signals: the self-confidence field of reports, the report verifier (real ripgrep on
a real tree), memoised tool calls, the token split and latency model, and the LLM judge selector
against a real local HTTP server process."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from servers import free_port, server, wait_http

from fasbench.bon.latency import LatencyModel, with_latency
from fasbench.bon.pool import MemoToolset, Pool, Rollout, build_pools, read_pools, token_split
from fasbench.bon.pool_judge import LLMJudge, llm_judge_selector
from fasbench.bon.verify import independent_search, probe, verify_report
from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.policies.dialect import final_answer_text
from fasbench.records import Gold, Report, Task, ToolCall, parse_confidence
from fasbench.tools import make_toolset
from fasbench.tools.fastcontext import parse_final_answer


@pytest.fixture
def task(tmp_path) -> Task:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "parser.py").write_text(
        "import re\n\n\ndef parse_header(line):\n    key, value = line.split(':')\n    return key.strip(), value\n"
    )
    (root / "pkg" / "util.py").write_text("def helper():\n    return parse_header('a:b')\n")
    (root / "README.md").write_text("A tiny package.\n")
    return Task(
        id="tiny-1",
        query="parse_header crashes with ValueError when the value contains ':'",
        repo="tiny/tiny",
        gold=Gold(edited={"pkg/parser.py": [[4, 6]]}),
        root=str(root),
        split="test",
    )


def test_parse_confidence():
    assert parse_confidence(0.7) == 0.7 and parse_confidence("0.25") == 0.25 and parse_confidence("80%") == 0.8
    assert parse_confidence(80) == 0.8  # a percentage written as a number
    for bad in (None, True, "high", -0.1, 250, float("nan"), [0.5]):
        assert parse_confidence(bad) is None
    r = Report.from_dict({"files": {"a.py": [[1, 2]]}, "explanation": "x", "confidence": "0.9"})
    assert r.confidence == 0.9 and Report.from_dict(r.to_dict()).confidence == 0.9
    assert "confidence" not in Report(files={}).to_dict()  # optional: absent stays absent


def test_report_tools_carry_confidence(task):
    ts = make_toolset("relace", task.root)
    # the schema the model sees stays Relace's published one (tests/test_published.py); a confidence a
    # policy adds anyway (the heuristic does) is accepted and parsed leniently
    assert "confidence" not in json.dumps(ts.schemas)
    call = ToolCall("c", "report_back", {"explanation": "e", "files": {"pkg/parser.py": [[4, 6]]}, "confidence": 0.6})
    assert ts.parse_report("", [call]).confidence == 0.6
    assert not ts.execute(call).is_error
    no = ToolCall("d", "report_back", {"explanation": "e", "files": {"pkg/parser.py": [[4, 6]]}, "confidence": "sure"})
    assert ts.parse_report("", [no]).confidence is None and ts.parse_report("", [no]).files  # report kept
    text = final_answer_text({"pkg/parser.py": [[4, 6]]}, "why", 0.35)
    rep = parse_final_answer(text)
    assert rep.confidence == 0.35 and rep.files == {"pkg/parser.py": [[4, 6]]}


def test_verifier_checks_against_the_tree(task):
    pr = probe(task)
    assert "parse_header" in pr.idents
    assert pr.independent[0] == "pkg/parser.py"  # one rg pass: the file defining the query's identifier
    assert independent_search(pr.root, [], []) == []
    good = verify_report(pr, {"pkg/parser.py": [[4, 6]]})
    assert good["pass"] == 1 and good["files"]["pkg/parser.py"] == [1, 1, 1, None, 1] and good["indep_recall"] == 1.0
    use = verify_report(pr, {"pkg/util.py": [[1, 2]]})  # mentions the identifier, defines nothing
    assert use["files"]["pkg/util.py"] == [1, 1, 0, None, 0] and use["pass"] == 0
    bad = verify_report(pr, {"pkg/missing.py": [[1, 5]], "pkg/parser.py": [[40, 50]]})
    assert bad["files"]["pkg/missing.py"][0] == 0 and bad["files"]["pkg/parser.py"][0] == 0 and bad["pass"] == 0
    assert good["score"] > use["score"] > bad["score"]
    assert verify_report(pr, None) == {"files": {}, "score": 0.0, "pass": 0, "indep_recall": 0.0}
    outside = verify_report(pr, {"../../etc/passwd": [[1, 2]]})
    assert outside["files"]["../../etc/passwd"][0] == 0  # never reads outside the root


def test_heuristic_pool_has_confidence_verifier_tokens_and_resumes(task, tmp_path):
    out = tmp_path / "pool.jsonl"
    make = lambda k: make_policy(f"heuristic:temperature=1.0,seed={k}")  # noqa: E731
    build_pools([task], make, "relace", 2, out, progress=False, traces_out=tmp_path / "tr.jsonl")
    build_pools([task], make, "relace", 3, out, progress=False)  # resumes: only seed 2 runs
    [pool] = read_pools(out)
    assert [r.seed for r in pool.rollouts] == [0, 1, 2]
    for r in pool.rollouts:
        assert r.confidence is not None and 0 <= r.confidence <= 1
        assert r.verify is not None and set(r.verify) == {"files", "score", "pass", "indep_recall"}
        assert r.prefill_tokens > 0 and r.decode_tokens > 0 and r.input_tokens >= r.prefill_tokens
    first = pool.rollouts[0]
    assert first.verify["files"]["pkg/parser.py"][3] == 1  # the report follows from the rollout's own grep hits


def test_memo_toolset_runs_each_distinct_call_once(task):
    inner = make_toolset("relace", task.root)
    n = {"calls": 0}
    real = inner.execute

    def counted(call):
        n["calls"] += 1
        return real(call)

    inner.execute = counted
    memo: dict = {}
    a = MemoToolset(inner, memo)
    c1 = ToolCall("x", "grep_search", {"query": "parse_header"})
    r1 = a.execute(c1)
    r2 = MemoToolset(inner, memo).execute(ToolCall("y", "grep_search", {"query": "parse_header"}))
    assert n["calls"] == 1 and r2.output == r1.output and r2.call_id == "y"
    assert r2.duration == pytest.approx(r1.duration)  # replayed with the time the first run measured
    a.execute(ToolCall("z", "grep_search", {"query": "helper"}))
    assert n["calls"] == 2
    tr = run_episode(task, make_policy("heuristic"), a, Limits(max_turns=3))  # the harness accepts it
    assert tr.report is not None


def test_token_split_and_latency_model(task):
    tr = run_episode(task, make_policy("heuristic"), "relace", Limits(max_turns=3))
    inp, pre, dec = token_split(tr)
    assert inp > pre > 0 and dec > 0
    for t in tr.turns:  # reported tokens win over the estimate
        t.prompt_tokens, t.completion_tokens = 100, 10
    inp, pre, dec = token_split(tr)
    n = len(tr.turns)
    assert inp == 100 * n and dec == 10 * n and pre == 100  # each later prompt only adds what is new (none here)
    r = Rollout(
        "t",
        0,
        0,
        {},
        0.0,
        0.0,
        9.0,
        turns=2,
        n_calls=1,
        tool_errors=0,
        tool_time=0.5,
        est_tokens=1.0,
        prefill_tokens=1000.0,
        decode_tokens=50.0,
    )
    m = LatencyModel(decode_tps=100, prefill_tps=1000, turn_overhead_s=0.1)
    assert m.latency(r) == pytest.approx(1.0 + 0.5 + 0.2 + 0.5)
    [p] = with_latency([Pool("t", Gold(edited={}), [r])], m)
    assert p.rollouts[0].latency == pytest.approx(2.2) and r.latency == 9.0  # a copy; the measured time stays
    with pytest.raises(ValueError, match="token split"):
        m.latency(Rollout("t", 1, 1, {}, 0.0, 0.0, 1.0, 1, 1, 0, 0.1, 1.0))
    with pytest.raises(ValueError):
        LatencyModel(decode_tps=0)


JUDGE_SERVER = textwrap.dedent("""
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            user = body["messages"][-1]["content"]
            n = user.count("## Candidate ")
            if body["model"] == "garbled":
                content = "I think the second one, probably."
            else:  # a judge that prefers the candidate whose code shows the definition
                best = next(i for i in range(n) if "def parse_header" in user.split(f"## Candidate {i}")[1].split("## Candidate")[0])
                content = "Verdict: " + json.dumps({"best": best, "scores": [0.9 if i == best else 0.2 for i in range(n)]})
            out = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                              "usage": {"prompt_tokens": 50, "completion_tokens": 9}})
            self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
            self.wfile.write(out.encode())
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def test_llm_judge_selector_through_a_real_http_server(task, tmp_path):
    port = free_port()
    script = tmp_path / "judge_server.py"
    script.write_text(JUDGE_SERVER)
    rs = [
        Rollout(task.id, 0, 0, {"pkg/util.py": [[1, 2]]}, 0.0, 0.0, 1.0, 1, 1, 0, 0.1, 1.0),
        Rollout(task.id, 1, 1, {"pkg/parser.py": [[4, 6]]}, 1.0, 1.0, 1.0, 1, 1, 0, 0.1, 1.0),
        Rollout(task.id, 2, 2, {"pkg/util.py": [[1, 2]]}, 0.0, 0.0, 1.0, 1, 1, 0, 0.1, 1.0),
    ]
    with server([sys.executable, str(script), str(port)], tmp_path / "judge.log") as proc:
        wait_http(f"http://127.0.0.1:{port}/", proc, 30)
        sel, judge = llm_judge_selector(f"model=judge,base_url=http://127.0.0.1:{port}/v1,retries=0", [task])
        s = sel(rs)
        assert s.files == {"pkg/parser.py": [[4, 6]]} and s.chosen == 1  # the minority answer, on its code
        assert s.margin == pytest.approx(0.7)
        sel(rs)
        assert judge.calls == 1  # a state is judged once
        assert sel(rs[:1]).chosen == 0 and judge.calls == 1  # one candidate needs no judge
        bad, bj = llm_judge_selector(f"model=garbled,base_url=http://127.0.0.1:{port}/v1,retries=0", [task])
        s = bad(rs)
        assert bj.failures == 1 and s.chosen == 0  # unparsable verdict: medoid scores, counted
    j = LLMJudge(judge.client, {task.id: task})
    assert j.parse('{"best": 2}', 3) == [0.0, 0.0, 1.0] and j.parse('{"best": 5}', 3) is None
    assert j.parse("no json", 3) is None and j.parse('{"scores": [0.1, 0.2]}', 3) is None
    with pytest.raises(ValueError, match="no task"):
        LLMJudge(judge.client, {}).prompt(rs)
