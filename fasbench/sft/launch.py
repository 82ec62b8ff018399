"""``fasbench sft launch PROFILE [--set key=value ...] [--dry-run]`` (under ``accelerate launch``: ``-m
fasbench.cli sft launch PROFILE ...``): train one SFT profile. The same ``fasbench.sft.train.train`` as ``fasbench sft train`` — one
code path for every profile, the same ``--set`` overrides.

Unlike ``fasbench sft train`` it never builds the data set (every process of a launch would build it at
once): build it first with ``fasbench sft build --config PROFILE`` (docs/scale.md); a missing data set,
a missing tracker or a bad field is a one-line error with exit status 2 before any model loads.
``--dry-run`` goes as far as a machine without GPUs can: the profile, the data set, the TRL
``SFTConfig`` (``use_cpu`` where there is no GPU) and the world size, printed as JSON, then stops."""

import json
import os
import sys

from fasbench.sft.data import load_dataset
from fasbench.sft.train import Profile, load_profile, sft_config, train
from fasbench.training.log import checkpoint_step, last_checkpoint
from fasbench.training.profiles import report_to_list


def _data(profile: Profile, name: str):
    """The profile's SFT data set, or a ValueError that says how to build it."""
    try:
        return load_dataset(profile.data_dir)
    except FileNotFoundError:
        raise ValueError(
            f"no SFT data set at {profile.data_dir}: build it once before the launch, with "
            f"`fasbench sft build --config {name}` and the same --set overrides (docs/scale.md)"
        ) from None


def dry_run_info(profile: Profile, name: str) -> dict:
    """What a launch of ``profile`` would train, without loading a model: data, arguments, processes."""
    import torch  # local import: torch is heavy, only for --dry-run

    ds = _data(profile, name)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    args = sft_config(
        profile.train, profile.run_dir, "dev" in ds and len(ds["dev"]) > 0, use_cpu=not torch.cuda.is_available()
    )
    ckpt = last_checkpoint(profile.run_dir)
    trackers = report_to_list(profile.train.report_to)
    return {
        "profile": profile.name,
        "model": profile.train.model,
        "data": str(profile.data_dir),
        "examples": {split: len(ds[split]) for split in ds},
        "run_dir": str(profile.run_dir),
        "resumes_from": ckpt,
        "resumed_step": checkpoint_step(ckpt),
        "world_size": world,
        "global_batch": args.per_device_train_batch_size * args.gradient_accumulation_steps * world,
        "distributed": next(
            (
                k.removeprefix("ACCELERATE_USE_").lower()
                for k in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED")
                if os.environ.get(k, "").lower() == "true"
            ),
            None,
        ),
        "report_to": trackers,
        "tensorboard_dir": (os.environ.get("TENSORBOARD_LOGGING_DIR") or str(profile.run_dir / "runs"))
        if "tensorboard" in trackers
        else None,
        "step_log": str(profile.run_dir / "log.jsonl"),
        "args": {
            k: getattr(args, k)
            for k in (
                "max_steps",
                "num_train_epochs",
                "learning_rate",
                "lr_scheduler_type",
                "warmup_steps",
                "per_device_train_batch_size",
                "gradient_accumulation_steps",
                "max_length",
                "bf16",
                "gradient_checkpointing",
                "save_steps",
                "use_cpu",
            )
        },
    }


def launch(config: str, sets=(), dry_run: bool = False) -> None:
    """``fasbench sft launch``: train profile ``config`` (a name or a YAML file) with ``sets`` overrides, or with
    ``dry_run`` print what it would train (JSON, rank 0 only) and stop. A config error, a missing data set or
    tracker is a ValueError (one line, exit status 2 on the command line) before any model loads."""
    profile = load_profile(config, sets=list(sets))
    if dry_run:  # every process builds the arguments (under a launch they meet in torch.distributed)
        got = dry_run_info(profile, config)
        if os.environ.get("RANK", "0") == "0":
            print(json.dumps(got, indent=1, default=str))
        return
    _data(profile, config)
    print(train(profile))


if __name__ == "__main__":  # the module form before `fasbench sft launch`: refused, never a launch that does nothing
    sys.exit(
        "error: `python -m fasbench.sft.launch` is now `fasbench sft launch` (under accelerate: "
        "`accelerate launch ... -m fasbench.cli sft launch PROFILE`, docs/scale.md)"
    )
