"""The config of a GRPO run: one flat :class:`RLConfig` (a YAML profile ``fasbench/configs/rl_*.yaml``,
read by the loader shared with SFT, :mod:`fasbench.training.profiles`), and the names of the files a
run writes in its output folder."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fasbench.data.splits import SPLITS
from fasbench.harness import Limits
from fasbench.scoring.judge import make_judge
from fasbench.scoring.reward import DEFAULT_REWARD, REWARDS, judged_rewards
from fasbench.tools import TOOLSETS, ToolLimits
from fasbench.tools.base import PROMPTS
from fasbench.training.profiles import Kind, expand, load

LOG_FILE = "rl_log.jsonl"  # the step log (fasbench.training.log)
ROLLOUT_FILE = "rollouts.jsonl"  # every rollout as a harness Trace
SUMMARY_FILE = "summary.json"  # the headline numbers of the last training call
SKIPPED_FILE = "skipped_tasks.jsonl"  # training tasks whose corpus could not be built, with the reason


@dataclass
class RLConfig:
    """One flat config of a GRPO run (a YAML file in ``fasbench/configs/rl_*.yaml``)."""

    # -- model
    model: str = "tiny"  # models.resolve_model name: tiny | smollm2-offline | a checkpoint dir | a hub id
    init_from: list[str] = field(default_factory=list)  # checkpoints tried first, in order ({cache} = cache dir)
    dtype: str | None = None  # float32 on CPU, bfloat16 on GPU when None
    lora: bool = False  # train a LoRA adapter instead of all weights
    lora_r: int = 16  # LoRA rank
    lora_alpha: int = 32  # LoRA scale (alpha / r multiplies the update); was 2 * lora_r, hard-coded
    # -- tasks
    tasks: str = (
        "swebench-lite"  # a task-set name (fasbench.data.tasksets): SOURCE[:SPLIT] | a Task .jsonl[.gz] | git:PATH
    )
    split: str | None = (
        "train"  # fasbench's own split (train/dev/test = fasbench-train/...); None = all; a split in `tasks` wins
    )
    n_tasks: int | None = 4  # first n tasks whose corpus materialises (skips: OUT/skipped_tasks.jsonl); None = all
    task_ids: list[str] | None = None  # exactly these tasks (overrides split/n_tasks)
    corpus_mode: str | None = None  # offline | online | None (each task's default; fasbench.data.corpora)
    # -- episode: the same limits evaluation uses
    toolset: str = "relace"  # a name of fasbench.tools.TOOLSETS
    prompt: str = "published"  # published | compact: the protocol shown (fasbench.tools.compact; relace only)
    reward: str = DEFAULT_REWARD  # a name in fasbench.scoring.reward.REWARDS
    judge: str = (
        ""  # a judged reward (fastcontext): its LLM judge, openai:model=NAME,base_url=URL ("" = quality term 0)
    )
    max_turns: int = 4  # turn limit as harness.Limits (FastContext: +1 extra last turn; TRL: rl.train.tool_rounds)
    max_calls_per_turn: int = 8  # parallel calls per turn; extra calls get the harness's error
    tool_timeout_s: float = 10.0  # wall-clock limit of one tool call
    max_output_chars: int = 4000  # observation cap (same cut and note as evaluation)
    report_contract: str = "free"  # free (published) | ids: shown ranges carry IDs, the answer cites IDs
    # (fasbench.tools.contract, fasbench's extension; Limits.report_contract)
    # -- GRPO
    num_generations: int = 4  # rollouts per prompt (the group)
    per_device_train_batch_size: int = 4  # rollouts per device per step
    gradient_accumulation_steps: int = 1
    max_completion_length: int = 512  # token budget of a WHOLE episode: every turn's model tokens + observations
    max_steps: int = 4  # optimiser steps
    learning_rate: float = 1e-6
    epsilon: float = 0.2  # lower clip
    epsilon_high: float = 0.28  # upper clip (DAPO clip-higher)
    beta: float = 0.0  # KL coefficient; 0 = no reference model
    loss_type: str = "dapo"  # TRL loss aggregation
    # grpo: TRL's advantage (reward - group mean, divided by the std as grpo.scale_rewards says) |
    # raw: the reward itself, as slime's --disable-rewards-normalization (FastContext's RL) uses it
    advantage: str = "grpo"
    temperature: float = 1.0  # sampling temperature of rollouts
    seed: int = 0
    torch_threads: int | None = None  # CPU threads for torch (1 is much faster on a busy shared CPU); None = torch's
    gradient_checkpointing: bool = False
    bf16: bool = False
    use_vllm: bool = False  # generate with vLLM (GPU)
    vllm_mode: str = "colocate"  # colocate | server
    vllm_gpu_memory_utilization: float = 0.3  # colocate: share of GPU memory vLLM takes
    # -- output
    output_dir: str = "{cache}/runs/rl-tiny"  # checkpoints, rl_log.jsonl, rollouts.jsonl ({cache} = cache dir)
    save_steps: int = 2  # checkpoint every n steps (resume picks the last)
    save_total_limit: int = 2
    logging_steps: int = 1
    report_to: str | list[str] | None = (
        "tensorboard"  # TRL's trackers: tensorboard | trackio | wandb | none | auto | a list
    )
    resume: bool = True  # continue from the last checkpoint in output_dir when there is one
    log_rollouts: bool = True  # write every rollout as a Trace to rollouts.jsonl
    track_weights: bool = True  # keep a copy of the initial weights and report how far training moved them
    grpo: dict = field(default_factory=dict)  # any other GRPOConfig field, passed through

    def __post_init__(self):
        if self.toolset not in TOOLSETS:
            raise ValueError(f"rl config: toolset {self.toolset!r} unknown; choose one of {', '.join(TOOLSETS)}")
        if self.reward not in REWARDS:
            raise ValueError(f"rl config: reward {self.reward!r} unknown; choose one of {', '.join(REWARDS)}")
        if self.split is not None and self.split not in (*SPLITS, *(f"fasbench-{s}" for s in SPLITS)):
            raise ValueError(
                f"rl config: split {self.split!r} unknown; choose one of fasbench's own splits "
                f"{', '.join(SPLITS)} (or fasbench-{'/fasbench-'.join(SPLITS)}; null: all)"
            )
        if self.prompt not in PROMPTS:
            raise ValueError(f"rl config: prompt {self.prompt!r} unknown; choose one of {', '.join(PROMPTS)}")
        if self.advantage not in ("grpo", "raw"):
            raise ValueError(f"rl config: advantage {self.advantage!r} unknown; choose grpo or raw")
        if self.corpus_mode not in (None, "offline", "online"):
            raise ValueError(f"rl config: corpus_mode {self.corpus_mode!r} unknown; choose offline, online or null")
        if self.judge:
            if not REWARDS[self.reward].judged:
                raise ValueError(
                    f"rl config: judge applies to the {', '.join(judged_rewards())} rewards, not {self.reward!r}"
                )
            make_judge(self.judge)  # a bad spec fails here, not at the first reward
        for k in ("max_turns", "max_calls_per_turn", "num_generations", "max_completion_length", "max_steps"):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"rl config: {k} must be >= 1, got {getattr(self, k)}")
        if self.num_generations < 2:
            raise ValueError("rl config: num_generations must be >= 2 (GRPO compares rollouts within a group)")

    @property
    def limits(self) -> Limits:
        return Limits(
            max_turns=self.max_turns,
            max_calls_per_turn=self.max_calls_per_turn,
            report_contract=self.report_contract,
            tool=ToolLimits(
                timeout_s=self.tool_timeout_s,
                max_output_chars=self.max_output_chars,
                max_calls_per_turn=self.max_calls_per_turn,
                prompt=self.prompt,
            ),
        )

    @property
    def out(self) -> Path:
        return Path(expand(self.output_dir))

    def to_dict(self) -> dict:
        return asdict(self)


KIND = Kind("rl", {"": RLConfig})


def load_config(
    name_or_path: str | os.PathLike, overrides: Mapping[str, Any] | None = None, sets: Sequence[str] = ()
) -> RLConfig:
    """An :class:`RLConfig` from a profile name (``tiny`` -> ``fasbench/configs/rl_tiny.yaml``) or a
    YAML file; ``overrides`` (``{field: value}``) then ``sets`` (``["field=value"]``, ``--set``) win.
    Unknown fields and values of the wrong type are one-line errors (fasbench.training.profiles)."""
    return load(KIND, name_or_path, overrides, sets).parts[""]


def resolve_model_spec(cfg: RLConfig) -> str:
    """The first existing checkpoint of ``init_from`` (a dir with config.json or adapter_config.json),
    else ``cfg.model``."""
    for c in cfg.init_from or []:
        p = Path(expand(c))
        if (p / "config.json").exists() or (p / "adapter_config.json").exists():
            return str(p)
    return cfg.model
