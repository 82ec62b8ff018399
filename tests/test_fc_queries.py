"""FastContext's query as released, end to end against a real local OpenAI-compatible server
(fasbench.policies.scripted_server in its own process): ``fasbench data fc-queries`` asks a main agent with the
released bash + subagent tools for each task's query (resumable JSONL, tasks written with
``meta.fc_query``), then a FastContext eval (``--reward fastcontext``) with a model policy against the
same kind of server gives the explorer ``<query>{fc_query}</query>``, and the run records where every
query came from (trace meta, summary column, run.json, the runs table)."""

from __future__ import annotations

import json

import pytest
from servers import scripted_server
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.evaluate import run_eval
from fasbench.evaluation.runs import display_runs, runs_table
from fasbench.harness import Limits
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import read_tasks, read_traces, write_tasks
from fasbench.tools.fastcontext_query import TASK_PROMPT, TOOLS, messages, query_of


@pytest.fixture(scope="module")
def server_url():
    with scripted_server("--delay-s", "0.01", "--turns", "2") as url:
        yield url


def test_released_prompt_and_tools():
    assert [t["function"]["name"] for t in TOOLS] == ["bash", "subagent"]
    assert TOOLS[1]["function"]["parameters"]["required"] == ["description", "prompt"]
    m = messages("  Fix the bug.\n")
    assert m[1]["content"] == f"<problem_statement>\nFix the bug.\n</problem_statement>\n{TASK_PROMPT}"
    call = lambda n, a: {"function": {"name": n, "arguments": json.dumps(a)}}  # noqa: E731
    assert query_of({"tool_calls": [call("bash", {"command": "ls"}), call("subagent", {"prompt": "find X"})]}) == (
        "find X",
        "",
    )
    assert query_of({"tool_calls": [call("subagent", {"prompt": "abc"})]})[0] is None  # release: len(prompt) > 3
    assert query_of({"content": "no calls"})[0] is None


def test_generate_queries_then_eval_records_the_query_source(tmp_path, server_url):
    base = toy_tasks(make_corpus(tmp_path / "corpus"))
    write_tasks(tmp_path / "tasks.jsonl", base)
    spec = f"openai:model=scripted,base_url={server_url},api_key_env="
    args = [
        "data",
        "fc-queries",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--endpoint",
        spec,
        "--n",
        "3",
        "--out",
        str(tmp_path / "q.jsonl"),
        "--tasks-out",
        str(tmp_path / "fc_tasks.jsonl"),
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "3/3 queries" in r.output
    recs = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert [x["task_id"] for x in recs] == [t.id for t in base[:3]]
    first_line = base[0].query.strip().splitlines()[0]
    assert recs[0]["fc_query"] == f"Find the code involved in: {first_line[:200]}"
    assert recs[0]["finish_reason"] == "tool_calls" and recs[0]["fc_query_source"].startswith("query_gen.py@5fb8c1d")
    # resumed: a rerun asks nothing new; a truncated last record is cut and asked again
    with open(tmp_path / "q.jsonl", "a") as f:
        f.write('{"task_id": "x", "fc_q')
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and len((tmp_path / "q.jsonl").read_text().splitlines()) == 3, r.output

    fc = read_tasks(tmp_path / "fc_tasks.jsonl")
    assert all(t.meta["fc_query"] for t in fc)
    tasks = fc + base[3:]  # two tasks without a generated query
    df = run_eval(
        tasks,
        spec,
        "fastcontext",
        tmp_path / "run",
        Limits(max_turns=2),
        workers=2,
        progress=False,
        reward="fastcontext",
    )
    rows = {r["task_id"]: r for r in df.iter_rows(named=True)}
    traces = {t.task_id: t for t in read_traces(tmp_path / "run" / "traces.jsonl")}
    for t in fc:
        tr = traces[t.id]
        assert tr.prompt[1]["content"] == f"<query>{t.meta['fc_query']}</query>"
        assert tr.meta["query"] == t.meta["fc_query"] and rows[t.id]["query_source"] == t.meta["fc_query_source"]
        assert tr.stop_reason == "reported" and rows[t.id]["reward_fastcontext"] >= 1.0  # it cited a line range
    for t in base[3:]:
        assert traces[t.id].prompt[1]["content"] == f"<query>{t.query}</query>"
        assert rows[t.id]["query_source"] == "problem_statement"
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["query_sources"] == {fc[0].meta["fc_query_source"]: 3, "problem_statement": 2}
    shown = display_runs(runs_table([tmp_path / "run"]))
    assert "problem_statement 2" in shown["query_source"][0] and "query_gen.py@5fb8c1d" in shown["query_source"][0]


def test_bad_input_is_one_line(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "data",
            "fc-queries",
            "--tasks",
            "swebench-lite:fasbench-test",
            "--endpoint",
            "openai:base_url=x",
            "--out",
            str(tmp_path / "q.jsonl"),
        ],
    )
    assert r.exit_code == 2 and "needs model=NAME" in r.output
    (tmp_path / "bad.jsonl").write_text('["not a record"]\n')
    r = CliRunner().invoke(
        app,
        [
            "data",
            "fc-queries",
            "--tasks",
            "swebench-lite:fasbench-test",
            "--n",
            "1",
            "--endpoint",
            "openai:model=m,base_url=http://127.0.0.1:9/v1",
            "--out",
            str(tmp_path / "bad.jsonl"),
        ],
    )
    assert r.exit_code == 2 and "not a query record" in r.output, r.output


def test_query_requests_send_max_tokens_only_when_asked(tmp_path):
    """query_gen.py@5fb8c1d sends no max_tokens (the endpoint's limit applies): neither does
    fc-queries unless the spec sets it; the marker that says so never reaches the request."""
    from fasbench.data.fc_queries import generate_one, make_client

    task = toy_tasks(make_corpus(tmp_path / "corpus"))[0]
    sent = []
    reply = {"choices": [{"finish_reason": "stop", "message": {"content": "no call"}}]}
    for spec, want in (
        ("openai:model=m,base_url=http://127.0.0.1:9/v1", None),
        ("openai:model=m,base_url=http://127.0.0.1:9/v1,max_tokens=64", 64),
    ):
        client = make_client(spec)
        client.complete = lambda body: sent.append(body) or reply  # the request body as it would be sent
        generate_one(task, client)
        assert sent[-1].get("max_tokens") == want and not any(k.startswith("__") for k in sent[-1])
