"""Concurrent evaluation against a real local OpenAI-compatible server (fasbench.policies.scripted_server in
its own process): failures of the server fail episodes with their reasons, never the run; the
trace records every request with its latency and tokens."""

from __future__ import annotations

from dataclasses import replace

import pytest
from servers import scripted_server

from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import Limits
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import read_traces


@pytest.fixture(scope="module")
def server_url():
    with scripted_server("--delay-s", "0.05", "--max-concurrent", "4", "--turns", "2") as url:
        yield url


def test_server_errors_and_timeouts_fail_episodes_not_the_run(tmp_path, server_url):
    base = toy_tasks(make_corpus(tmp_path / "corpus"))
    steer = {0: "", 1: "[[server:500]]", 2: "[[server:sleep=6]]", 3: "[[server:flaky=1]]", 4: ""}
    tasks = [replace(t, query=t.query + ("\n" + steer[i] if steer[i] else "")) for i, t in enumerate(base)]
    # timeout_scale=0: every deadline is timeout_s (the fast episodes would widen the sized one past 6 s)
    spec = (
        f"openai:model=scripted,base_url={server_url},timeout_s=2,timeout_scale=0,retries=1,backoff_s=0.01,api_key_env="
    )
    df = run_eval(tasks, spec, "relace", tmp_path / "run", Limits(max_turns=2), workers=5, progress=False)
    assert df.height == 5  # every episode has its row: the run completed
    rows = {r["task_id"]: r for r in df.iter_rows(named=True)}
    ok = [base[i].id for i in (0, 3, 4)]
    for tid in ok:
        assert rows[tid]["stop_reason"] == "reported" and rows[tid]["error"] is None, rows[tid]
    r500, rslow = rows[base[1].id], rows[base[2].id]
    assert r500["stop_reason"] == rslow["stop_reason"] == "policy_error"
    assert "giving up after 2 attempts" in r500["error"] and "HTTP 500" in r500["error"]
    assert "giving up after 2 attempts" in rslow["error"] and "timeout_s=2.0" in rslow["error"]

    traces = {t.task_id: t for t in read_traces(tmp_path / "run" / "traces.jsonl")}
    failed = traces[base[1].id].meta["failed_requests"]
    assert [a["status"] for a in failed] == [500, 500] and all(a["latency_s"] >= 0 for a in failed)
    timed_out = traces[base[2].id].meta["failed_requests"]
    assert [a["status"] for a in timed_out] == [None, None] and all(a["latency_s"] >= 1.9 for a in timed_out)
    # the flaky task: its first attempt of each turn got a 503, the retry went through; both recorded
    flaky = traces[base[3].id]
    for turn in flaky.turns:
        assert [a["status"] for a in turn.requests] == [503, 200]
        assert turn.requests[1]["prompt_tokens"] > 0 and turn.requests[1]["completion_tokens"] > 0
        assert turn.prompt_tokens == turn.requests[1]["prompt_tokens"]
    # a clean episode: one request per turn, latency at least the server's delay
    clean = traces[base[0].id]
    assert [len(t.requests) for t in clean.turns] == [1, 1]
    assert all(t.requests[0]["latency_s"] >= 0.05 for t in clean.turns)
    assert clean.report is not None and "requests/sessions.py" in clean.report.files


def test_request_records_keep_trace_json_backward_compatible():
    from fasbench.records import Trace, Turn

    old = Trace(task_id="t", policy="p", toolset="relace", turns=[Turn(index=0, text="x")])
    d = old.to_dict()
    assert "requests" not in d["turns"][0]  # a local policy's trace is written as before
    assert Trace.from_dict(d).turns[0].requests == []
    rec = {"attempt": 0, "status": 200, "latency_s": 0.25, "prompt_tokens": 10, "completion_tokens": 3}
    new = Trace(task_id="t", policy="p", toolset="relace", turns=[Turn(index=0, requests=[rec])])
    assert Trace.from_dict(new.to_dict()).turns[0].requests == [rec]


def test_scripted_server_is_a_fasbench_command_naming_every_tool_format():
    from typer.testing import CliRunner

    from fasbench.cli import app
    from fasbench.policies.scripted_server import TOOL_FORMATS

    r = CliRunner().invoke(app, ["scripted-server", "--help"])
    assert r.exit_code == 0 and all(f in r.stdout for f in TOOL_FORMATS), r.stdout
    r = CliRunner().invoke(app, ["scripted-server", "--tool-format", "nope"])
    assert r.exit_code == 2 and "choose one of structured, hermes_json" in r.stderr


def _body(query: str) -> dict:
    return {"model": "scripted", "messages": [{"role": "user", "content": query}], "stream": False}


def test_deadline_is_timeout_s_until_a_reply_then_sized_from_the_slowest_pace(server_url):
    """A slow server (a CPU model, a busy machine): the first reply's deadline is timeout_s; later ones
    are timeout_scale x the slowest seconds per completion token so far x max_tokens, within
    [timeout_s, timeout_max_s]; giving up says which deadline passed."""
    from fasbench.policies.openai_compat import EndpointError, OpenAIPolicy

    def policy(scale: float) -> OpenAIPolicy:
        return OpenAIPolicy(
            model="scripted",
            base_url=server_url,
            api_key_env="",
            retries=0,
            timeout_s=0.5,
            timeout_scale=scale,
            timeout_max_s=3.0,
            max_tokens=100_000,  # a longest reply at the measured pace would take minutes: the cap applies
        )

    fixed, sized = policy(0.0), policy(4.0)
    for p in (fixed, sized):
        assert p.deadline() == 0.5  # nothing measured yet
        log: list[dict] = []
        p.complete(_body("first"), log)  # the server's 0.05 s
        assert log[0]["deadline_s"] == 0.5 and log[0]["completion_tokens"] > 0
    assert fixed.deadline() == 0.5 and sized.deadline() == 3.0
    log = []
    sized.complete(_body("slow [[server:sleep=1.2]]"), log)  # past timeout_s, within the sized deadline
    assert log[0]["status"] == 200 and log[0]["latency_s"] >= 1.2 and log[0]["deadline_s"] == 3.0
    with pytest.raises(EndpointError, match=r"timeout_s=0\.5"):
        fixed.complete(_body("slow [[server:sleep=1.2]]"))  # the fixed deadline gives up
    log = []
    with pytest.raises(EndpointError, match=r"3\.0 s, sized from the replies so far; timeout_s=0\.5"):
        sized.complete(_body("slower [[server:sleep=6]]"), log)
    assert 2.9 <= log[0]["latency_s"] < 5.5
    long = OpenAIPolicy(model="m", timeout_s=100, timeout_max_s=10)  # a cap below timeout_s: timeout_s wins
    long._measured(50.0, 10)
    assert long.deadline() == 100.0
    with pytest.raises(ValueError, match="timeout_scale must be >= 0"):
        OpenAIPolicy(model="m", timeout_scale=-1)


def test_eval_of_an_openai_policy_runs_one_episode_at_a_time_unless_told(tmp_path, server_url, capsys):
    """transformers serve generates one request at a time: concurrent episodes would wait on each
    other past their deadlines, so without ``workers`` an openai eval runs them one by one, and says so."""
    tasks = toy_tasks(make_corpus(tmp_path / "corpus"))[:3]
    spec = f"openai:model=scripted,base_url={server_url},api_key_env="
    run_eval(tasks, spec, "relace", tmp_path / "one", Limits(max_turns=2), progress=False)
    assert "openai: 1 episode(s) at a time, the policy's default" in capsys.readouterr().out
    spans = sorted(
        (r["started_at"], r["started_at"] + r["latency_s"])
        for t in read_traces(tmp_path / "one" / "traces.jsonl")
        for turn in t.turns
        for r in turn.requests
    )
    assert len(spans) == 6 and all(a[1] <= b[0] + 0.01 for a, b in zip(spans, spans[1:])), spans  # never overlap
    run_eval(tasks, spec, "relace", tmp_path / "three", Limits(max_turns=2), workers=3, progress=False)
    assert "at a time" not in capsys.readouterr().out  # told: no note
