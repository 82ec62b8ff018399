"""Experiment tracking as TRL users expect it: ``report_to`` names TRL's trackers; one that is not
installed is a one-line error (exit 2) when the profile loads, naming the extra that installs it,
before any data is built or model loaded; the default (tensorboard) writes event files, and every
run writes its JSONL step log."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fasbench.base.errors import UserError
from fasbench.training.profiles import check_report_to, report_to_list

ROOT = Path(__file__).resolve().parents[1]
MISSING = next((m for m in ("trackio", "wandb") if importlib.util.find_spec(m) is None), None)
need_missing = pytest.mark.skipif(MISSING is None, reason="trackio and wandb are both installed here")


def _run(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "FASBENCH_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )  # a hang guard only


@need_missing
@pytest.mark.parametrize(
    "cmd",
    [
        ["-m", "fasbench.cli", "sft", "train", "--config", "tiny"],
        ["-m", "fasbench.cli", "sft", "launch", "tiny"],
        ["-m", "fasbench.cli", "rl", "train", "--config", "tiny"],
    ],
    ids=["sft-train", "sft-launch", "rl-train"],
)
def test_a_missing_tracker_is_one_line_before_anything_loads(cmd, tmp_path):
    r = _run(*cmd, "--set", f"report_to={MISSING}", cache=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    err = r.stderr.strip()
    assert "\n" not in err and "Traceback" not in err and "internal error" not in err, err
    assert f"report_to '{MISSING}' needs the {MISSING} package" in err and "pip install 'fasbench[track]'" in err
    # no data built, no corpus fetched, no model made, no run folder written
    assert not [p for p in tmp_path.rglob("*") if p.is_file()], sorted(tmp_path.rglob("*"))[:5]


def test_report_to_values():
    assert report_to_list("none") == [] and report_to_list(None) == [] and report_to_list([]) == []
    assert report_to_list("tensorboard") == ["tensorboard"] and report_to_list(["a", "b"]) == ["a", "b"]
    with pytest.raises(UserError, match="did you mean 'tensorboard'"):
        check_report_to("tensorbord", "sft profile x")
    with pytest.raises(UserError, match="report_to expects a tracker name"):
        check_report_to(3, "rl config")
    if MISSING:
        with pytest.raises(UserError, match=r"\[track\]"):
            check_report_to(["tensorboard", MISSING], "rl config")
    from fasbench.rl.config import load_config
    from fasbench.sft.train import load_profile

    for name in ("cpu", "gpu", "long_cpu", "long_gpu"):  # every shipped profile but the smoke ones
        assert load_profile(name).train.report_to == "tensorboard" and load_config(name).report_to == "tensorboard"


def _default_profile(kind: str, tmp_path: Path) -> Path:
    """The shipped tiny profile with its ``report_to`` left out: the field's default."""
    data = yaml.safe_load((ROOT / "fasbench" / "configs" / f"{kind}_tiny.yaml").read_text())
    (data["train"] if kind == "sft" else data).pop("report_to", None)
    p = tmp_path / f"{kind}_default.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def _events(run: Path) -> list[Path]:
    return sorted(run.glob("runs/*/events.out.tfevents.*"))


@pytest.mark.slow
def test_sft_default_writes_tensorboard_events_and_the_step_log(tmp_path):
    from test_sft import _tiny_dataset

    from fasbench.sft.train import load_profile, read_log, train

    data = _tiny_dataset(tmp_path / "data")
    run = tmp_path / "run"
    p = load_profile(
        _default_profile("sft", tmp_path),
        {"out": str(data), "output_dir": str(run), "max_steps": 2, "per_device_train_batch_size": 2},
    )
    assert p.train.report_to == "tensorboard"
    train(p)
    assert [r["step"] for r in read_log(run) if "loss" in r] == [1, 2]
    ev = _events(run)
    assert ev and ev[0].stat().st_size > 0, sorted(run.rglob("*"))


@pytest.mark.slow
def test_rl_default_writes_tensorboard_events_and_the_step_log(tmp_path):
    import torch
    from test_rl import make_repo

    from fasbench.data.gitmine import mine
    from fasbench.rl.config import LOG_FILE, load_config
    from fasbench.rl.train import train as rl_train

    torch.set_num_threads(1)
    repo = make_repo(tmp_path / "calc-repo")
    tasks, _ = mine(repo)
    for t in tasks:  # a corpus per task: a clone at its parent commit (its own .git)
        co = tmp_path / f"co-{t.base_commit[:8]}"
        subprocess.run(["git", "clone", "-q", str(repo), str(co)], check=True)
        subprocess.run(["git", "-C", str(co), "checkout", "-q", t.base_commit], check=True)
        t.root = str(co)
    cfg = load_config(
        _default_profile("rl", tmp_path),
        {
            "output_dir": str(tmp_path / "run"),
            "max_steps": 2,
            "max_turns": 2,
            "max_completion_length": 48,
            "num_generations": 2,
            "per_device_train_batch_size": 2,
            "track_weights": False,
        },
    )
    assert cfg.report_to == "tensorboard"
    rl_train(cfg, tasks)
    steps = [json.loads(line) for line in (cfg.out / LOG_FILE).read_text().splitlines()]
    assert [r["step"] for r in steps if r.get("kind") == "step"] == [1, 2]
    ev = _events(cfg.out)
    assert ev and ev[0].stat().st_size > 0, sorted(cfg.out.rglob("*"))[:20]
