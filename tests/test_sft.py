"""SFT: real trajectory → harness episode → dataset; tiny training whose loss falls; resume;
profiles; the conversation in an example is exactly what the harness showed the policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fasbench.data.tasksets import TaskSetError
from fasbench.records import Gold, Task, write_tasks
from fasbench.sft.data import BuildConfig, _tasks, build, load_dataset
from fasbench.sft.reference import bre_to_rust, convert_actions, pipelines
from fasbench.sft.train import load_profile, read_log, train

REAL_TASK = "psf__requests-1766@gemini-3-pro"  # train split; corpus: the requests 2.0.1 sdist


class A:  # an (command, output) action as fasbench.trajectories.raw.read_actions gives
    def __init__(self, command, output=""):
        self.command, self.output = command, output


def test_shell_conversion_and_grouping():
    assert pipelines('grep -nE "a|b" x.py 2>&1 | head -n 5 && ls -F') == [
        [["grep", "-nE", "a|b", "x.py"], ["head", "-n", "5"]],
        [["ls", "-F"]],
    ]
    assert bre_to_rust(r"foo\|bar(") == r"foo|bar\(" and bre_to_rust("a.b", "fixed") == r"a\.b"
    acts = [
        A("ls"),
        A("grep -rn 'def login' src/", "src/pkg/auth.py:4:def login"),
        A("nl -ba src/pkg/auth.py | sed -n '1,20p'"),  # found by the grep of this turn: new turn
        A("cat src/pkg/models.py"),
        A("python reproduce.py"),  # running code ends the turn
        A("cd src && head -n 5 pkg/__init__.py"),
        A("echo hi > notes.txt"),
    ]
    conv = convert_actions(acts, "relace", query="login fails")
    assert [[c["name"] for c in g] for g in conv.turns] == [
        ["view_directory", "grep_search"],
        ["view_file", "view_file"],
        ["view_file"],
    ]
    assert conv.turns[1][0]["arguments"] == {"path": "src/pkg/auth.py", "view_range": [1, 20]}
    assert conv.turns[2][0]["arguments"] == {"path": "src/pkg/__init__.py", "view_range": [1, 5]}
    assert conv.unconvertible == {"python": 1, "echo (writes a file)": 1}
    fc = convert_actions(acts, "fastcontext")
    assert fc.turns[0][1] == {
        "name": "Grep",
        "arguments": {"pattern": "def login", "path": "src", "output_mode": "content"},
    }


@pytest.fixture(scope="module")
def real_data(tmp_path_factory):
    from fasbench.data.corpus import CorpusError

    out = tmp_path_factory.mktemp("sft") / "data"
    cfg = BuildConfig(
        task_ids=[REAL_TASK],
        max_tasks={"train": 1},
        min_reward=0.0,
        max_output_chars=1500,
        mix={"reference_traj": 1.0, "parallel_toolcalls": 1.0},
    )
    try:
        stats = build(cfg, out)
    except CorpusError as e:  # pragma: no cover - only without PyPI access on a fresh machine
        pytest.skip(f"corpus of {REAL_TASK} unavailable: {e}")
    return cfg, out, stats


def test_build_from_real_trajectory_reexecuted(real_data):
    from fasbench.records import iter_jsonl
    from fasbench.tools import make_toolset

    cfg, out, stats = real_data
    assert stats["examples"]["train"] == {"reference_traj": 1, "parallel_toolcalls": 1}
    assert stats["unconvertible"].get("python3", 0) >= 1  # the agent ran its reproduction script
    ds = load_dataset(out)["train"]
    ex = next(e for e in ds if e["source"] == "reference_traj")
    msgs = ex["messages"]
    assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "assistant"
    report = msgs[-1]["tool_calls"][0]["function"]
    assert report["name"] == "report_back" and list(report["arguments"]["files"]) == ["requests/auth.py"]
    first = msgs[2]["tool_calls"]
    assert len(first) >= 3 and isinstance(first[0]["function"]["arguments"], dict)  # a parallel turn, Json kept dicts
    assert {c["function"]["name"] for c in first} >= {"view_directory", "grep_search", "view_file"}
    # each observation is exactly what the harness tool returns on the real corpus
    rec = next(iter_jsonl(out / "episodes.jsonl"))
    ts = make_toolset("relace", rec["task"]["root"], None)
    from fasbench.sft.data import limits

    ts = make_toolset("relace", rec["task"]["root"], limits(cfg).tool)
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    grep = next(c for c in first if c["function"]["name"] == "grep_search")
    idx = [c["id"] for c in first].index(grep["id"])
    assert tool_msgs[idx]["content"] == ts.call("grep_search", grep["function"]["arguments"])[0]
    assert "requests/auth.py:" in tool_msgs[idx]["content"]
    par = next(e for e in ds if e["source"] == "parallel_toolcalls")
    assert par["messages"][-1]["role"] == "assistant" and 1 <= par["n_calls"] <= 6


@pytest.mark.slow
def test_tiny_training_loss_falls_and_resumes(real_data, tmp_path):
    _, out, _ = real_data
    run = tmp_path / "run"
    over = {
        "out": str(out),
        "output_dir": str(run),
        "max_steps": 6,
        "save_steps": 3,
        "learning_rate": 2e-3,
        "per_device_train_batch_size": 2,
    }
    final = train(load_profile("tiny", over))
    assert (final / "config.json").exists() and (run / "checkpoint-6").is_dir()
    losses = [r["loss"] for r in read_log(run) if "loss" in r]
    assert len(losses) == 6 and sum(losses[-2:]) < sum(losses[:2])
    # resume: two more steps continue from checkpoint-6 instead of starting over
    over["max_steps"] = 8
    train(load_profile("tiny", over))
    steps = [r["step"] for r in read_log(run) if "loss" in r]
    assert steps == list(range(1, 9))
    state = json.loads((run / "checkpoint-8" / "trainer_state.json").read_text())
    assert state["global_step"] == 8

    from fasbench.models import load_model

    model, tok = load_model(str(final))  # the saved final model loads for the hf policy
    assert tok.chat_template and model.config.vocab_size == len(tok)


@pytest.mark.slow
def test_gpu_profile_loads_and_first_step_runs_on_cpu_code_path(real_data, tmp_path):
    gpu = load_profile("gpu")
    t = gpu.train
    assert (t.model, t.num_train_epochs, t.learning_rate, t.min_lr, t.warmup_ratio, t.lora) == (
        "Qwen/Qwen3-4B-Instruct-2507",
        3,
        1e-5,
        1e-6,
        0.1,
        False,
    )
    assert t.lr_scheduler_type == "cosine_with_min_lr"
    assert (Path(__file__).parents[1] / "fasbench/configs/accelerate_sft_gpu.yaml").exists()
    _, out, _ = real_data
    # same code path, with only what this machine cannot do swapped: the model, bf16, the length
    p = load_profile(
        "gpu",
        {
            "out": str(out),
            "model": "tiny",
            "bf16": False,
            "dtype": None,
            "max_steps": 1,
            "max_length": 4096,
            "output_dir": str(tmp_path / "gpu"),
            "gradient_accumulation_steps": 1,
        },
    )
    train(p)
    assert [r["step"] for r in read_log(tmp_path / "gpu") if "loss" in r] == [1]
    with pytest.raises(ValueError, match="unknown field 'learning_rat'"):
        load_profile("tiny", {"learning_rat": 1.0})


def test_episode_messages_equal_what_the_policy_saw(tmp_path):
    from fasbench.harness import Limits, run_episode
    from fasbench.policies.scripted import ScriptedPolicy
    from fasbench.records import Gold, Task

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    task = Task(id="t", query="where is f", repo="x", gold=Gold(edited={"a.py": [[1, 2]]}), root=str(tmp_path))
    seen = []

    class Recording(ScriptedPolicy):
        def act(self, messages, tools, *, final):
            seen.append([dict(m) for m in messages])
            return super().act(messages, tools, final=final)

    pol = Recording(
        [
            {"calls": [{"name": "grep_search", "arguments": {"query": "def f"}}]},
            {"text": "thinking"},
            {"calls": [{"name": "report_back", "arguments": {"explanation": "f", "files": {"a.py": [[1, 2]]}}}]},
        ]
    )
    tr = run_episode(task, pol, "relace", Limits(max_turns=3))
    assert tr.report is not None and tr.meta.get("final_note_turn") == 2
    msgs = tr.to_messages()
    assert msgs[:-1] == seen[-1]  # notes included: the reminder after turn 2 and the last-turn note
    assert msgs[-1]["tool_calls"][0]["function"]["name"] == "report_back"


def test_over_length_drop_keeps_whole_examples_only(real_data, tmp_path):
    from fasbench.models import load_tokenizer
    from fasbench.sft.train import drop_long, example_tokens, make_trainer

    _, out, _ = real_data
    ds = load_dataset(out)["train"]
    tok = load_tokenizer("tiny")
    lens = sorted(example_tokens(ex, tok) for ex in ds)
    assert len(lens) == 2 and lens[0] < lens[1]
    # a limit between the two lengths keeps exactly the shorter example, whole
    kept = drop_long(ds, tok, lens[0])
    assert len(kept) == 1 and example_tokens(kept[0], tok) == lens[0]
    over = {
        "out": str(out),
        "output_dir": str(tmp_path / "run"),
        "max_steps": 1,
        "max_length": lens[0],
        "over_length": "drop",
    }
    assert len(make_trainer(load_profile("tiny", over)).train_dataset) == 1
    over["max_length"] = lens[0] - 1
    with pytest.raises(ValueError, match="longer than max_length"):
        make_trainer(load_profile("tiny", over))
    over["over_length"] = "cut"
    with pytest.raises(ValueError, match="over_length"):
        make_trainer(load_profile("tiny", over))


def test_building_the_tiny_trainer_and_its_data_loader_warns_nothing(real_data, tmp_path):
    """No deprecation or device warning (the red stderr of notebook 05): the checkpointing argument
    under its current name, and no pinned memory without an accelerator."""
    import warnings

    from fasbench.sft.train import make_trainer

    _, out, _ = real_data
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        trainer = make_trainer(
            load_profile(
                "tiny",
                {"out": str(out), "output_dir": str(tmp_path / "run"), "max_steps": 1, "gradient_checkpointing": True},
            )
        )
        next(iter(trainer.get_train_dataloader()))
    bad = [
        str(w.message)
        for w in got
        if issubclass(w.category, (FutureWarning, DeprecationWarning))
        or "pin_memory" in str(w.message)
        or "checkpointing" in str(w.message)
    ]
    assert not bad, bad
    assert trainer.args.activation_checkpointing is True  # the setting still reaches the trainer


def test_task_source_is_a_task_set_name(tmp_path):
    """``task_source`` takes any task-set name (fasbench.data.tasksets); a file's tasks without a split go to
    neither split (they would otherwise land in both train and dev)."""
    f = tmp_path / "tasks.jsonl"
    write_tasks(
        f,
        [
            Task(id=f"t{i}", query="q", repo="x/y", gold=Gold(edited={"a.py": [[1, 2]]}), split=s)
            for i, s in enumerate(["dev", "train", None, "test", "train"])
        ],
    )
    assert [t.id for t in _tasks(BuildConfig(task_source=str(f)), "policy", "train")] == ["t1", "t4"]
    assert [t.id for t in _tasks(BuildConfig(task_source=str(f)), "policy", "dev")] == ["t0"]
    assert [t.id for t in _tasks(BuildConfig(task_source=str(f), task_ids=["t4"]), "policy", "train")] == ["t4"]
    with pytest.raises(TaskSetError, match="names split 'dev'"):
        _tasks(BuildConfig(task_source=f"{f}:dev"), "policy", "train")
    with pytest.raises(ValueError, match="never uses test"):
        _tasks(BuildConfig(task_source=str(f)), "policy", "test")


def _tiny_dataset(root: Path, n: int = 4) -> Path:
    """A small SFT data set (report_back answers) saved as ``build`` saves it; no corpus needed."""
    from fasbench.sft.data import save_dataset
    from fasbench.tools import make_toolset

    root.mkdir(parents=True, exist_ok=True)
    schemas = make_toolset("relace", str(root), None).schemas
    rows = [
        {
            "messages": [
                {"role": "system", "content": "Find the code."},
                {"role": "user", "content": f"where is f{i}?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {
                                "name": "report_back",
                                "arguments": {"explanation": "here", "files": {f"m{i}.py": [[1, 3]]}},
                            },
                        }
                    ],
                },
            ],
            "tools": schemas,
            "source": "test",
            "task_id": f"t{i}",
            "split": "train",
            "n_turns": 1,
            "n_calls": 1,
            "trace_id": f"t{i}",
        }
        for i in range(n)
    ]
    save_dataset({"train": rows}, root / "dataset")
    return root


def _tree_digest(d: Path) -> dict:
    import hashlib

    return {p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sorted(d.iterdir())}


@pytest.mark.slow
def test_max_steps_is_a_total_rerun_trains_nothing_and_keeps_final(tmp_path, capsys):
    from fasbench.sft.train import read_state

    data = _tiny_dataset(tmp_path / "data")
    run = tmp_path / "run"
    over = {"out": str(data), "output_dir": str(run), "max_steps": 2, "per_device_train_batch_size": 2}
    final = train(load_profile("tiny", over))  # tiny's save_steps (4) does not divide max_steps
    before = _tree_digest(final)
    assert read_state(run)["steps_this_call"] == 2 and read_state(run)["steps_resumed"] == 0
    assert train(load_profile("tiny", over)) == final
    raw = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in raw if r["kind"] == "step"] == [1, 2]  # the raw log: no step trained twice
    assert _tree_digest(final) == before, "a rerun at max_steps overwrote final/"
    st = read_state(run)
    assert (st["global_step"], st["steps_this_call"], st["steps_resumed"], st["final_written"]) == (2, 0, 2, False)
    assert "resumed at step 2 of max_steps=2" in capsys.readouterr().out
    # raising max_steps continues from step 2 (a checkpoint was saved at the last step)
    over["max_steps"] = 3
    train(load_profile("tiny", over))
    raw = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in raw if r["kind"] == "step"] == [1, 2, 3]
    assert read_state(run)["steps_this_call"] == 1 and read_state(run)["steps_resumed"] == 2
