"""Every ``fasbench`` subcommand answers bad input with a one-line error and a non-zero exit, never a
traceback (issue 14): folders or binary files where a file is expected, half-written JSON or
summaries, an ``--out`` that is a file. Runs the real command tree through typer's CliRunner; a
guard makes sure every leaf command has cases here, so a new command cannot be forgotten."""

import json
import subprocess
import sys

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from fasbench.cli import app

# commands that take no input that could be bad (only flags), with the reason they are not run here
EXEMPT = {"data ship": "only a flag; it rebuilds the shipped data, not something to run in a test"}


def leaf_commands() -> list[str]:
    out = []

    def walk(c, pre):
        if isinstance(c, TyperGroup):
            for n, s in c.commands.items():
                walk(s, pre + [n])
        else:
            out.append(" ".join(pre))

    walk(typer.main.get_command(app), [])
    return out


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "folder").mkdir()
    (d / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (d / "file.txt").write_text("hello\n")
    (d / "half.json").write_text('{"edited": {"a.py": [[1, ')
    (d / "half.jsonl").write_text('{"id": "t", "query": "q"}\n{"id": "u", "qu')
    (d / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    ws = d / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    task = {"id": "t", "query": "q", "repo": "r", "root": str(ws), "gold": {"edited": {"a.py": [[1, 1]]}}}
    (d / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    run = d / "run_half"  # an eval run whose summary was cut off mid-write
    run.mkdir()
    (run / "summary.parquet").write_bytes(b"PAR1\x15\x04\x15")
    (d / "badkey.yaml").write_text("max_step: 3\n")  # a profile with a misspelt field
    (d / "badval.yaml").write_text("train:\n  max_steps: ten\n")  # a value of the wrong type
    return d


def cases(b):
    F, D, B, T = str(b / "file.txt"), str(b / "folder"), str(b / "binary.bin"), str(b / "tasks.jsonl")
    H, HL, DEEP, WS = str(b / "half.json"), str(b / "half.jsonl"), str(b / "deep.json"), str(b / "ws")
    out = str(b / "out_dir")
    BK, BV = str(b / "badkey.yaml"), str(b / "badval.yaml")
    # bad --set overrides: not key=value, an unknown field, a value of the wrong type, an ambiguous name
    SET_RL = [["--set", "max_steps"], ["--set", "learning_rat=1"], ["--set", "max_steps=ten"], ["--set", "lora=maybe"]]
    SET_SFT = [["--set", "=3"], ["--set", "train.nope=1"], ["--set", "max_steps=ten"], ["--set", "max_turns=3"]]
    return {
        "tool": [
            [D, "--root", WS],
            [B, "--root", WS],
            [H, "--root", WS],
            [DEEP, "--root", WS],
            ['{"name": "view_file", "arguments": {}}', "--root", F],
        ],
        "score": [
            ["--gold", D, "--report", "{}"],
            ["--gold", B, "--report", "{}"],
            ["--gold", H, "--report", "{}"],
            ["--gold", '{"edited": {}}', "--report", B],
            ["--gold", DEEP, "--report", "{}"],
            ["--gold", '{"edited": {}}', "--report", '{"files": {}}', "--root", F],
            ["--gold", '{"edited": {"a.py": [[1, 2]]}}', "--report", '{"files": {"a.py": [[30, 5]]}}'],  # reversed
            ["--gold", '{"edited": {"a.py": [[0, 2]]}}', "--report", '{"files": {}}'],  # line 0
        ],
        "eval": [
            ["--tasks", D, "--policy", "heuristic", "--out", out],
            ["--tasks", B, "--policy", "heuristic", "--out", out],
            ["--tasks", HL, "--policy", "heuristic", "--out", out],
            ["--tasks", T, "--policy", "heuristic", "--out", F],
        ],
        "compare": [[D, D], [F, F], [str(b / "run_half"), str(b / "run_half")]],
        "runs": [[D], [F], [str(b / "run_half")], [D, "--level", "2"]],
        "eval-merge": [[out, D], [out, F], [out, str(b / "run_half")], [F, D]],
        "bon reverify": [
            [D, "--tasks", T, "--out", out],
            [B, "--tasks", T, "--out", out],
            [HL, "--tasks", D, "--out", out],
        ],
        "classify": [["<stdin", b"\xff\xfe\x00\n"], ["<stdin", b"not json\n"]],
        "data tasks": [["--source", D, "--out", out], ["--source", "swebench-lite", "--out", D]],
        "data corpus": [["--tasks", D], ["--tasks", B], ["--tasks", HL]],
        "data fc-queries": [
            ["--tasks", D, "--endpoint", "openai:model=m,base_url=http://127.0.0.1:9/v1", "--out", out],
            ["--tasks", HL, "--endpoint", "openai:model=m,base_url=http://127.0.0.1:9/v1", "--out", out],
            ["--tasks", T, "--endpoint", "nope:x=1", "--out", out],
            ["--tasks", T, "--endpoint", "openai:model=m,base_url=http://127.0.0.1:9/v1", "--out", D],
        ],
        "data mine-git": [[F, "--out", out], [D, "--out", out], [WS, "--out", D]],
        "data perturb": [
            ["--tasks", D, "--spec", "perturb:seed=0"],
            ["--tasks", HL, "--spec", "perturb:seed=0"],
            ["--tasks", T, "--spec", "perturb:nope=1"],
            ["--tasks", T, "--spec", "perturb:seed=x"],
            ["--tasks", T, "--spec", "perturb:seed=0", "--out", D],
        ],
        "bon pools": [["--tasks", D], ["--tasks", B]],
        "bon evaluate": [[D], [B], [HL]],
        "rl train": [
            ["--config", D],
            ["--config", B],
            ["--config", H],
            ["--config", BK],
            *[["--config", "tiny", *s] for s in SET_RL],
        ],
        "rl config": [[D], [B], [H], [BK], ["no-such-profile"], *[["tiny", *s] for s in SET_RL]],
        "rl log": [[F], [D], [B]],
        "trajectories analyze": [
            [B, "--out", F],
            [D, "--labels", D, "--out", out],
            [D, "--labels", B, "--out", out],
            [D, "--out", out],
            [F, "--out", out],
            [H, "--out", out],
        ],  # nothing parses: exit 2
        "trajectories export-atif": [[D, "--out", out], [B, "--out", out], [F, "--out", out], [HL, "--out", F]],
        "policies": [["--model-path", "nope"], ["--model-path", "/nonexistent/model"]],
        "replay": [
            [D],
            [F],
            [B],
            [str(b / "run_half")],
            ["example", "no__such-1"],
            ["example", "--html", D],
            ["example", "--reward", "nope"],
        ],
        "sft config": [[D], [B], [H], [BV], ["no-such-profile"], *[["tiny", *s] for s in SET_SFT]],
        "sft build": [["--config", D], ["--config", B], ["--config", BV], *[["--config", "tiny", *s] for s in SET_SFT]],
        "sft train": [["--config", D], ["--config", B], *[["--config", "tiny", *s] for s in SET_SFT]],
        "sft eval": [
            ["--config", B, "--model", D],
            ["--config", D, "--model", D],
            ["--config", "tiny", "--set", "eval.n_tasks=many", "--model", D],
        ],
        "data import": [
            ["swe-explore", D, "--out", out],
            ["swe-explore", B, "--out", out],
            ["locbench", HL, "--out", out],
            ["nonexistent-format", F, "--out", out],
            ["swe-explore", F, "--out", D],
        ],
        "report": [[D, "--out", out], [B, "--out", out], [F, "--out", out]],
        "scripted-server": [
            ["--tool-format", "nope", "--port", "0"],
            ["--port", "-5"],
            ["--max-concurrent", "0", "--port", "0"],
            ["--turns", "0", "--port", "0"],
            ["--delay-s", "-1", "--port", "0"],
        ],
        "sft launch": [[D, "--dry-run"], [B, "--dry-run"], *[["tiny", "--dry-run", *s] for s in SET_SFT]],
        "e2e": [
            ["--tasks", D, "--main", "openai:model=m,base_url=http://127.0.0.1:9/v1", "--search", "none", "--out", out],
            ["--tasks", B, "--main", "openai:model=m,base_url=http://127.0.0.1:9/v1", "--search", "none", "--out", out],
            ["--tasks", T, "--main", "not-a-spec", "--search", "none", "--out", out],
            ["--tasks", T, "--main", "openai:model=m,base_url=http://127.0.0.1:9/v1", "--search", "none", "--out", F],
        ],
    }


def test_every_command_has_bad_input_cases(bad):
    missing = set(leaf_commands()) - set(cases(bad)) - set(EXEMPT)
    assert not missing, f"add bad-input cases for {sorted(missing)}"


@pytest.mark.slow
def test_bad_input_gives_one_line_error_and_nonzero_exit(bad, monkeypatch):
    monkeypatch.delenv("FASBENCH_DEBUG", raising=False)
    runner = CliRunner()
    problems = []
    for cmd, argsets in cases(bad).items():
        for args in argsets:
            stdin = None
            if args and args[0] == "<stdin":
                stdin, args = args[1], []
            r = runner.invoke(app, cmd.split() + list(args), input=stdin)
            text = (r.stdout or "") + (r.stderr or "")
            what = f"fasbench {cmd} {' '.join(map(str, args))[:120]}"
            if r.exit_code == 0:
                problems.append(f"{what}: exit 0")
            elif r.exception is not None and not isinstance(r.exception, SystemExit):
                problems.append(f"{what}: raised {type(r.exception).__name__}: {r.exception}")
            elif "Traceback" in text:
                problems.append(f"{what}: printed a traceback")
            elif "internal error" in text:
                problems.append(f"{what}: reported an internal error, not a bad-input error: {text.strip()[:300]}")
            else:
                errors = [ln for ln in (r.stderr or "").splitlines() if ln.startswith("error:")]
                usage = "Usage:" in text or "Error" in text  # typer's usage-error panel
                if not errors and not usage:
                    problems.append(f"{what}: no error message: {text.strip()[:300]}")
    assert not problems, "\n".join(problems)


def test_real_process_prints_one_line_without_traceback(bad):
    """The installed entry point, in a real process: a binary file where JSON is expected."""
    r = subprocess.run(
        [sys.executable, "-m", "fasbench.cli", "score", "--gold", str(bad / "binary.bin"), "--report", "{}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: --gold:") and "not UTF-8" in r.stderr


def test_unexpected_errors_are_one_line_and_debuggable(monkeypatch):
    """An error nobody anticipated is still one line (exit 1, 'internal error'); FASBENCH_DEBUG=1
    lets it through with its traceback."""
    from fasbench import cli

    sub = typer.Typer()

    @sub.command("boom")
    def boom():
        raise KeyError("unexpected")

    t = typer.Typer(cls=cli.CliGroup)
    t.add_typer(sub, name="x")
    t.command("ok")(lambda: None)
    r = CliRunner().invoke(t, ["x", "boom"])
    assert r.exit_code == 1 and r.stderr.startswith("error: internal error (KeyError)") and r.stderr.count("\n") == 1
    monkeypatch.setenv("FASBENCH_DEBUG", "1")
    r = CliRunner().invoke(t, ["x", "boom"])
    assert isinstance(r.exception, KeyError)


def test_a_bad_policy_or_tool_set_fails_before_any_corpus_is_prepared(tmp_path, monkeypatch):
    """An unknown policy, policy parameter or tool set is the first and only line: no corpus prepared, no
    run folder made (it once came after 46 s of corpora and ~90 exclusion lines, leaving excluded.jsonl)."""
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    for args, want in (
        (["--policy", "bogus"], "unknown policy 'bogus'"),
        (["--policy", "heuristic:turnz=3"], "unknown parameter turnz"),
        (["--policy", "heuristic", "--toolset", "nope"], "unknown tool set 'nope'"),
    ):
        out = tmp_path / "out"
        r = CliRunner().invoke(app, ["eval", "--tasks", "swebench-lite", "--out", str(out), *args])
        assert r.exit_code == 2 and want in r.output, r.output
        assert not out.exists() and not (tmp_path / "cache" / "corpora").exists()
