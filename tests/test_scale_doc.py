"""docs/scale.md cannot drift from the code: every command of its ``bash`` blocks is parsed by the
parser of the program it runs (the ``fasbench`` CLI's click tree, also as ``-m fasbench.cli`` under
``accelerate launch``, and accelerate's own parser), every profile, ``--set`` field, config file, make
target and pip extra it names exists; and the launch's dry run and its missing-data error run for
real (subprocesses, a real data set on disk)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "scale.md"
# Programs the doc runs that are not fasbench's and not installed on the CPU machine (vllm, trl's
# server), or whose command line is their own (tensorboard, hf): named, so a new one must be added here.
EXTERNAL = {"vllm", "trl", "tensorboard", "hf"}


def doc_commands(text: str) -> list[tuple[int, list[str]]]:
    """(line number, argv) of every command in the ``bash`` blocks, continuation lines joined,
    comments dropped, leading ``VAR=value`` assignments dropped, ``$VAR`` read as 1 (``--machine_rank $RANK``)."""
    out, block, start, buf = [], False, 0, ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            block = line.strip() == "```bash"
            continue
        if not block:
            continue
        if not buf:
            start = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        argv = [re.sub(r"\$\{?[A-Za-z_]\w*\}?", "1", a) for a in shlex.split(buf + line, comments=True)]
        buf = ""
        while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
            argv = argv[1:]
        if argv:
            out.append((start, argv))
    return out


COMMANDS = doc_commands(DOC.read_text(encoding="utf-8"))


def _check_sets(kind: str, sets: list[str], where: str):
    from fasbench.training.profiles import parse_sets

    if kind == "sft":
        from fasbench.sft.train import KIND
    else:
        from fasbench.rl.config import KIND
    parse_sets(KIND, sets)  # an unknown field or a value of the wrong type raises, naming it


def _check_profile(kind: str, name: str, where: str):
    from fasbench.training.profiles import CONFIGS_DIR

    assert (CONFIGS_DIR / f"{kind}_{name}.yaml").is_file(), f"{where}: no {kind} profile {name!r}"


def check_fasbench(args: list[str], where: str):
    """``fasbench ARGS`` parses with the CLI's own click command (nothing runs); its profile and
    ``--set`` fields exist."""
    import typer  # its click is its own (typer._click), hence the duck typing below

    from fasbench.cli import app

    cmd, path, rest = typer.main.get_command(app), [], list(args)
    while hasattr(cmd, "list_commands"):  # a group
        assert rest, f"{where}: `fasbench {' '.join(path)}` needs a subcommand"
        sub = cmd.get_command(None, rest[0])
        assert sub is not None, f"{where}: `fasbench {' '.join(path)}` has no subcommand {rest[0]!r}"
        path.append(rest.pop(0))
        cmd = sub
    ctx = cmd.make_context(" ".join(["fasbench", *path]), list(rest))  # raises on an unknown option or a missing value
    if path and path[0] in ("sft", "rl"):
        config = ctx.params.get("config")
        if config:
            _check_profile(path[0], config, where)
        _check_sets(path[0], list(ctx.params.get("set_") or []), where)


def check_module(module: str, args: list[str], where: str):
    if module == "fasbench.cli":
        check_fasbench(args, where)
    else:
        pytest.fail(f"{where}: a module the doc test does not know: {module}")


def check_accelerate(args: list[str], where: str):
    from accelerate.commands.launch import launch_command_parser

    assert args[0] == "launch", f"{where}: accelerate {args[0]}"
    try:
        ns = launch_command_parser().parse_args(args[1:])
    except SystemExit:
        pytest.fail(f"{where}: accelerate {' '.join(args)}: not accelerate's command line")
    assert ns.config_file and (ROOT / ns.config_file).is_file(), f"{where}: no accelerate config {ns.config_file}"
    assert ns.module, f"{where}: launch a module (-m), as the doc does everywhere"
    check_module(ns.training_script, ns.training_script_args, where)


def check_make(args: list[str], where: str):
    makefile = (ROOT / "Makefile").read_text()
    for a in args:
        if "=" in a:
            assert re.search(rf"^{re.escape(a.split('=')[0])}\s*\?=", makefile, re.M), f"{where}: no make variable {a}"
        elif a == ".venv/.installed":
            assert "STAMP  := $(VENV)/.installed" in makefile and "VENV   ?= .venv" in makefile
        else:
            assert re.search(rf"^{re.escape(a)}:", makefile, re.M), f"{where}: no make target {a}"


def check_pip(args: list[str], where: str):
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for a in args:
        m = re.fullmatch(r"(?:\.|fasbench)\[([\w,]+)\]", a)
        if m:
            for e in m.group(1).split(","):
                assert e in extras, f"{where}: pyproject.toml has no extra {e!r}"


@pytest.mark.parametrize("line,argv", COMMANDS, ids=[f"L{n}" for n, _ in COMMANDS])
def test_every_command_of_the_doc_parses(line, argv):
    where = f"docs/scale.md:{line}"
    prog = Path(argv[0]).name
    if prog == "fasbench":
        check_fasbench(argv[1:], where)
    elif prog in ("python", "python3") and argv[1] == "-m":
        check_module(argv[2], argv[3:], where)
    elif prog == "accelerate":
        check_accelerate(argv[1:], where)
    elif prog == "make":
        check_make(argv[1:], where)
    elif prog == "pip":
        check_pip(argv[1:], where)
    else:
        assert prog in EXTERNAL, f"{where}: a program the doc test does not know: {argv[0]}"


def test_the_doc_has_the_steps_a_launch_needs():
    progs = [(Path(a[0]).name, a[1:3]) for _, a in COMMANDS]
    assert ("fasbench", ["sft", "build"]) in progs and ("fasbench", ["data", "corpus"]) in progs
    assert any(p == "make" and any(a.startswith("TORCH=") for a in args) for p, args in progs), (
        "install with the torch pin"
    )
    order = (
        [n for n, a in COMMANDS if a[:3] == ["fasbench", "sft", "build"]][0],
        [n for n, a in COMMANDS if a[:2] == ["accelerate", "launch"]][0],
    )
    assert order[0] < order[1], "the data build comes before the launch"
    assert [a for _, a in COMMANDS if "--dry-run" in a], "a dry run before the launch"


def test_doc_walker_catches_drift():
    """The checks fail on a flag, a subcommand, a field or a profile that does not exist."""
    for bad, why in (
        (["sft", "build", "--config", "gpu", "--n-tasks", "2"], "No such option: --n-tasks"),
        (["sft", "biuld", "--config", "gpu"], "has no subcommand 'biuld'"),
        (["rl", "train", "--config", "gpu", "--set", "vllm_mod=server"], "unknown field 'vllm_mod'"),
        (["sft", "build", "--config", "gpux"], "no sft profile 'gpux'"),
    ):
        with pytest.raises(Exception, match=why):
            check_fasbench(bad, "drift")
    with pytest.raises(Exception, match="No such option: --dryrun"):  # the launch is a fasbench subcommand now
        check_fasbench(["sft", "launch", "gpu", "--dryrun"], "drift")


# ---------------------------------------------------------------- the launch, for real, as far as a CPU goes


def _launch(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "FASBENCH_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    return subprocess.run(
        [sys.executable, "-m", "fasbench.cli", "sft", "launch", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )  # a hang guard only


def test_the_old_module_form_is_refused_in_one_line(tmp_path):
    """``python -m fasbench.sft.launch`` was the launch before ``fasbench sft launch``: a stale command line
    (an accelerate script) is refused with what to run now, never a launch that silently does nothing."""
    env = {
        **os.environ,
        "FASBENCH_CACHE": str(tmp_path),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    r = subprocess.run(
        [sys.executable, "-m", "fasbench.sft.launch", "gpu"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "-m fasbench.cli sft launch PROFILE" in r.stderr


def test_launch_without_the_data_says_to_build_it(tmp_path):
    r = _launch("gpu", cache=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "no SFT data set at" in r.stderr and "fasbench sft build --config gpu" in r.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # nothing loaded, nothing written


@pytest.mark.slow
def test_dry_run_builds_the_trainer_arguments_of_the_gpu_profile(tmp_path):
    from test_sft import _tiny_dataset

    data = _tiny_dataset(tmp_path / "data", n=3)
    r = _launch("gpu", "--set", f"out={data}", "--dry-run", cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert got["profile"] == "gpu" and got["model"] == "Qwen/Qwen3-4B-Instruct-2507"
    assert got["examples"] == {"train": 3} and got["world_size"] == 1 and got["resumes_from"] is None
    assert got["args"]["gradient_accumulation_steps"] == 8 and got["global_batch"] == 8
    assert got["args"]["learning_rate"] == 1e-5 and got["args"]["bf16"] is True
    assert got["report_to"] == ["tensorboard"] and got["tensorboard_dir"].endswith("runs/sft-gpu/runs")
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # nothing trained, nothing written
