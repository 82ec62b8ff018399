"""A model server that is down is an infrastructure failure, not a score of 0 (issue s27-fail): `fasbench
eval` says so before the metric table, leaves the failed episodes out of the means and exits 3; a rerun
once the server is up retries exactly those episodes, and traces.jsonl keeps one trace per task; `fasbench
runs` shows a `failed` column and `fasbench compare` notes the failed episodes. A real HTTP server
(fasbench.policies.scripted_server) on a fixed port, down for the first run and up for the second."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

from servers import free_port, scripted_server
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.evaluate import run_eval
from fasbench.evaluation.runs import compare_runs, failed_note
from fasbench.harness import Limits
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import write_tasks


def _spec(port: int) -> str:
    return f"openai:model=scripted,base_url=http://127.0.0.1:{port}/v1,api_key_env=,retries=0,timeout_s=20"


def _eval_args(tf, policy: str, out, *extra: str) -> list[str]:
    """`fasbench eval` of the task file ``tf`` with ``policy`` into ``out``: 2 turns, one serial worker."""
    return [
        "eval",
        "--tasks",
        str(tf),
        "--policy",
        policy,
        "--max-turns",
        "2",
        "--out",
        str(out),
        "--workers",
        "1",
        "--backend",
        "serial",
        *extra,
    ]


def _lines(f):
    return [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]


def test_failed_episodes_are_retried_on_resume_and_kept_once(tmp_path):
    tasks = toy_tasks(make_corpus(tmp_path / "corpus"))[:3]
    port, out = free_port(), tmp_path / "run"
    df = run_eval(tasks, _spec(port), "relace", out, Limits(max_turns=2), workers=1, backend="serial", progress=False)
    assert df.height == 3 and df["stop_reason"].to_list() == ["policy_error"] * 3
    assert {d["stop_reason"] for d in _lines(out / "traces.jsonl")} == {"policy_error"}
    with scripted_server("--turns", "2", "--port", str(port)):
        df = run_eval(
            tasks, _spec(port), "relace", out, Limits(max_turns=2), workers=1, backend="serial", progress=False
        )
    calls = json.loads((out / "run.json").read_text())["calls"]
    assert calls[-1]["ran"] == 3 and calls[-1]["resumed"] == 0 and calls[-1]["failed"] == 0, calls[-1]
    rows = _lines(out / "traces.jsonl")
    assert sorted(d["task_id"] for d in rows) == sorted(t.id for t in tasks)  # one trace per task
    assert all(d["stop_reason"] == "reported" for d in rows), [d["stop_reason"] for d in rows]
    assert df["turns"].min() >= 1 and not any(df["failed"].to_list())
    # a third call: everything done, nothing rerun, still one trace per task
    df = run_eval(tasks, _spec(port), "relace", out, Limits(max_turns=2), workers=1, backend="serial", progress=False)
    assert json.loads((out / "run.json").read_text())["calls"][-1]["resumed"] == 3
    assert len(_lines(out / "traces.jsonl")) == 3


def test_only_the_failed_tasks_are_retried(tmp_path):
    base = toy_tasks(make_corpus(tmp_path / "corpus"))[:3]
    port, out = free_port(), tmp_path / "run"
    with scripted_server("--turns", "2", "--port", str(port)):
        run_eval(
            base[:1],
            _spec(port),
            "relace",
            tmp_path / "warm",
            Limits(max_turns=2),
            workers=1,
            backend="serial",
            progress=False,
        )  # the server answers
    down = [replace(t, query=t.query + "\n[[server:500]]") if i else t for i, t in enumerate(base)]
    with scripted_server("--turns", "2", "--port", str(port)):  # task 0 works, 1 and 2 get HTTP 500
        df = run_eval(
            down, _spec(port), "relace", out, Limits(max_turns=2), workers=1, backend="serial", progress=False
        )
    assert df["stop_reason"].to_list() == ["reported", "policy_error", "policy_error"]
    shutil.copytree(out, tmp_path / "before")
    first = {d["task_id"]: d for d in _lines(out / "traces.jsonl")}
    with scripted_server("--turns", "2", "--port", str(port)):
        df = run_eval(
            base, _spec(port), "relace", out, Limits(max_turns=2), workers=1, backend="serial", progress=False
        )
    call = json.loads((out / "run.json").read_text())["calls"][-1]
    assert (call["ran"], call["resumed"], call["failed"]) == (2, 1, 0), call
    rows = {d["task_id"]: d for d in _lines(out / "traces.jsonl")}
    assert len(_lines(out / "traces.jsonl")) == 3 and rows[base[0].id] == first[base[0].id]  # kept as it was
    assert all(d["stop_reason"] == "reported" for d in rows.values())
    table = compare_runs([tmp_path / "warm", tmp_path / "before"], ["file_f2"])  # the one task both ran
    assert table["n"].to_list() == [1] and table["run_failed"].to_list() == [2]
    assert "are left out of n and the means: before 2" in failed_note(table), failed_note(table)


def test_cli_says_failed_before_the_table_exits_3_and_runs_shows_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    tasks = toy_tasks(make_corpus(tmp_path / "corpus"))[:3]
    tf, out, ok = tmp_path / "tasks.jsonl", tmp_path / "runs" / "down", tmp_path / "runs" / "heur"
    write_tasks(tf, tasks)
    port = free_port()
    cli = CliRunner()
    r = cli.invoke(
        app,
        _eval_args(tf, _spec(port), out),
    )
    assert r.exit_code == 3, r.output
    lines = r.output.splitlines()
    warn = next(i for i, ln in enumerate(lines) if "3 of 3 episodes FAILED" in ln)
    table = next(i for i, ln in enumerate(lines) if ln.startswith("file_f2 "))
    assert warn < table and "leave them out" in lines[warn]
    assert lines[table].split()[1] == "n/a", lines[table]  # no mean of 0.000 over episodes that never ran
    r = cli.invoke(
        app,
        _eval_args(tf, "heuristic:turns=2", ok),
    )
    assert r.exit_code == 0, r.output
    r = cli.invoke(app, ["runs", str(tmp_path / "runs"), "--json"])
    assert r.exit_code == 0, r.output
    runs = {json.loads(ln)["run"].split("/")[-1]: json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")}
    assert runs["down"]["failed"] == 3 and runs["down"]["n"] == 0 and runs["heur"]["failed"] == 0, runs
    r = cli.invoke(app, ["runs", str(tmp_path / "runs")])
    assert "failed" in r.stdout.splitlines()[0] or "failed" in r.stdout, r.output
    r = cli.invoke(app, ["compare", str(ok), str(out), "--metric", "turns"])  # no task left to compare
    assert r.exit_code == 2 and "failed episodes, left out: down 3" in r.output, r.output
    with scripted_server("--turns", "2", "--port", str(port)):
        r = cli.invoke(
            app,
            _eval_args(tf, _spec(port), out),
        )
    assert r.exit_code == 0 and "3 episodes run in this call, 0 of 3 resumed" in r.output, r.output
    r = cli.invoke(app, ["compare", str(ok), str(out), "--metric", "file_f2"])
    assert r.exit_code == 0 and "failed episodes" not in r.output, r.output


def test_eval_merge_says_failed_and_leaves_them_out_of_the_means(tmp_path, monkeypatch):
    """`fasbench eval-merge` prints the summary `fasbench eval` prints: failed episodes counted, not averaged as 0."""
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    tf = tmp_path / "tasks.jsonl"
    write_tasks(tf, toy_tasks(make_corpus(tmp_path / "corpus"))[:3])
    port, cli = free_port(), CliRunner()
    for i in (0, 1):  # the server is down: every episode fails
        r = cli.invoke(app, _eval_args(tf, _spec(port), tmp_path / f"s{i}", "--shard", f"{i}/2"))
        assert r.exit_code == 3, r.output
    r = cli.invoke(app, ["eval-merge", str(tmp_path / "m"), str(tmp_path / "s0"), str(tmp_path / "s1")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert any("3 of 3 episodes FAILED" in ln and "leave them out" in ln for ln in lines), r.output
    table = next(ln for ln in lines if ln.startswith("file_f2 "))
    assert table.split()[1] == "n/a", table  # no mean of 0.000 over episodes that never ran
