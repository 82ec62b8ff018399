"""Hostile endpoints (tests/hostile_server.py, a raw HTTP server in a thread on 127.0.0.1) against every
HTTP call of fasbench (fasbench/base/endpoint.py): the policy inside a real episode, the judge through
`fasbench score --judge`. A drip is cut at the total deadline, a wrong shape is one named
EndpointError line, a 300 MB answer is refused at the body cap with bounded memory."""

from __future__ import annotations

import json

import pytest
from hostile_server import PeakRSS, hostile_server, wait_s
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.harness import Limits, run_episode
from fasbench.policies.openai_compat import OpenAIPolicy
from fasbench.policies.toy import make_corpus, toy_tasks

MAX_REPLY_BYTES = 16 * 2**20  # fasbench.base.endpoint.MAX_REPLY_BYTES (a literal: the file runs on older code too)
GUARD_S = 90  # hang guard only (a busy machine); the deadline itself is 2 s


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))


@pytest.fixture(scope="module")
def srv():
    with hostile_server() as s:
        yield s


def episode(task, url, mode, **kw):
    pol = OpenAIPolicy(model=mode, base_url=url, **{"retries": 0, "timeout_s": 2.0, **kw})
    tr, secs = wait_s(lambda: run_episode(task, pol, "relace", Limits(max_turns=2)), GUARD_S)
    assert tr is not None, f"{mode}: the episode still runs after {GUARD_S} s"
    assert not isinstance(tr, BaseException), f"{mode}: run_episode raised {tr!r}"
    return tr, secs


def assert_named(tr, want):
    assert tr.stop_reason == "policy_error" and not tr.turns
    assert tr.error.startswith("EndpointError: ") and want in tr.error, tr.error
    assert "\n" not in tr.error and "Traceback" not in tr.error and len(tr.error) < 700, tr.error


SHAPES = [
    ("no-choices", "reply: choices is null, expected a list"),
    ("choices-dict", "reply: choices is a dict, expected a list"),
    ("message-str", "reply: choices[0].message is a string, expected a dict"),
    ("tool-calls-dict", "reply: choices[0].message.tool_calls is a dict, expected a list or null"),
    ("arguments-dict", "reply: choices[0].message.tool_calls[1].function.arguments is a dict, expected a string"),
    ("usage-str", "reply: usage.prompt_tokens is a string, expected an int"),
    ("deep", "reply: JSON nested too deeply (over the limit of 64 levels)"),
    ("deep-ok-parse", "reply: JSON nested too deeply"),
    ("not-json", "reply: not JSON (text/plain): 'hello, this is not json'"),
    ("html", "reply: not JSON (text/html): '<!DOCTYPE html> <html><head><title>502 Bad Gateway"),
    (
        "long-answer",
        "reply: the answer is 1000000 characters (content and tool calls), over the limit of 65536; refused",
    ),
    ("gzip", "reply is gzip-encoded; only identity (uncompressed) is accepted"),
]


@pytest.mark.parametrize("mode,want", SHAPES, ids=[m for m, _ in SHAPES])
def test_a_reply_of_the_wrong_shape_ends_the_episode_with_a_named_error(toy, srv, mode, want):
    url, hits = srv
    tr, _ = episode(toy[0], url, mode, retries=2, backoff_s=0.01)
    assert_named(tr, want)
    assert hits[mode] == 1  # a wrong shape is not retried
    assert tr.meta["failed_requests"][0]["status"] in (200, None)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["drip", "drip-headers"])
def test_a_dripping_server_is_cut_at_the_total_deadline(toy, srv, mode):
    url, _ = srv
    tr, secs = episode(toy[0], url, mode)
    assert_named(tr, "no complete reply within the total deadline (timeout_s=2.0)")
    assert secs < 2 + 20, secs  # deadline + generous slack for a busy machine
    tr, secs = episode(toy[0], url, mode, retries=1, backoff_s=0.01)  # each attempt has its own deadline
    assert_named(
        tr, "giving up after 2 attempts; last error: no complete reply within the total deadline (timeout_s=2.0)"
    )
    assert secs < 4 + 20, secs


def test_a_300_mb_answer_is_refused_at_the_cap_with_bounded_memory(toy, srv, capsys):
    url, _ = srv
    with PeakRSS() as m:
        tr, secs = episode(toy[0], url, "big", timeout_s=60.0)
    assert_named(tr, f"reply body over the limit of {MAX_REPLY_BYTES} bytes")
    with capsys.disabled():
        print(f"\n300 MB answer: refused in {secs:.2f} s, client RSS growth {m.growth_mb:.1f} MB (cap 16 MB)")
    assert m.growth_mb < 120, m.growth_mb
    small = OpenAIPolicy(model="big", base_url=url, retries=0, timeout_s=60.0, max_reply_bytes=1000)
    tr, _ = wait_s(lambda: run_episode(toy[0], small, "relace", Limits(max_turns=1)), GUARD_S)
    assert_named(tr, "reply body over the limit of 1000 bytes")


def test_an_error_status_with_a_huge_body_reads_a_few_kb(toy, srv):
    url, hits = srv
    with PeakRSS() as m:
        tr, _ = episode(toy[0], url, "500-huge", timeout_s=60.0, retries=1, backoff_s=0.01)
    assert_named(tr, "giving up after 2 attempts; last error: HTTP 500: internal error: xxxx")
    assert len(tr.error) < 700 and m.growth_mb < 120, m.growth_mb
    assert hits["500-huge"] >= 2  # a 5xx is retried


def test_deeply_nested_tool_arguments_are_kept_raw_and_answered_with_an_error(toy, srv):
    url, _ = srv
    tr, _ = episode(toy[0], url, "deep-args", timeout_s=30.0, max_reply_chars=300_000)
    assert tr.error is None and tr.turns, tr.error
    call, res = tr.turns[0].calls[0], tr.turns[0].results[0]
    assert isinstance(call.arguments, str) and res.is_error


def _score(url, mode, tmp_path, ws):
    (ws / "a.py").write_text("def f():\n    return 1\n")
    spec = f"openai:model={mode},base_url={url},retries=0,timeout_s=2,cache={tmp_path / 'judge-cache'}"
    gold, rep = json.dumps({"edited": {"a.py": [[1, 2]]}}), json.dumps({"files": {"a.py": [[1, 2]]}})
    return wait_s(
        lambda: CliRunner().invoke(
            app,
            [
                "score",
                "--reward",
                "fastcontext",
                "--judge",
                spec,
                "--query",
                "where is f",
                "--root",
                str(ws),
                "--gold",
                gold,
                "--report",
                rep,
            ],
        ),
        GUARD_S,
    )


JUDGE = [
    ("drip", "no complete reply within the total deadline (timeout_s=2.0)"),
    ("message-str", "reply: choices[0].message is a string, expected a dict"),
    ("deep", "reply: JSON nested too deeply"),
    ("html", "reply: not JSON (text/html)"),
    ("big", f"reply body over the limit of {MAX_REPLY_BYTES} bytes"),
]


@pytest.mark.parametrize("mode,want", JUDGE, ids=[m for m, _ in JUDGE])
def test_score_with_a_hostile_judge_prints_one_error_line(srv, tmp_path, mode, want):
    url, _ = srv
    ws = tmp_path / "ws"
    ws.mkdir()
    r, secs = _score(url, mode, tmp_path, ws)
    assert r is not None, f"fasbench score still runs after {GUARD_S} s"
    assert secs < 2 + 20 or mode == "big", secs
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1, r.output[:2000]
    assert lines[0].startswith("error: judge call failed: ") and want in lines[0], lines[0]


def test_score_with_a_good_judge_still_scores(srv, tmp_path):
    url, _ = srv
    ws = tmp_path / "ws"
    ws.mkdir()
    r, _ = _score(url, "judge-ok", tmp_path, ws)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["parts"]["quality"] == pytest.approx(0.7)


MAIN = [
    ("drip", "fasbench.base.endpoint: no complete reply within the total deadline (timeout_s=2.0)"),
    ("big", f"fasbench.base.endpoint: reply body over the limit of {MAX_REPLY_BYTES} bytes"),
    ("message-str", "fasbench.base.endpoint: reply: choices[0].message is a string, expected a dict"),
    ("deep", "fasbench.base.endpoint: reply: JSON nested too deeply"),
]


@pytest.mark.slow
@pytest.mark.parametrize("mode,want", MAIN, ids=[m for m, _ in MAIN])
def test_the_e2e_main_agent_model_calls_are_bounded_too(srv, tmp_path, mode, want):
    pytest.importorskip("minisweagent", reason="the live main agent needs mini-swe-agent")
    from fasbench.e2e.live import MainAgentError, MainConfig, run_main

    url, _ = srv
    cfg = MainConfig(model=mode, base_url=url, timeout_s=2, retries=1, step_limit=2)

    def run():
        try:
            return run_main("fix it", tmp_path, cfg, tmp_path / "traj.json", "x")["error"]
        except MainAgentError as e:  # the endpoint gave no usable reply at all
            return str(e)

    with PeakRSS() as m:
        err, secs = wait_s(run, GUARD_S)
    assert err is not None and secs is not None, f"the main agent still runs after {GUARD_S} s"
    assert want in str(err) and "Traceback" not in str(err), err
    assert secs < 3 * 2 + 30, secs  # LiteLLM's OpenAI client makes 3 attempts of 2 s at most
    assert m.growth_mb < 120, m.growth_mb
