"""Every shipped GPU profile constructs its TRL trainer arguments on this CPU machine (no model is
downloaded), and every shipped accelerate launch config loads with accelerate's own config class
and fits the profile it launches."""

from __future__ import annotations

from pathlib import Path

import pytest

from fasbench.rl.config import load_config
from fasbench.rl.train import grpo_args, tool_rounds
from fasbench.sft.train import load_profile, sft_config

CONFIGS = Path(__file__).parents[1] / "fasbench" / "configs"
SFT_GPU = sorted(p.stem.removeprefix("sft_") for p in CONFIGS.glob("sft_*gpu*.yaml"))
RL_GPU = sorted(p.stem.removeprefix("rl_") for p in CONFIGS.glob("rl_*gpu*.yaml"))
ACCELERATE = sorted(CONFIGS.glob("accelerate_*.yaml"))


def test_there_are_gpu_profiles_and_launch_configs():
    assert SFT_GPU and RL_GPU and len(ACCELERATE) >= 3


@pytest.mark.parametrize("name", SFT_GPU)
def test_sft_gpu_profile_trainer_arguments(name, tmp_path):
    p = load_profile(name)
    args = sft_config(p.train, tmp_path, has_eval=True, use_cpu=True)
    t = p.train
    assert (args.learning_rate, args.num_train_epochs, args.bf16) == (t.learning_rate, t.num_train_epochs, t.bf16)
    assert args.gradient_accumulation_steps == t.gradient_accumulation_steps and args.max_length == t.max_length
    if t.lr_scheduler_type == "cosine_with_min_lr":
        assert args.lr_scheduler_kwargs == {"min_lr": t.min_lr}


@pytest.mark.parametrize("name", RL_GPU)
def test_rl_gpu_profile_trainer_arguments(name, tmp_path):
    cfg = load_config(name, {"output_dir": str(tmp_path)})
    args = grpo_args(cfg, use_cpu=True)
    assert args.num_generations == cfg.num_generations and args.max_tool_calling_iterations == tool_rounds(cfg)
    assert (args.epsilon, args.epsilon_high, args.beta, args.learning_rate) == (
        cfg.epsilon,
        cfg.epsilon_high,
        cfg.beta,
        cfg.learning_rate,
    )


@pytest.mark.parametrize("path", ACCELERATE, ids=lambda p: p.stem)
def test_accelerate_configs_load_and_fit_the_profiles(path):
    from accelerate.commands.config.config_args import ClusterConfig

    c = ClusterConfig.from_yaml_file(str(path))
    assert c.num_processes >= 1 and c.mixed_precision == "bf16" and not c.use_cpu
    assert str(c.distributed_type).rsplit(".", 1)[-1] in ("FSDP", "DEEPSPEED")
    if "deepspeed" in path.stem:
        assert c.deepspeed_config["zero_stage"] == 3
    if "rl" in path.stem or "deepspeed" in path.stem:
        for name in RL_GPU:  # GRPO: the rollouts of a step are whole groups of num_generations
            cfg = load_config(name)
            per_step = c.num_processes * cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
            assert per_step % cfg.num_generations == 0, (path.name, name, per_step, cfg.num_generations)
