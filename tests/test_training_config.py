"""One config shape for SFT and RL (fasbench/training/profiles.py): the same profile lookup, the same
key and type checks with one-line errors, the same typed ``--set`` overrides, one rule for None,
``lora_alpha`` a field of both, one step log and ``last_checkpoint``."""

from __future__ import annotations

import json
import re

import pytest

from fasbench.base.errors import UserError
from fasbench.rl.config import KIND as RL
from fasbench.rl.config import RLConfig, load_config
from fasbench.sft.train import KIND as SFT
from fasbench.sft.train import load_profile
from fasbench.training.log import last_checkpoint, read_log
from fasbench.training.profiles import parse_sets, profiles


def test_every_shipped_profile_loads_with_the_one_loader():
    assert {"tiny", "cpu", "gpu", "long_cpu", "long_gpu"} <= set(profiles(RL)) & set(profiles(SFT))
    for name in profiles(RL):
        assert isinstance(load_config(name), RLConfig)
    for name in profiles(SFT):
        p = load_profile(name)
        assert p.name == name and p.train.lora_alpha >= 1


def test_lookup_by_name_or_path_is_the_same_for_both(tmp_path):
    (tmp_path / "mine.yaml").write_text("max_steps: 3\nlearning_rate: 1e-4\n")  # YAML 1.1: 1e-4 is a string
    assert (load_config(tmp_path / "mine.yaml").max_steps, load_config(tmp_path / "mine.yaml").learning_rate) == (
        3,
        1e-4,
    )
    (tmp_path / "s.yaml").write_text("train:\n  max_steps: 3\n")
    assert load_profile(tmp_path / "s.yaml").train.max_steps == 3
    for load, kind in ((load_config, "rl"), (load_profile, "sft")):
        with pytest.raises(UserError, match=f"^{kind} profile 'nope': no such file and no shipped profile .*tiny"):
            load("nope")


@pytest.mark.parametrize(
    "text, msg",
    [
        ("max_step: 3\n", r"unknown field 'max_step' \(did you mean 'max_steps'\?\)"),
        ("max_steps: ten\n", r"max_steps expects an integer, got 'ten'"),
        ("learning_rate: 1e-x\n", r"learning_rate expects a number, got '1e-x'"),
        ("max_steps: null\n", r"max_steps expects an integer, got None"),
        ("lora: 1\n", r"lora expects true or false, got 1"),
        ("init_from: a\n", r"init_from expects a list of strings, got 'a'"),
        ("- a\n", r"a profile is a mapping of config fields, got list"),
        ("a: [\n", r"not valid YAML"),
    ],
)
def test_rl_profile_errors_name_the_key_and_value(tmp_path, text, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(UserError, match=msg) as e:
        load_config(p)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "text, msg",
    [
        ("trian:\n  max_steps: 3\n", r"unknown key 'trian' \(did you mean 'train'\?\)"),
        ("train:\n  learning_rat: 0.1\n", r"train: unknown field 'learning_rat' \(did you mean 'learning_rate'\?\)"),
        ("build:\n  max_tasks: {train: many}\n", r"build: max_tasks expects a mapping of integers, got"),
        ("eval: 3\n", r"section 'eval' must be a mapping of fields, got 3"),
        ("max_steps: 3\n", r"'max_steps' is a field of the train section; write it there"),
    ],
)
def test_sft_profile_errors_name_the_key_and_value(tmp_path, text, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(UserError, match=msg):
        load_profile(p)


@pytest.mark.parametrize(
    "kind, text, msg",
    [
        ("rl", "1: 2\n", "unknown field 1"),  # YAML keys need not be strings
        ("rl", "?\n", "unknown field None"),
        ("sft", "train:\n  1: x\n", "train: unknown field 1"),
        ("rl", "init_from: [a, 1]\n", r"init_from expects a list of strings, got \['a', 1\]"),
        ("rl", "max_steps: true\n", "max_steps expects an integer, got True"),
        ("rl", "max_steps: 3.0\n", "max_steps expects an integer, got 3.0"),
        ("rl", "report_to: 3\n", "report_to expects a string or a list of strings or null, got 3"),
        ("sft", "build:\n  mix: {a: x}\n", r"build: mix expects a mapping of numbers, got \{'a': 'x'\}"),
    ],
)
def test_profile_errors_name_the_file_key_and_value(tmp_path, kind, text, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(UserError) as e:
        (load_config if kind == "rl" else load_profile)(p)
    assert str(e.value).startswith(f"{kind} profile {p}: ") and "\n" not in str(e.value)
    assert re.search(msg, str(e.value)), str(e.value)


def test_values_read_as_their_field_type():
    """Python overrides go through the same checks as the file; a tuple is a list, an int a float
    where a number goes, a string that reads as a number a number; a null section keeps the defaults."""
    cfg = load_config("tiny", {"task_ids": ("a", "b"), "tool_timeout_s": 3, "learning_rate": "1e-4"})
    assert (cfg.task_ids, cfg.tool_timeout_s, cfg.learning_rate) == (["a", "b"], 3.0, 1e-4)
    assert isinstance(cfg.tool_timeout_s, float)
    with pytest.raises(UserError, match=r"^rl profile .*rl_tiny.yaml: max_steps expects an integer, got '3'$"):
        load_config("tiny", {"max_steps": "3"})
    with pytest.raises(UserError, match=r"^sft profile .*sft_tiny.yaml: eval: max_turns expects an integer, got '2'$"):
        load_profile("tiny", {"eval.max_turns": "2"})
    assert load_profile("tiny", {"reference_runs": ("x",)}).build.reference_runs == ["x"]


def test_a_profile_s_own_checks_still_run(tmp_path):
    """The dataclasses' own checks (names of tool sets, rewards, ranges) run on the checked values."""
    (tmp_path / "r.yaml").write_text("toolset: nope\n")
    with pytest.raises(ValueError, match="^rl config: toolset 'nope' unknown; choose one of relace"):
        load_config(tmp_path / "r.yaml")
    with pytest.raises(ValueError, match="^rl config: max_steps must be >= 1, got 0$"):
        load_config("tiny", sets=["max_steps=0"])
    (tmp_path / "s.yaml").write_text("train:\n  over_length: cut\neval:\n")
    with pytest.raises(ValueError, match="^train.over_length must be 'truncate' or 'drop', got 'cut'$"):
        load_profile(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text("eval:\n")  # a null section: its defaults
    assert load_profile(tmp_path / "s.yaml").eval.max_turns == 3


def test_set_values_are_typed_from_the_field():
    cfg = load_config(
        "tiny",
        sets=[
            "max_steps=7",
            "learning_rate=1e-4",
            "lora=true",
            "n_tasks=null",
            "task_ids=[a, b]",
            "model=123",
            "grpo={lr_scheduler_type: constant}",
        ],
    )
    assert (cfg.max_steps, cfg.learning_rate, cfg.lora, cfg.n_tasks, cfg.task_ids, cfg.model) == (
        7,
        1e-4,
        True,
        None,
        ["a", "b"],
        "123",
    )  # a str field takes the text as is
    assert isinstance(cfg.learning_rate, float) and cfg.grpo == {"lr_scheduler_type": "constant"}
    assert load_config("tiny", sets=["learning_rate=1"]).learning_rate == 1.0  # an int where a float goes
    p = load_profile(
        "tiny",
        sets=[
            "max_steps=3",
            "eval.max_turns=5",
            "build.max_turns=6",
            "policy=sequential:turns=3",
            "reference_runs=[x]",
            "lora_alpha=8",
            "name=other",
        ],
    )
    assert (
        p.train.max_steps,
        p.eval.max_turns,
        p.build.max_turns,
        p.build.policy,
        p.build.reference_runs,
        p.train.lora_alpha,
        p.name,
    ) == (3, 5, 6, "sequential:turns=3", ["x"], 8, "other")


@pytest.mark.parametrize(
    "kind, pair, msg",
    [
        (RL, "max_steps=ten", r"--set max_steps=ten: max_steps expects an integer, got 'ten'"),
        (RL, "max_steps", r"--set expects key=value, got 'max_steps'"),
        (RL, "=3", r"--set expects key=value"),
        (RL, "learning_rat=1", r"unknown field 'learning_rat' \(did you mean 'learning_rate'\?\)"),
        (RL, "train.max_steps=1", r"no section 'train'"),
        (RL, "max_steps=null", r"max_steps expects an integer, got 'null'"),
        (SFT, "max_turns=3", r"field 'max_turns' is in several sections; write build.max_turns or eval.max_turns"),
        (SFT, "train.nope=1", r"train has no field 'nope'"),
        (SFT, "lora=maybe", r"lora expects true or false, got 'maybe'"),
    ],
)
def test_bad_set_is_a_one_line_error(kind, pair, msg):
    with pytest.raises(UserError, match=msg):
        parse_sets(kind, [pair])


def test_none_is_a_value_and_a_missing_key_keeps_the_profile():
    assert load_config("cpu").n_tasks == 4
    assert load_config("cpu", {"n_tasks": None}).n_tasks is None  # None sets None where the type allows it
    assert load_config("cpu", {}).n_tasks == 4
    with pytest.raises(UserError, match="max_steps expects an integer, got None"):
        load_config("cpu", {"max_steps": None})
    assert load_profile("gpu", {"dtype": None}).train.dtype is None
    assert load_profile("gpu").train.dtype == "bfloat16"


def test_lora_alpha_is_a_field_of_both():
    from fasbench.rl.train import peft_config as rl_peft
    from fasbench.sft.train import peft_config as sft_peft

    cfg = load_config("tiny", {"lora": True, "lora_r": 4, "lora_alpha": 12})
    assert (rl_peft(cfg).r, rl_peft(cfg).lora_alpha) == (4, 12)
    assert RLConfig().lora_alpha == 2 * RLConfig().lora_r  # the old hard-coded scale is the default
    tc = load_profile("cpu", {"lora_alpha": 12}).train
    assert sft_peft(tc).lora_alpha == 12
    assert rl_peft(load_config("tiny")) is None


def test_one_step_log_and_last_checkpoint(tmp_path):
    assert read_log(tmp_path) == [] and last_checkpoint(tmp_path / "none") is None
    rows = [
        {"step": 1, "loss": 3.0, "kind": "step"},
        {"step": 2, "loss": 2.0, "kind": "step"},
        {"step": 2, "eval_loss": 2.5, "kind": "eval"},
        {"step": 2, "train_runtime": 1.0, "kind": "summary"},
        {"step": 2, "loss": 1.5, "kind": "step"},  # step 2 again after a resume: the last record wins
        {"step": 3, "loss": 1.0, "kind": "step"},
    ]
    (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_log(tmp_path)
    assert [(r["step"], r["kind"]) for r in got] == [(1, "step"), (2, "step"), (2, "eval"), (3, "step"), (2, "summary")]
    assert got[1]["loss"] == 1.5
    # a log written before the kind field (SFT wrote trainer.state.log_history): kinds from the keys
    (tmp_path / "old.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "kind"}) + "\n" for r in rows[:4])
    )
    assert [r.get("loss") for r in read_log(tmp_path, "old.jsonl") if "loss" in r] == [3.0, 2.0]
    for n in (2, 10):
        (tmp_path / f"checkpoint-{n}").mkdir()
    assert last_checkpoint(tmp_path).endswith("checkpoint-10")


def test_set_on_both_clis_changes_the_resolved_config():
    from typer.testing import CliRunner

    from fasbench.cli import app

    r = CliRunner().invoke(app, ["rl", "config", "tiny", "--set", "max_steps=5", "--set", "lora_alpha=4"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert (got["max_steps"], got["lora_alpha"]) == (5, 4)
    r = CliRunner().invoke(app, ["sft", "config", "tiny", "--set", "max_steps=5", "--set", "eval.max_turns=7"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert (got["train"]["max_steps"], got["eval"]["max_turns"], got["build"]["max_turns"]) == (5, 7, 4)


def test_launcher_takes_set_and_fails_in_one_line(capsys):
    from fasbench.cli import run_command

    code = run_command(["sft", "launch", "tiny", "--set", "max_steps=ten"])
    err = capsys.readouterr().err
    assert code == 2 and err == "error: --set max_steps=ten: max_steps expects an integer, got 'ten'\n"
