"""FastContext's released reward with its LLM judge, against a real local OpenAI-compatible HTTP
server (a separate process) that answers as a judge: the reward cases of the release, what the judge
is sent (the released prompt, the query, the *contents* of the cited lines), reply parsing, the
on-disk cache, concurrent calls, and `fasbench score --reward fastcontext --judge openai:…`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
from servers import free_port, server, wait_http
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.records import Gold, Report, Task, Trace
from fasbench.scoring.judge import (
    JUDGE_PROMPT,
    citation_contents,
    judge_messages,
    make_judge,
    parse_judge_result,
    query_message,
)
from fasbench.scoring.reward import episode_finish_reason, score_report

JUDGE_SERVER = textwrap.dedent("""
    import json, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    state = {"n": 0, "inflight": 0, "max_inflight": 0, "last": None}
    lock = threading.Lock()
    def reply(text):
        return {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def _send(self, code, obj):
            out = json.dumps(obj).encode()
            self.send_response(code); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
        def do_GET(self):
            with lock:
                self._send(200, {k: state[k] for k in ("n", "max_inflight", "last")})
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state["n"] += 1; state["inflight"] += 1; state["last"] = body
                state["max_inflight"] = max(state["max_inflight"], state["inflight"])
            try:
                sysmsg, user = body["messages"][0]["content"], body["messages"][1]["content"]
                if not sysmsg.startswith("# LLM-as-Judge: Explore Subagent Evaluation") or body.get("max_completion_tokens") != 1024:
                    return self._send(400, {"error": "not the released judge request"})
                model = body["model"]
                if model == "slow":
                    time.sleep(0.4)
                if model == "garbage":
                    return self._send(200, reply("The answer looks fine to me."))
                if model.startswith("score="):  # a hostile judge: any score it likes
                    return self._send(200, reply(json.dumps({"score": int(model[6:])})))
                # 9/10 only when the judge was shown the cited code itself, after the query
                exact = user.startswith("<query>") and "def target():" in user and "<final_answer>" in user
                score = 9 if exact else 2
                text = "```json\\n" + json.dumps({"justification": "checked", "score": score}) + "\\n```"
                self._send(200, reply(text))
            finally:
                with lock:
                    state["inflight"] -= 1
    srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
    srv.serve_forever()
""")


@pytest.fixture(scope="module")
def judge_url(tmp_path_factory):
    d = tmp_path_factory.mktemp("judge_srv")
    (d / "judge_server.py").write_text(JUDGE_SERVER)
    port = free_port()
    with server([sys.executable, str(d / "judge_server.py"), str(port)], d / "server.log") as proc:
        wait_http(f"http://127.0.0.1:{port}/", proc, 30, d / "server.log")
        yield f"http://127.0.0.1:{port}/v1"


def stats(url: str) -> dict:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/", timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture()
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def target():\n    return 1\n\n\ndef other():\n    return 2\n")
    (root / "pkg" / "b.py").write_text("x = 1\n" + "y" * 700 + "\n")
    return root


def judge(url, tmp_path, model="judge9", **extra):
    spec = f"openai:model={model},base_url={url},retries=0,cache={tmp_path / 'cache'}"
    return make_judge(spec + "".join(f",{k}={v}" for k, v in extra.items()))


GOLD = Gold(edited={"pkg/a.py": [[1, 2]]})
EXACT = Report(files={"/repo/pkg/a.py": [[1, 2]]})
QUERY = "Where is target defined?"


def test_exact_answer_judged_9_of_10_scores_3_8(judge_url, ws, tmp_path):
    j = judge(judge_url, tmp_path)
    s = score_report("fastcontext", GOLD, EXACT, root=str(ws), judge=j, query=QUERY, finish_reason="stop")
    assert s.value == pytest.approx(3.8)  # 1 + (F0.5 1 − 0) + 2 × 0.9
    assert s.parts["quality"] == pytest.approx(0.9) and s.parts["judged"] == 1.0 and "judge 9/10" in s.reason
    sent = stats(judge_url)["last"]
    assert sent["messages"] == judge_messages(
        query_message(QUERY), "```/repo/pkg/a.py:1-2\ndef target():\n    return 1\n```\n"
    )
    assert sent["messages"][0]["content"] == JUDGE_PROMPT and sent["max_completion_tokens"] == 1024


def test_non_stop_finish_keeps_the_judge_but_not_the_file_score(judge_url, ws, tmp_path):
    j = judge(judge_url, tmp_path)
    for fr in ("length", "abort"):
        s = score_report("fastcontext", GOLD, EXACT, root=str(ws), judge=j, query=QUERY, finish_reason=fr)
        assert s.parts["score_file"] == 0.0 and s.value == pytest.approx(1 + 2 * 0.9)


def test_no_citation_or_failed_episode_scores_0_without_asking_the_judge(judge_url, ws, tmp_path):
    j = judge(judge_url, tmp_path, model="never-called")
    before = stats(judge_url)["n"]
    for r in (Report(files={}), Report(files={"pkg/a.py": []}), None):
        assert score_report("fastcontext", GOLD, r, root=str(ws), judge=j, query=QUERY).value == 0.0
    s = score_report("fastcontext", GOLD, EXACT, root=str(ws), judge=j, query=QUERY, finish_reason="tool_calls")
    assert s.value == 0.0 and "failed" in s.reason
    assert stats(judge_url)["n"] == before


def test_the_judge_reads_the_cited_contents_not_the_paths(judge_url, ws, tmp_path):
    j = judge(judge_url, tmp_path)
    wrong = Report(files={"pkg/a.py": [[5, 6]]})  # the right file, the wrong lines: no `def target()`
    s = score_report("fastcontext", GOLD, wrong, root=str(ws), judge=j, query=QUERY)
    assert s.parts["quality"] == pytest.approx(0.2) and s.value == pytest.approx(1 + 1 + 0.4)


def test_cache_and_concurrent_calls(judge_url, ws, tmp_path):
    j = judge(judge_url, tmp_path, model="slow", workers=4)
    items = [(query_message(f"q{i}"), f"```x.py:1\nline {i}\n```\n") for i in range(6)]
    n0 = stats(judge_url)["n"]
    first = j.score_many(items)
    st = stats(judge_url)
    assert st["n"] - n0 == 6 and st["max_inflight"] >= 2  # calls overlapped
    assert [v.quality for v in first] == [pytest.approx(0.2)] * 6 and not any(v.cached for v in first)
    again = make_judge(j.spec).score_many(items)  # a new judge, same cache directory
    assert all(v.cached for v in again) and stats(judge_url)["n"] == st["n"]


def test_unparsable_reply_and_failed_call_score_0_with_a_reason(judge_url, ws, tmp_path):
    v = judge(judge_url, tmp_path, model="garbage").judge(query_message(QUERY), "x")
    assert v.quality == 0.0 and "not parsable" in v.reason
    dead = make_judge(f"openai:model=m,base_url=http://127.0.0.1:{free_port()}/v1,retries=0,cache={tmp_path / 'c2'}")
    s = score_report("fastcontext", GOLD, EXACT, root=str(ws), judge=dead, query=QUERY)
    assert s.value == pytest.approx(2.0) and "judge call failed" in s.reason


def test_parse_and_contents_as_released(ws):
    assert parse_judge_result('```json\n{"justification": "x", "score": 7}\n```') == (pytest.approx(0.7), "")
    assert parse_judge_result('{"score": "10"}')[0] == pytest.approx(1.0)
    assert parse_judge_result('{"justification": "no score"}') == (0.0, "")
    c = citation_contents({"pkg/b.py": [[2, 2], [1, -1]], "pkg/nope.py": [[1, 1]]}, ws)
    blocks = c.split("```\n")
    assert blocks[0] == "```pkg/b.py:2\n" + "y" * 500  # cut to 500 characters (and its newline, as released)
    assert blocks[1].startswith("```pkg/b.py:1--1\nx = 1\n")  # -1 reads to the end of the file
    assert blocks[2] == "```pkg/nope.py:1\nError: the file does not exist.\n"


def test_the_judge_reads_citations_in_answer_order_as_written(judge_url, ws, tmp_path):
    """read_citations_content @5fb8c1d walks parse_final_answer's list: answer order, each range as the
    model wrote it (``4-4``). Before, the judge got them grouped by path and respelt (``4``)."""
    from fasbench.records import Task, Turn
    from fasbench.scoring.reward import judge_requests
    from fasbench.tools.fastcontext import parse_final_answer

    answer = (
        "<final_answer>\n/repo/pkg/a.py:4-5 (other)\n/repo/pkg/b.py:1-1 (x)\n"
        "/repo/pkg/a.py:1-2 (target)\n</final_answer>"
    )
    tr = Trace(
        task_id="t",
        policy="p",
        toolset="fastcontext",
        stop_reason="reported",
        turns=[Turn(index=0, text=answer)],
        report=parse_final_answer(answer),
    )
    task = Task(id="t", query=QUERY, repo="r", gold=GOLD, root=str(ws))
    want = (
        "```/repo/pkg/a.py:4-5\n\ndef other():\n```\n```/repo/pkg/b.py:1-1\nx = 1\n```\n"
        "```/repo/pkg/a.py:1-2\ndef target():\n    return 1\n```\n"
    )
    assert judge_requests([(tr, task)]) == [(query_message(QUERY), want)]
    score_report("fastcontext", GOLD, tr.report, root=str(ws), judge=judge(judge_url, tmp_path), query=QUERY, trace=tr)
    assert stats(judge_url)["last"]["messages"] == judge_messages(query_message(QUERY), want)
    # a report without its answer text (or edited away from it) is read path by path, as before
    edited = Trace(
        task_id="t",
        policy="p",
        toolset="fastcontext",
        stop_reason="reported",
        turns=[Turn(index=0, text=answer)],
        report=Report(files={"/repo/pkg/a.py": [[1, 2]]}),
    )
    assert judge_requests([(edited, task)])[0][1] == "```/repo/pkg/a.py:1-2\ndef target():\n    return 1\n```\n"


@pytest.mark.parametrize(
    "score, quality, value", [(10**6, 1.0, 4.0), (-50, 0.0, 2.0), (11, 1.0, 4.0), (10, 1.0, 4.0), (0, 0.0, 2.0)]
)
def test_a_hostile_judge_score_is_clamped_to_the_published_0_10(judge_url, ws, tmp_path, score, quality, value):
    """agent_judge.md @0dc077f: "Scoring Criteria (0-10)"; before the clamp 10^6 gave a reward of
    200,002 and -50 one of -8 (1 + 1 + 2 × score × 0.1)."""
    j = judge(judge_url, tmp_path, model=f"score={score}")
    s = score_report("fastcontext", GOLD, EXACT, root=str(ws), judge=j, query=QUERY, finish_reason="stop")
    assert s.parts["quality"] == pytest.approx(quality) and s.value == pytest.approx(value)
    assert ("clamped" in s.reason) == (not 0 <= score <= 10)
    assert parse_judge_result('{"score": %d}' % score)[0] == pytest.approx(quality)
    huge = parse_judge_result('{"score": 1%s}' % ("0" * 4000))
    assert huge[0] == pytest.approx(1.0) and len(huge[1]) < 80


def test_the_episode_gives_the_finish_reason():
    tr = Trace(task_id="t", policy="p", toolset="fastcontext")
    for stop, want in (("reported", "stop"), ("max_turns", "tool_calls"), ("policy_error", "error")):
        tr.stop_reason = stop
        assert episode_finish_reason(tr) == want
    tr.stop_reason = "max_turns"  # a FAILED episode: 0 outright, read from the trace
    assert score_report("fastcontext", GOLD, EXACT, trace=tr).value == 0.0
    assert score_report("fastcontext", GOLD, EXACT).value > 0  # no episode given: finish reason stop


def test_bad_judge_specs():
    for spec, msg in (
        ("anthropic:model=x", "only 'openai"),
        ("openai:base_url=http://x", "model=NAME"),
        ("openai:model=x,workers=many", "not an integer"),
        ("openai:model=x,colour=red", "no parameter"),
    ):
        with pytest.raises(ValueError, match=msg):
            make_judge(spec)
    from fasbench.rl.config import RLConfig

    with pytest.raises(ValueError, match="judge applies to the fastcontext, fastcontext-lenient, grounded-fastcontext"):
        RLConfig(reward="relace", judge="openai:model=x,base_url=http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="model=NAME"):
        RLConfig(reward="fastcontext", judge="openai:base_url=http://127.0.0.1:9/v1")
    assert RLConfig(reward="fastcontext", judge="openai:model=x,base_url=http://127.0.0.1:9/v1").judge


def test_cli_score_with_a_real_judge(judge_url, ws, tmp_path):
    # the answer's path as the release's judge can open it: under the workspace path the prompt shows
    gold, rep = json.dumps({"edited": {"pkg/a.py": [[1, 2]]}}), json.dumps({"files": {"/repo/pkg/a.py": [[1, 2]]}})
    spec = f"openai:model=judge9,base_url={judge_url},cache={tmp_path / 'cli-cache'}"
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "score",
            "--reward",
            "fastcontext",
            "--judge",
            spec,
            "--query",
            QUERY,
            "--root",
            str(ws),
            "--gold",
            gold,
            "--report",
            rep,
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["score"] == pytest.approx(3.8) and out["parts"]["quality"] == pytest.approx(0.9)
    r = runner.invoke(
        app,
        [
            "score",
            "--reward",
            "fastcontext",
            "--finish",
            "length",
            "--judge",
            spec,
            "--query",
            QUERY,
            "--root",
            str(ws),
            "--gold",
            gold,
            "--report",
            rep,
        ],
    )
    assert json.loads(r.output)["score"] == pytest.approx(2.8)
    r = runner.invoke(app, ["score", "--reward", "fastcontext", "--gold", gold, "--report", rep])
    assert json.loads(r.output)["score"] == pytest.approx(2.0) and "no judge given" in json.loads(r.output)["reason"]
    for args, msg in (
        (["--judge", spec], "needs --query"),
        (["--judge", "nope:x=1", "--query", "q"], "only 'openai"),
        (["--reward", "f0.5", "--judge", spec], "only applies"),
    ):
        r = runner.invoke(
            app,
            [
                "score",
                "--gold",
                gold,
                "--report",
                rep,
                *(["--reward", "fastcontext"] if "--reward" not in args else []),
                *args,
            ],
        )
        assert r.exit_code == 2 and msg in r.output, r.output


def test_cli_entry_point_with_a_real_judge(judge_url, ws, tmp_path):
    exe = Path(sys.executable).parent / "fasbench"
    if not exe.exists():
        pytest.skip("the fasbench console script is not installed in this environment")
    spec = f"openai:model=judge9,base_url={judge_url},cache={tmp_path / 'sub-cache'}"
    p = subprocess.run(
        [
            str(exe),
            "score",
            "--reward",
            "fastcontext",
            "--judge",
            spec,
            "--query",
            QUERY,
            "--root",
            str(ws),
            "--gold",
            '{"edited": {"pkg/a.py": [[1, 2]]}}',
            "--report",
            '{"files": {"/repo/pkg/a.py": [[1, 2]]}}',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["score"] == pytest.approx(3.8)


def _task(ws) -> Task:
    return Task(id="t1", query=QUERY, repo="demo", gold=GOLD, root=str(ws))


ANSWER = "Found it.\n<final_answer>\n/repo/pkg/a.py:1-2 (defines target)\n</final_answer>"


def test_evaluation_and_rl_use_the_judge(judge_url, ws, tmp_path):
    """evaluate.summarize and rl.EpisodeReward score FastContext's reward with the judge, the
    episode's own finish reason and the task's query: an exact answer judged 9/10 gives 3.8."""
    from fasbench.evaluation.evaluate import summarize
    from fasbench.harness import Limits, run_episode
    from fasbench.policies import ScriptedPolicy
    from fasbench.records import Reply
    from fasbench.rl.env import environment_class
    from fasbench.rl.episode_reward import EpisodeReward

    task = _task(ws)
    tr = run_episode(task, ScriptedPolicy([Reply(text=ANSWER)]), "fastcontext", Limits(max_turns=3))
    assert tr.stop_reason == "reported"
    j = judge(judge_url, tmp_path)
    n0 = stats(judge_url)["n"]
    row = summarize([task], [tr], judge=j).row(0, named=True)
    assert row["reward_fastcontext"] == pytest.approx(3.8) and row["reward_fastcontext__quality"] == pytest.approx(0.9)
    assert stats(judge_url)["n"] == n0 + 1  # prefetched once, reused by the row
    assert summarize([task], [tr]).row(0, named=True)["reward_fastcontext"] == pytest.approx(2.0)  # no judge
    unanswered = run_episode(task, ScriptedPolicy([]), "fastcontext", Limits(max_turns=2))
    assert summarize([task], [unanswered], judge=j).row(0, named=True)["reward_fastcontext"] == 0.0

    env = environment_class("fastcontext", Limits(max_turns=3))()
    env.reset(task=json.dumps(task.to_dict()))
    env._begin_turn()
    reward = EpisodeReward("fastcontext", out=None, judge=j)
    assert reward([None], [[{"role": "assistant", "content": ANSWER}]], environments=[env]) == [pytest.approx(3.8)]
    assert reward.batch[0].parts["quality"] == pytest.approx(0.9)
