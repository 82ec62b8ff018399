"""SFT with TRL's ``SFTTrainer``: assistant-only loss over the tool chat template, LoRA (PEFT) or
full fine-tuning, checkpoints that resume. One code path for every profile (tiny, cpu, gpu); a
profile is a YAML file with three flat sections ``build:`` (:class:`~fasbench.sft.data.BuildConfig`),
``train:`` (:class:`TrainConfig`) and ``eval:`` (:class:`EvalConfig`) (``fasbench/configs/sft_<name>.yaml``),
read by the loader shared with RL (:mod:`fasbench.training.profiles`: field and type checks, ``--set``
overrides)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fasbench.base.paths import cache_dir, safe_name
from fasbench.base.provenance import timestamp
from fasbench.chat_families import check_parallel
from fasbench.models import load_model, to_template_messages
from fasbench.sft.data import BuildConfig, load_dataset
from fasbench.training.log import (
    LOG_FILE,
    checkpoint_step,
    last_checkpoint,
    read_log,
    resume_line,
    save_at_end,
    step_log,
)
from fasbench.training.profiles import Kind, check_report_to, device_args, expand, load, report_to_list

__all__ = [
    "TrainConfig",
    "EvalConfig",
    "Profile",
    "load_profile",
    "train",
    "make_trainer",
    "read_log",
    "last_checkpoint",
    "read_state",
]


@dataclass
class TrainConfig:
    """The flat ``train:`` section of a profile. Fields map onto TRL's ``SFTConfig`` / PEFT's ``LoraConfig``."""

    model: str = "tiny"  # tiny | smollm2-offline | a checkpoint dir | a hub id (fasbench.models.load_model)
    output_dir: str = ""  # "" = cache_dir("runs", "sft-<profile name>"); the final model lands in <it>/final
    lora: bool = True  # LoRA adapters (merged into the saved final model) or full fine-tuning
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_target_modules: str | list[str] = "all-linear"
    max_steps: int = -1  # > 0 overrides num_train_epochs
    num_train_epochs: float = 1.0
    learning_rate: float = 2e-4
    lr_scheduler_type: str = "cosine"  # "cosine_with_min_lr" + min_lr for FastContext's 1e-5 → 1e-6
    min_lr: float | None = None  # floor of cosine_with_min_lr
    warmup_ratio: float = 0.0  # share of steps warming up (FastContext: 0.1)
    weight_decay: float = 0.0  # AdamW weight decay (TRL's default 0; FastContext's SFT: 0.1)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999  # TRL's default (FastContext's SFT: 0.95)
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 1
    max_length: int | None = 2048  # tokens per example
    over_length: str = "truncate"  # longer examples: "truncate" (TRL cuts the end) | "drop" (left out, counted)
    assistant_only_loss: bool = True  # loss on assistant turns only (the tool chat template marks them)
    gradient_checkpointing: bool = False
    bf16: bool = False  # bf16 mixed precision (GPU)
    dtype: str | None = None  # weights dtype at load ("bfloat16" on GPU); None = float32 on CPU
    logging_steps: int = 1
    save_steps: int = 10  # checkpoint every N steps (resume picks the last one)
    save_total_limit: int = 2
    eval_steps: int | None = None  # evaluate loss on the dev split every N steps (None = no eval)
    seed: int = 0
    dataloader_num_workers: int = 0
    report_to: str | list[str] | None = "tensorboard"  # TRL's trackers: tensorboard | trackio | wandb | none | a list

    def __post_init__(self):
        if self.over_length not in ("truncate", "drop"):
            raise ValueError(f"train.over_length must be 'truncate' or 'drop', got {self.over_length!r}")


@dataclass
class EvalConfig:
    """The flat ``eval:`` section: the before/after comparison on dev tasks through the harness."""

    n_tasks: int = 8  # dev tasks (agent-traces + task_source, corpora cached) evaluated
    max_turns: int = 3
    max_new_tokens: int = 256
    temperature: float = 0.0
    source: str = "swebench-verified"  # task source of the dev episodes
    reward: str = "relace"


@dataclass
class Profile:
    name: str
    build: BuildConfig = field(default_factory=BuildConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    @property
    def data_dir(self) -> Path:
        return (
            Path(expand(self.build.out)) if self.build.out else cache_dir("sft", safe_name(self.name, "profile name"))
        )

    @property
    def run_dir(self) -> Path:
        return (
            Path(expand(self.train.output_dir))
            if self.train.output_dir
            else cache_dir("runs", safe_name(f"sft-{self.name}", "profile name"))
        )

    def to_dict(self) -> dict:
        return {"name": self.name, "build": asdict(self.build), "train": asdict(self.train), "eval": asdict(self.eval)}


KIND = Kind("sft", {"build": BuildConfig, "train": TrainConfig, "eval": EvalConfig}, extra=("name",))


def load_profile(
    name_or_path: str | os.PathLike, overrides: Mapping[str, Any] | None = None, sets: Sequence[str] = ()
) -> Profile:
    """A profile by name (``tiny`` -> ``fasbench/configs/sft_tiny.yaml``) or path; ``overrides``
    (``{field or section.field: value}``, e.g. ``{"max_steps": 8, "eval.max_turns": 2}``) then
    ``sets`` (``["field=value"]``, ``--set``) win. Unknown fields and values of the wrong type are
    one-line errors (fasbench.training.profiles)."""
    got = load(KIND, name_or_path, overrides, sets)
    return Profile(name=got.name, build=got.parts["build"], train=got.parts["train"], eval=got.parts["eval"])


def sft_config(tc: TrainConfig, output_dir: Path, has_eval: bool, use_cpu: bool = False):
    """TRL ``SFTConfig`` of a train block (shared by the trainer and the throughput benchmark).
    ``use_cpu=True`` builds a GPU profile's arguments on a machine without one (its check in tests)."""
    from trl import SFTConfig  # local import: trl and torch are heavy

    kw: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=tc.max_steps,
        num_train_epochs=tc.num_train_epochs,
        learning_rate=tc.learning_rate,
        lr_scheduler_type=tc.lr_scheduler_type,
        warmup_steps=float(tc.warmup_ratio),
        per_device_train_batch_size=tc.per_device_train_batch_size,
        gradient_accumulation_steps=tc.gradient_accumulation_steps,
        max_length=tc.max_length,
        assistant_only_loss=tc.assistant_only_loss,
        bf16=tc.bf16,
        logging_steps=tc.logging_steps,
        save_steps=tc.save_steps,
        save_total_limit=tc.save_total_limit,
        seed=tc.seed,
        report_to=report_to_list(tc.report_to),
        dataloader_num_workers=tc.dataloader_num_workers,
        packing=False,
        dataset_num_proc=None,
        eval_strategy="steps" if (tc.eval_steps and has_eval) else "no",
        eval_steps=tc.eval_steps,
        per_device_eval_batch_size=tc.per_device_train_batch_size,
        use_cpu=use_cpu,
        weight_decay=tc.weight_decay,
        adam_beta1=tc.adam_beta1,
        adam_beta2=tc.adam_beta2,
        **device_args(tc.gradient_checkpointing, use_cpu),
    )
    if tc.lr_scheduler_type == "cosine_with_min_lr":
        kw["lr_scheduler_kwargs"] = {"min_lr": tc.min_lr if tc.min_lr is not None else 0.0}
    return SFTConfig(**kw)


def peft_config(tc: TrainConfig):
    if not tc.lora:
        return None
    from peft import LoraConfig  # local import: peft and torch are heavy

    return LoraConfig(
        r=tc.lora_r,
        lora_alpha=tc.lora_alpha,
        lora_dropout=tc.lora_dropout,
        target_modules=tc.lora_target_modules,
        task_type="CAUSAL_LM",
    )


def example_tokens(example: dict, tokenizer) -> int:
    """Tokens of one conversational example rendered with the tokenizer's (tool) chat template."""
    ids = tokenizer.apply_chat_template(
        to_template_messages(example["messages"]), tools=example["tools"], tokenize=True
    )
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    return len(ids)


def drop_long(dataset, tokenizer, max_length: int):
    """The examples of ``dataset`` that fit in ``max_length`` tokens whole (so the final report,
    at the end of an episode, is never cut away by truncation)."""
    keep = [i for i, ex in enumerate(dataset) if example_tokens(ex, tokenizer) <= max_length]
    return dataset.select(keep)


def make_trainer(profile: Profile, dataset=None, model=None, tokenizer=None):
    """The TRL SFTTrainer of a profile (model loaded, LoRA applied, data from the profile's
    build folder unless given)."""
    from trl import SFTTrainer  # local import: trl and torch are heavy

    tc = profile.train
    check_report_to(tc.report_to, f"sft profile {profile.name}: train")  # before the model loads
    if dataset is None:
        dataset = load_dataset(profile.data_dir)
    if model is None:
        model, tokenizer = load_model(tc.model, dtype=tc.dtype, trainable=True)
    if tokenizer is not None:  # a template that merges or drops parallel calls: one line, before training
        check_parallel(tokenizer, "sft")
    keep = ["messages", "tools"]
    if "train" not in dataset:
        raise ValueError(
            f"the SFT data set at {profile.data_dir} has no train examples; build with more tasks or a lower min_reward"
        )
    train = dataset["train"].select_columns(keep)
    if len(train) == 0:
        raise ValueError(
            f"the SFT train split at {profile.data_dir} is empty; build with more tasks or a lower min_reward"
        )
    dev = dataset["dev"].select_columns(keep) if "dev" in dataset and len(dataset["dev"]) else None
    if tc.over_length == "drop" and tc.max_length:
        n0 = len(train)
        train = drop_long(train, tokenizer, tc.max_length)
        print(
            f"SFT: {n0 - len(train)} of {n0} train examples are longer than max_length={tc.max_length} "
            "tokens and were left out (train.over_length: drop)"
        )
        if len(train) == 0:
            raise ValueError(
                f"every SFT train example is longer than max_length={tc.max_length}; raise it or lower "
                "build.max_output_chars / build.max_turns"
            )
        if dev is not None:
            dev = drop_long(dev, tokenizer, tc.max_length)
            dev = dev if len(dev) else None
    args = sft_config(tc, profile.run_dir, dev is not None)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train,
        eval_dataset=dev if args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=peft_config(tc),
        callbacks=[step_log(profile.run_dir / LOG_FILE), save_at_end()],
    )
    if len(trainer.train_dataset) == 0:
        raise ValueError(
            f"all {len(train)} SFT examples lost their assistant tokens to truncation at max_length="
            f"{tc.max_length}; raise train.max_length or lower build.max_output_chars"
        )
    return trainer


STATE_FILE = "train_state.json"  # what the last training call did (steps this call, resumed, final written)


def train(profile: Profile, resume: bool = True) -> Path:
    """Train a profile; resumes from the last checkpoint in its run dir. ``max_steps`` is a total: a
    run resumed at or past it does no step and keeps its ``final/`` (a checkpoint is saved at the last
    step, so a rerun never trains steps again). Saves the final model (LoRA merged) with its tokenizer
    to ``<run_dir>/final``; the step log is appended to ``<run_dir>/log.jsonl`` as training goes
    (``read_log``); ``<run_dir>/train_state.json`` says how many steps this call ran and how many were
    resumed (also printed). Returns the final model's folder (loadable by ``load_model``)."""
    run_dir = profile.run_dir
    final = run_dir / "final"
    ckpt = last_checkpoint(run_dir) if resume else None
    done = checkpoint_step(ckpt)
    target = profile.train.max_steps
    if ckpt and target > 0 and done >= target and (final / "config.json").exists():
        _write_state(run_dir, done, 0, done, ckpt, target, final_written=False)
        print(resume_line("SFT", run_dir, done, 0, target))
        return final
    trainer = make_trainer(profile)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "profile.json").write_text(json.dumps(profile.to_dict(), indent=1))
    trainer.train(resume_from_checkpoint=ckpt)
    step = trainer.state.global_step
    model = trainer.model
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(final)
    trainer.processing_class.save_pretrained(final)
    _write_state(run_dir, step, step - done, done, ckpt, target, final_written=True)
    print(resume_line("SFT", run_dir, done, step - done, target))
    return final


def _write_state(run_dir: Path, step: int, this_call: int, resumed: int, ckpt, target: int, final_written: bool):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / STATE_FILE).write_text(
        json.dumps(
            {
                "global_step": step,
                "max_steps": target,
                "steps_this_call": this_call,
                "steps_resumed": resumed,
                "resumed_from": str(ckpt) if ckpt else None,
                "final_written": final_written,
                "at": timestamp(),
            },
            indent=1,
        )
    )


def read_state(run_dir: str | Path) -> dict:
    """``train_state.json`` of an SFT run folder ({} before the first training call)."""
    f = Path(run_dir) / STATE_FILE
    return json.loads(f.read_text()) if f.exists() else {}
