"""The FastContext-faithful profiles (configs/sft_fastcontext_gpu.yaml, rl_fastcontext_gpu.yaml): their
trainer arguments build on this CPU machine with the release's values, and every setting names the
source it copies (a comment on its line or right above it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fasbench.rl.config import load_config
from fasbench.rl.train import grpo_args
from fasbench.sft.train import load_profile, sft_config

CONFIGS = Path(__file__).parents[1] / "fasbench" / "configs"
# where the run's files go, how it is logged and which stand-in data: fasbench's own, no release line
FASBENCH_ONLY = {
    "split",
    "n_tasks",
    "corpus_mode",
    "reference_runs",
    "max_tasks",
    "bf16",
    "dtype",
    "save_steps",
    "save_total_limit",
    "report_to",
    "track_weights",
    "output_dir",
    "vllm_gpu_memory_utilization",
    "vllm_enable_sleep_mode",
    "reference_max_turns",
    "reward",
}


def test_rl_profile_trainer_arguments_are_the_releases(tmp_path):
    cfg = load_config("fastcontext_gpu", {"output_dir": str(tmp_path)})
    assert (cfg.toolset, cfg.reward, cfg.judge.startswith("openai:")) == ("fastcontext", "fastcontext", True)
    a = grpo_args(cfg, use_cpu=True)
    assert a.num_generations == 16 and a.generation_batch_size == 32  # 2 prompts x 16 samples a step
    assert cfg.advantage == "raw" and a.scale_rewards == "none" and a.mask_truncated_completions is True
    assert a.generation_kwargs == {"max_tokens": 2048} and a.vllm_max_model_length == 65536
    assert a.max_completion_length == 65536 - 4096 and a.max_tool_calling_iterations == 7
    assert (a.learning_rate, a.epsilon, a.epsilon_high, a.beta, a.temperature, a.top_p) == (
        1e-6,
        0.2,
        0.28,
        0.0,
        1.0,
        1.0,
    )
    assert (a.weight_decay, a.adam_beta1, a.adam_beta2, a.entropy_coef, a.loss_type) == (0.1, 0.9, 0.98, 0.0, "grpo")
    assert a.max_steps == 200 and getattr(a.lr_scheduler_type, "value", a.lr_scheduler_type) == "constant"


def test_sft_profile_trainer_arguments_are_the_releases(tmp_path):
    p = load_profile("fastcontext_gpu")
    assert (p.build.toolset, p.build.reward, p.build.min_reward, p.build.mix["reference_traj"]) == (
        "fastcontext",
        "fastcontext",
        0.0,
        0.0,
    )
    assert p.build.multiturn_release is True  # gen_multiturn_traj.py @716fe4b: no tools, no reward filter
    a = sft_config(p.train, tmp_path, has_eval=True, use_cpu=True)
    assert (a.num_train_epochs, a.learning_rate, a.lr_scheduler_kwargs, a.warmup_steps) == (
        3,
        1e-5,
        {"min_lr": 1e-6},
        0.1,
    )
    assert (a.weight_decay, a.adam_beta1, a.adam_beta2) == (0.1, 0.9, 0.95)
    assert a.per_device_train_batch_size * a.gradient_accumulation_steps * 8 == 64  # global batch 64 on 8 GPUs
    assert (p.eval.temperature, p.eval.max_new_tokens, p.eval.max_turns) == (0.7, 4096, 4)


@pytest.mark.parametrize("name", ["sft_fastcontext_gpu.yaml", "rl_fastcontext_gpu.yaml"])
def test_every_setting_names_its_source(name):
    lines = (CONFIGS / name).read_text().splitlines()
    missing = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([a-z_0-9]+):\s*(.*)$", line)
        if not m or m.group(2) in ("build", "train", "eval", "grpo", "name", "init_from"):
            continue
        commented = "#" in m.group(3) or (i > 0 and lines[i - 1].strip().startswith("#"))
        if not commented and m.group(2) not in FASBENCH_ONLY:
            missing.append(line)
    assert not missing, missing


def test_fc_profiles_query_source(tmp_path, capsys):
    """Both FastContext profiles give the explorer a task's generated query (meta.fc_query) and else its
    problem statement; the RL data set says how many tasks lack one, and both files say so."""
    from fasbench.records import Gold, Task
    from fasbench.rl.train import build_dataset
    from fasbench.sft.data import episode_query
    from fasbench.tools import make_toolset
    from fasbench.tools.fastcontext_query import FC_QUERY, FC_QUERY_SOURCE

    (tmp_path / "a.py").write_text("x = 1\n")
    plain = Task(
        id="p",
        query="The parser crashes on empty input.",
        repo="x/y",
        gold=Gold(edited={"a.py": [[1, 1]]}),
        root=str(tmp_path),
    )
    gen = Task(
        id="g",
        query="The parser crashes on empty input.",
        repo="x/y",
        gold=Gold(edited={"a.py": [[1, 1]]}),
        root=str(tmp_path),
        meta={FC_QUERY: "Where does the parser read its input?", FC_QUERY_SOURCE: "query_gen.py@5fb8c1d"},
    )
    rl = load_config("fastcontext_gpu", {"output_dir": str(tmp_path / "rl")})
    users = [r["prompt"][-1]["content"] for r in build_dataset([plain, gen], rl)]
    assert users == [
        "<query>The parser crashes on empty input.</query>",
        "<query>Where does the parser read its input?</query>",
    ]
    assert "rl: 1 of 2 tasks have no FastContext generated query" in capsys.readouterr().out
    sft = load_profile("fastcontext_gpu")
    ts = make_toolset(sft.build.toolset, str(tmp_path))
    assert [episode_query(ts, t) for t in (plain, gen)] == [plain.query, "Where does the parser read its input?"]
    for name in ("sft_fastcontext_gpu.yaml", "rl_fastcontext_gpu.yaml"):
        text = " ".join((CONFIGS / name).read_text().split())
        assert "trains on problem statements" in text.replace("# ", "") and "fasbench data fc-queries" in text, name
