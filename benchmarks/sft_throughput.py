"""TRL SFTTrainer throughput vs a bare PyTorch loop on the same model and batches, in one run.

Prints ``trainer/bare_loop=X``: tokens per second of ``SFTTrainer.train`` (counted by the trainer,
``include_num_input_tokens_seen="non_padding"``) over tokens per second of a plain
forward + backward + AdamW step over batches from the same trainer's dataloader (same collator,
padding and masks). Warm-up steps are excluded on both sides. Target: X >= 0.85.

    nice .venv/bin/python benchmarks/sft_throughput.py [--model smollm2-offline] [--steps 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="cpu", help="SFT profile whose data set is used (built if missing)")
    ap.add_argument("--model", default="smollm2-offline", help="model for both loops (tiny | smollm2-offline | path)")
    ap.add_argument("--steps", type=int, default=3, help="measured steps on each side")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured steps first on each side")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument(
        "--max-length",
        type=int,
        default=2560,
        help="tokens per example; the cpu data set's prompts alone are ~2k tokens",
    )
    args = ap.parse_args()

    import torch
    from transformers import TrainerCallback

    from fasbench.models import load_model
    from fasbench.sft.data import build, load_dataset
    from fasbench.sft.train import load_profile, make_trainer

    n = args.steps + args.warmup
    tmp = tempfile.mkdtemp(prefix="sft-bench-")
    prof = load_profile(
        args.profile,
        {
            "model": args.model,
            "lora": False,
            "max_steps": n,
            "per_device_train_batch_size": args.batch,
            "gradient_accumulation_steps": 1,
            "max_length": args.max_length,
            "over_length": "truncate",
            "save_steps": 10**6,
            "logging_steps": 10**6,
            "output_dir": tmp,
            "lr_scheduler_type": "constant",
            "warmup_ratio": 0.0,
        },
    )
    if not (prof.data_dir / "dataset").exists():
        build(prof.build, prof.data_dir)
    ds = load_dataset(prof.data_dir)
    model, tok = load_model(args.model, trainable=True)
    trainer = make_trainer(prof, ds, model, tok)
    trainer.args.include_num_input_tokens_seen = "non_padding"

    # bare loop on batches of the trainer's own dataloader
    it = iter(trainer.get_train_dataloader())
    batches = []
    while len(batches) < n:
        try:
            batches.append(next(it))
        except StopIteration:
            it = iter(trainer.get_train_dataloader())
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=trainer.args.learning_rate)
    model.train()
    toks, t_bare = 0, 0.0
    for i, b in enumerate(batches):
        t0 = time.perf_counter()
        loss = model(**b).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= args.warmup:
            t_bare += time.perf_counter() - t0
            toks += int(b["attention_mask"].sum())
    bare = toks / t_bare
    del opt

    class Clock(TrainerCallback):
        t0 = None
        tok0 = 0
        dt = 0.0

        def on_step_begin(self, a, state, control, **kw):
            if state.global_step >= args.warmup:
                self.t0 = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            if self.t0 is not None:
                self.dt += time.perf_counter() - self.t0
                self.t0 = None
            elif state.global_step == args.warmup:
                self.tok0 = state.num_input_tokens_seen

    clock = Clock()
    trainer.add_callback(clock)
    trainer.train()
    tr = (trainer.state.num_input_tokens_seen - clock.tok0) / clock.dt
    print(f"bare_loop_tokens_per_s={bare:.1f}")
    print(f"trainer_tokens_per_s={tr:.1f}")
    print(f"trainer/bare_loop={tr / bare:.3f}")


if __name__ == "__main__":
    main()
