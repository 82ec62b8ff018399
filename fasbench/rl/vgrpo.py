"""Variance-aware GRPO of the parallel-search miniature (issue 35 item 4, notebook 06): TRL's
``GRPOTrainer`` with its generation replaced by batched harness episodes, and sampled + greedy
evaluation on held-out tasks (item 5).

TRL's multi-turn path (``environment_factory``) re-prefills every tool round of the group one process
batch at a time (issue 30's 15–20 minute step). Here TRL's ``rollout_func`` hook (trl 1.16,
``GRPOTrainer.__init__``: "It must return a dict with prompt_ids, completion_ids and logprobs ... Any
other fields are forwarded to the reward functions"; ``env_mask`` marks the completion's model tokens)
gets whole episodes from :func:`fasbench.rl.batched.run_batched`: the generation batch's rollouts run
through the harness together, every turn's replies in one bf16 ``generate`` call. The completion is
everything after the first generation prompt; the tool results and harness notes in it are masked out
of the loss (``env_mask`` 0). TRL does the rest unchanged: group advantages, the loss (``loss_type``,
``dapo`` by default: token-level clipped surrogate, DAPO arXiv 2503.14476), the optimiser, checkpoints
and resuming, and its ``frac_reward_zero_std`` metric.

Variance-aware (issue 35; trl#3857: loss 0 with ``frac_reward_zero_std`` 1.0 is the common failure):
every step draws ``groups`` groups of ``k`` rollouts (one task each); a group whose rewards are all equal
has advantage 0 in TRL (no gradient: dropped from the update) and is counted; with ``resample`` > 0 such a
group is drawn again (new samples of the same task) up to that many times before the step (DAPO's dynamic
sampling, arXiv 2503.14476 §3.2, which over-samples and filters such groups). Each step's log line
(``steps.jsonl``) has the zero-variance share of the first draw and after resampling, the rollouts drawn,
the mean reward and its parts, turns, calls per turn and the share of sampled first turns with ≥ 2 calls.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fasbench.base.paths import child
from fasbench.harness import Limits
from fasbench.models import load_model
from fasbench.records import Task
from fasbench.rl.batched import EpisodeTokens, run_batched
from fasbench.rl.protocol import first_turn
from fasbench.scoring.reward import score_episode
from fasbench.tools import ToolLimits

STEP_LOG = "steps.jsonl"
ROLLOUT_LOG = "rollouts.jsonl"


@dataclass
class MiniConfig:
    """One GRPO run of the miniature; every number a notebook parameter."""

    out: str
    start: str  # the SFT start (a merged model folder)
    toolset: str = "relace"
    prompt: str = "compact"  # the protocol (fasbench/tools/compact.py)
    reward: str = "relace-mini-k3"
    max_turns: int = 5
    max_calls_per_turn: int = 8
    max_output_chars: int = 300
    steps: int = 10  # optimiser steps
    groups: int = 2  # groups (tasks) a step
    k: int = 8  # rollouts a group (TRL num_generations)
    resample: int = 1  # redraws of a zero-variance group before the step
    micro_batch: int = 4  # rollouts a forward/backward pass
    lr: float = 2e-6
    loss_type: str = "dapo"
    epsilon: float = 0.2
    epsilon_high: float = 0.28
    temperature: float = 1.0
    max_new_tokens: int = 120  # tokens a turn (the per-turn cap)
    seed: int = 0
    threads: int = 2

    def limits(self) -> Limits:
        return Limits(
            max_turns=self.max_turns,
            max_calls_per_turn=self.max_calls_per_turn,
            tool=ToolLimits(max_output_chars=self.max_output_chars, prompt=self.prompt),
        )


def score(rollouts: list[EpisodeTokens], reward: str) -> None:
    """Each rollout's reward and parts (``fasbench.scoring.reward.score_episode``, the one scoring)."""
    for r in rollouts:
        s = score_episode(reward, r.trace, r.task)
        r.reward, r.parts = float(s.value), {k: float(v) for k, v in s.parts.items()}


def rollout_row(r: EpisodeTokens, **extra) -> dict:
    """One rollout's measures (evaluation rows, the rollout log)."""
    tr = r.trace
    n = tr.n_turns
    return {
        "task_id": r.task.id,
        "turns": n,
        "calls": tr.n_calls,
        "calls_per_turn": tr.n_calls / n if n else 0.0,
        "first_calls": r.first_calls,
        "first_parallel": float(r.first_calls >= 2),
        "reported": float(tr.report is not None),
        "reward": r.reward,
        "file_f2": r.parts.get("accuracy", float("nan")),
        "turn_penalty": r.parts.get("turn_penalty", float("nan")),
        "new_tokens": sum(r.mask),
        **extra,
    }


def zero_variance(rewards: list[float]) -> bool:
    """All rewards of a group equal (TRL: advantage 0 for every rollout, no gradient)."""
    return len(rewards) < 2 or max(rewards) - min(rewards) < 1e-9


def _gen_copy(model):
    """A bfloat16 copy of ``model`` for generation (prefill ≈ 7× cheaper than fp32 here: RL-ON-CPU.md)."""
    import torch  # local import: torch is heavy

    g = copy.deepcopy(model).to(torch.bfloat16)
    g.eval()
    return g


def _sync(gen, model) -> None:
    import torch  # local import: torch is heavy

    with torch.no_grad():
        for pg, p in zip(gen.parameters(), model.parameters()):
            pg.copy_(p.detach().to(pg.dtype))


class BatchedRollouts:
    """TRL's ``rollout_func``: the generation batch's prompts (each task's prompt ``k`` times in a row,
    TRL's ``RepeatSampler``) as harness episodes, batched; zero-variance groups redrawn (``resample``)."""

    def __init__(self, cfg: MiniConfig, tasks: list[Task], tok):
        self.cfg, self.tok = cfg, tok
        self.by_query = {t.query: t for t in tasks}
        self.gen = None
        self.calls = 0
        self.pending: dict = {}

    def _task(self, prompt) -> Task:
        text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
        for q, t in self.by_query.items():
            if q in text:
                return t
        raise ValueError(f"rollout_func: no task for prompt {text[:80]!r}")

    def draw(self, tasks: list[Task], seed: int) -> list[EpisodeTokens]:
        cfg = self.cfg
        rolls, st = run_batched(
            self.gen,
            self.tok,
            tasks,
            toolset=cfg.toolset,
            limits=cfg.limits(),
            temperature=cfg.temperature,
            max_new_tokens=cfg.max_new_tokens,
            seed=seed,
        )
        if len(rolls) != len(tasks):
            raise RuntimeError(f"rollout_func: {len(tasks) - len(rolls)} episodes failed: {st['errors'][:3]}")
        score(rolls, cfg.reward)
        self.pending["capped"] = self.pending.get("capped", 0) + st["capped"]
        return rolls

    def __call__(self, prompts: list, trainer) -> dict:
        cfg = self.cfg
        if self.gen is None:
            self.gen = _gen_copy(trainer.model)
        else:
            _sync(self.gen, trainer.model)
        self.calls += 1
        step = trainer.state.global_step + 1
        t0 = time.time()
        tasks = [self._task(p) for p in prompts]
        rolls = self.draw(tasks, seed=cfg.seed * 100_003 + step * 101)
        starts = list(range(0, len(tasks), cfg.k))
        first_zero = [zero_variance([r.reward for r in rolls[s : s + cfg.k]]) for s in starts]
        drawn = len(rolls)
        for attempt in range(cfg.resample):
            redo = [s for s in starts if zero_variance([r.reward for r in rolls[s : s + cfg.k]])]
            if not redo:
                break
            new = self.draw(
                [tasks[s] for s in redo for _ in range(cfg.k)], seed=cfg.seed * 100_003 + step * 101 + attempt + 1
            )
            drawn += len(new)
            for j, s in enumerate(redo):
                rolls[s : s + cfg.k] = new[j * cfg.k : (j + 1) * cfg.k]
        final_zero = [zero_variance([r.reward for r in rolls[s : s + cfg.k]]) for s in starts]
        rows = [rollout_row(r, step=step, group=i // cfg.k) for i, r in enumerate(rolls)]
        n = len(rows)
        rec = {
            "step": step,
            "groups": len(starts),
            "rollouts_drawn": drawn,
            "zero_var_share_first": sum(first_zero) / len(starts),
            "zero_var_share": sum(final_zero) / len(starts),
            "rollout_s": time.time() - t0,
            "capped_replies": self.pending.pop("capped", 0),
        }
        for k in (
            "reward",
            "file_f2",
            "turn_penalty",
            "turns",
            "calls_per_turn",
            "first_parallel",
            "reported",
            "new_tokens",
        ):
            rec[k] = sum(r[k] for r in rows) / n
        out = Path(cfg.out)
        with (out / STEP_LOG).open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        with (out / ROLLOUT_LOG).open("a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
        return {
            "prompt_ids": [r.ids[: r.prompt_len] for r in rolls],
            "completion_ids": [r.ids[r.prompt_len :] for r in rolls],
            "logprobs": [r.logps[r.prompt_len :] for r in rolls],
            "env_mask": [r.mask[r.prompt_len :] for r in rolls],
            "rollout_reward": [r.reward for r in rolls],
        }


def rollout_reward(prompts, completions, rollout_reward=None, **_) -> list[float]:
    """The reward function TRL calls: the episodes' rewards, scored in the rollout function."""
    if rollout_reward is None:
        raise ValueError("rollout_reward: the rollout function gave no rewards")
    return [float(x) for x in rollout_reward]


def make_trainer(cfg: MiniConfig, tasks: list[Task]):
    """TRL ``GRPOTrainer`` over ``tasks`` with :class:`BatchedRollouts` as its generation."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch  # local import: torch is heavy
    from datasets import Dataset  # local import: datasets heavy
    from trl import GRPOConfig, GRPOTrainer  # local import: trl adds to torch

    torch.set_num_threads(cfg.threads)
    model, tok = load_model(cfg.start, dtype=torch.float32, device="cpu", trainable=True)
    tok.padding_side = "left"
    rows = [{"prompt": first_turn(cfg.toolset, cfg.limits(), t.query)[0]} for t in tasks]
    per_step = cfg.groups * cfg.k
    args = GRPOConfig(
        output_dir=cfg.out,
        max_steps=cfg.steps,
        learning_rate=cfg.lr,
        lr_scheduler_type="constant",
        per_device_train_batch_size=cfg.micro_batch,
        gradient_accumulation_steps=per_step // cfg.micro_batch,
        num_generations=cfg.k,
        max_completion_length=4096,
        loss_type=cfg.loss_type,
        beta=0.0,
        epsilon=cfg.epsilon,
        epsilon_high=cfg.epsilon_high,
        temperature=cfg.temperature,
        seed=cfg.seed,
        logging_steps=1,
        save_steps=1,
        save_total_limit=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        remove_unused_columns=False,
        log_completions=False,
        shuffle_dataset=True,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[rollout_reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        rollout_func=BatchedRollouts(cfg, tasks, tok),
    )
    return trainer


def train(cfg: MiniConfig, tasks: list[Task]) -> dict:
    """Run (or resume: TRL's last checkpoint in ``cfg.out``) the GRPO steps; the final model in
    ``OUT/final``. A run already at ``steps`` returns its summary without training."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    final = out / "final"
    summary_file = out / "summary.json"
    if final.is_dir() and summary_file.exists() and json.loads(summary_file.read_text()).get("steps") == cfg.steps:
        return json.loads(summary_file.read_text())
    from transformers.trainer_utils import get_last_checkpoint  # local import: transformers adds to torch

    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=1))
    trainer = make_trainer(cfg, tasks)
    last = get_last_checkpoint(str(out))
    t0 = time.time()
    trainer.train(resume_from_checkpoint=last)
    trainer.save_model(str(final))
    trainer.processing_class.save_pretrained(str(final))
    losses = [h.get("loss") for h in trainer.state.log_history if "loss" in h]
    summary = {
        "steps": cfg.steps,
        "global_step": trainer.state.global_step,
        "resumed_from": last,
        "wall_s": time.time() - t0,
        "losses": losses,
        "frac_reward_zero_std": [
            h.get("frac_reward_zero_std") for h in trainer.state.log_history if "frac_reward_zero_std" in h
        ],
    }
    summary_file.write_text(json.dumps(summary, indent=1))
    return summary


def read_steps(out: str | Path) -> list[dict]:
    """The step log of a run (the last line of each step: a resumed step drawn twice counts once)."""
    p = Path(out) / STEP_LOG
    got: dict[int, dict] = {}
    if p.exists():
        for line in p.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                got[r["step"]] = r
    return [got[k] for k in sorted(got)]


def evaluate(model_path: str, tasks: list[Task], cfg: MiniConfig, k: int, label: str, out: str | Path) -> list[dict]:
    """Held-out rollouts of the model at ``model_path``: ``k`` samples a task at the training
    temperature and one greedy, all batched; one row per rollout (``mode`` sampled | greedy), cached in
    ``out`` (a rerun reads them)."""
    path = child(Path(out), "eval-" + str(label), ".jsonl", "evaluation label")
    if path.exists():
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    import torch  # local import: torch is heavy

    torch.set_num_threads(cfg.threads)
    model, tok = load_model(model_path, dtype=torch.bfloat16, device="cpu")
    tok.padding_side = "left"
    rows = []
    for mode, temp, kk in (("sampled", cfg.temperature, k), ("greedy", 0.0, 1)):
        batch = [t for t in tasks for _ in range(kk)]
        t0 = time.time()
        rolls, st = run_batched(
            model,
            tok,
            batch,
            toolset=cfg.toolset,
            limits=cfg.limits(),
            temperature=temp,
            max_new_tokens=cfg.max_new_tokens,
            seed=10_000 + cfg.seed,
        )
        score(rolls, cfg.reward)
        rows += [
            rollout_row(
                r,
                mode=mode,
                label=label,
                sample=i % kk,
                batch_s=time.time() - t0,
                model_s=sum(t.model_time for t in r.trace.turns),
                tools_s=sum((t.tools_ended_at or 0) - (t.tools_started_at or 0) for t in r.trace.turns),
            )
            for i, r in enumerate(rolls)
        ]
    Path(out).mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def per_task(rows: list[dict], mode: str) -> list[dict]:
    """Per-task means of the rows of one ``mode`` (the unit of the paired tests)."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        if r["mode"] == mode:
            by.setdefault(r["task_id"], []).append(r)
    keys = ("turns", "calls_per_turn", "first_parallel", "file_f2", "reward", "reported")
    return [{"task_id": t, **{k: sum(x[k] for x in rs) / len(rs) for k in keys}} for t, rs in sorted(by.items())]


def share_ci(xs: list[float]) -> tuple[float, float, float]:
    """A share with its 95% Wilson interval."""
    n = len(xs)
    if not n:
        return float("nan"), float("nan"), float("nan")
    p = sum(xs) / n
    z = 1.96
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, c - h), min(1.0, c + h)
