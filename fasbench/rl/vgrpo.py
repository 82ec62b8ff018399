"""The miniature's training (notebook 06, issue 35): a start that sometimes searches in parallel (SFT on
scripted traces mixing one-call-a-turn and parallel searchers), variance-aware GRPO on batched
rollouts, and sampled + greedy evaluation on held-out tasks.

The GRPO update is a small loop of its own, not TRL's ``GRPOTrainer``: TRL's multi-turn path
(``environment_factory``) re-prefills every tool round one process batch at a time and was the 15–20
minute step of issue 30; here a step's rollouts come from :func:`fasbench.rl.batched.run_batched`.
The loss is TRL's as written in ``trl/trainer/grpo_trainer.py`` (trl 1.16.0, ``_compute_loss``) with
``loss_type="dapo"``, ``beta=0``, ``num_iterations=1``: per token ``-min(r·A, clip(r, 1-ε, 1+ε_high)·A)``
with ``r = exp(logp - old_logp)``, summed over every model token of the step and divided by their number
(DAPO's token-level mean, arXiv 2503.14476 eq. 8). With one update per generation batch TRL takes
``old_logp = logp.detach()`` (the same file: "When num_iterations == 1 ... old_per_token_logps ==
per_token_logps"), so r = 1 and the clip is inactive; it is kept for more iterations. Advantages are
TRL's: the reward minus its group's mean, divided by the group's std (``scale_rewards="group"``).
Tool results, harness notes and prompts are masked out of the loss (:class:`fasbench.rl.batched.Convo`).

Variance-aware: each step samples ``groups`` groups of ``k`` rollouts (one task each); a group whose
rewards are all equal (zero std: no advantage, TRL's ``frac_reward_zero_std``) is dropped from the loss
and counted, and the step's zero-variance share is logged (trl#3857: loss 0 at a share of 1.0 is the
common failure); ``resample`` extra groups are drawn once when every group of a step had zero variance.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.records import Task
from fasbench.reward import score_episode
from fasbench.rl.batched import Rollout, ScriptedTokens, run_batched
from fasbench.tools import make_toolset

#: Start mixes (issue 35 item 3): the scripted searchers the SFT traces come from, with their shares.
MIX = {"sequential:inner=definitions,per_turn=1": 0.7, "sequential:inner=definitions,per_turn=2": 0.15,
       "sequential:inner=definitions,per_turn=3": 0.15}


@dataclass
class MiniConfig:
    """One run of the miniature (SFT start + GRPO); every number a notebook parameter."""

    out: str
    model: str = "smollm2-offline"
    toolset: str = "relace"
    reward: str = "relace-mini-k3"
    max_turns: int = 5
    max_calls_per_turn: int = 8
    max_output_chars: int = 300
    sft_traces: int = 120
    sft_steps: int = 60
    sft_lr: float = 5e-5
    steps: int = 10
    groups: int = 2
    k: int = 8
    resample: int = 1
    lr: float = 1e-5
    epsilon: float = 0.2
    epsilon_high: float = 0.28
    temperature: float = 1.0
    max_new_tokens: int = 120
    seed: int = 0
    threads: int = 2


def limits_of(cfg: MiniConfig) -> Limits:
    from fasbench.tools import ToolLimits

    tool = ToolLimits(max_output_chars=cfg.max_output_chars)
    try:
        tool = ToolLimits(max_output_chars=cfg.max_output_chars, prompt="compact")  # rl-engine's compact protocol
    except TypeError:
        pass
    return Limits(max_turns=cfg.max_turns, max_calls_per_turn=cfg.max_calls_per_turn, tool=tool)


def prompt_of(limits: Limits) -> str:
    return getattr(limits.tool, "prompt", "published")


def load(cfg: MiniConfig, path: str | None = None, dtype=None):
    """(model, tokenizer) from ``path`` (a saved checkpoint) or the configured base model."""
    import torch  # local import: torch ~1.9 s

    from fasbench.models import load_model

    torch.set_num_threads(cfg.threads)
    model, tok = load_model(path or cfg.model, dtype=dtype or torch.float32, device="cpu")
    tok.padding_side = "left"
    return model, tok


def _gen_copy(model):
    """A bfloat16 copy of ``model`` for generation (prefill ≈ 7× cheaper than fp32 on this CPU)."""
    import copy

    import torch  # local import: torch

    g = copy.deepcopy(model).to(torch.bfloat16)
    g.eval()
    return g


def _sync(gen, model) -> None:
    import torch  # local import: torch

    with torch.no_grad():
        for pg, p in zip(gen.parameters(), model.parameters()):
            pg.copy_(p.to(pg.dtype))


def sft_traces(cfg: MiniConfig, tasks: list[Task], tok, mix: dict[str, float] = MIX) -> list[dict]:
    """Scripted traces of the start mix on ``tasks`` as token records ({ids, mask, policy, calls_first})."""
    rng = random.Random(cfg.seed)
    limits = limits_of(cfg)
    specs, weights = list(mix), list(mix.values())
    out = []
    for t in tasks[: cfg.sft_traces]:
        spec = rng.choices(specs, weights)[0]
        ts = make_toolset(cfg.toolset, t.root, limits.tool)
        pol = ScriptedTokens(make_policy(spec), tok, ts.schemas)
        tr = run_episode(t, pol, ts, limits)
        s = score_episode(cfg.reward, tr, t)
        out.append({"task_id": t.id, "policy": spec, "ids": pol.convo.ids, "mask": pol.convo.mask,
                    "turns": tr.n_turns, "first_calls": len(tr.turns[0].calls) if tr.turns else 0,
                    "reward": float(s.value)})
    return out


def token_logps(model, ids, att):
    """Log-probabilities of each next token (positions 1..n) under ``model``."""
    import torch  # local import: torch

    logits = model(input_ids=ids, attention_mask=att).logits[:, :-1].float()
    return torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)


def _pad(seqs: list[list[int]], masks: list[list[int]], pad: int):
    import torch  # local import: torch

    n = max(map(len, seqs))
    ids = torch.full((len(seqs), n), pad, dtype=torch.long)
    att = torch.zeros((len(seqs), n), dtype=torch.long)
    lm = torch.zeros((len(seqs), n), dtype=torch.float32)
    for i, (s, m) in enumerate(zip(seqs, masks)):
        ids[i, : len(s)], att[i, : len(s)], lm[i, : len(m)] = torch.tensor(s), 1, torch.tensor(m, dtype=torch.float32)
    return ids, att, lm


def sft(cfg: MiniConfig, records: list[dict], log: Path, start: str | None = None):
    """Full fine-tuning on the records' model tokens (batch 1, AdamW, constant lr); returns the model
    and tokenizer, saves to ``OUT/sft`` and appends a step log. A finished run is loaded, not redone."""
    import torch  # local import: torch

    done = Path(cfg.out) / "sft"
    if (done / "config.json").exists():
        return load(cfg, str(done))
    model, tok = load(cfg, start)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.sft_lr, weight_decay=0.0)
    rng = random.Random(cfg.seed)
    order = [records[rng.randrange(len(records))] for _ in range(cfg.sft_steps)]
    from tqdm.auto import tqdm  # local import: progress bar

    with log.open("a") as fh:
        for step, r in enumerate(tqdm(order, desc="SFT"), 1):
            ids, att, lm = _pad([r["ids"]], [r["mask"]], tok.pad_token_id or 0)
            lp = token_logps(model, ids, att)
            m = lm[:, 1:]
            loss = -(lp * m).sum() / m.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            fh.write(json.dumps({"kind": "sft", "step": step, "loss": float(loss), "policy": r["policy"]}) + "\n")
    model.save_pretrained(str(done))
    tok.save_pretrained(str(done))
    model.eval()
    return model, tok


def score(rollouts: list[Rollout], reward: str) -> None:
    for r in rollouts:
        s = score_episode(reward, r.trace, r.task)
        r.reward, r.parts = float(s.value), {k: float(v) for k, v in s.parts.items()}


def rollout_row(r: Rollout, **extra) -> dict:
    """The per-rollout measures of the evaluation and the step log."""
    tr = r.trace
    n = tr.n_turns
    return {"task_id": r.task.id, "turns": n, "calls": tr.n_calls, "calls_per_turn": tr.n_calls / n if n else 0.0,
            "first_calls": r.first_calls, "first_parallel": float(r.first_calls >= 2),
            "reported": float(tr.report is not None), "reward": r.reward,
            "file_f2": r.parts.get("accuracy", float("nan")), "turn_penalty": r.parts.get("turn_penalty", float("nan")),
            **extra}


def advantages(rewards: list[float]) -> list[float] | None:
    """TRL's group-scaled advantages, or None for a group whose rewards are all equal (zero std)."""
    m = sum(rewards) / len(rewards)
    sd = math.sqrt(sum((x - m) ** 2 for x in rewards) / (len(rewards) - 1)) if len(rewards) > 1 else 0.0
    if sd < 1e-6:
        return None
    return [(x - m) / (sd + 1e-4) for x in rewards]


def grpo_loss(model, rollouts: list[Rollout], adv: list[float], cfg: MiniConfig, pad: int):
    """TRL's DAPO loss over the rollouts' model tokens (module doc); one backward per rollout to bound
    memory, the token-level normalisation over the whole step."""
    import torch  # local import: torch

    total = sum(sum(r.mask[1:]) for r in rollouts)
    value = 0.0
    for r, a in zip(rollouts, adv):
        ids, att, lm = _pad([r.ids], [r.mask], pad)
        lp = token_logps(model, ids, att)
        old = lp.detach()
        ratio = torch.exp(lp - old)
        per = -torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon_high) * a)
        loss = (per * lm[:, 1:]).sum() / max(total, 1)
        loss.backward()
        value += float(loss)
    return value


def grpo(cfg: MiniConfig, model, tok, train: list[Task], log: Path) -> dict:
    """Variance-aware GRPO from ``model`` (module doc); resumes from ``OUT/grpo`` (its last saved step)."""
    import torch  # local import: torch

    from tqdm.auto import tqdm  # local import: progress bar

    out = Path(cfg.out)
    ck = out / "grpo"
    state = json.loads((ck / "state.json").read_text()) if (ck / "state.json").exists() else {"step": 0}
    if state["step"]:
        model, tok = load(cfg, str(ck))
    limits = limits_of(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    if (ck / "opt.pt").exists():
        opt.load_state_dict(torch.load(ck / "opt.pt"))
    gen = _gen_copy(model)
    rng = random.Random(f"{cfg.seed}|grpo")
    order = list(train)
    rng.shuffle(order)
    pad = tok.pad_token_id or 0
    for step in tqdm(range(state["step"] + 1, cfg.steps + 1), desc="GRPO", initial=state["step"], total=cfg.steps):
        t0 = time.time()
        picked = [order[(step * (cfg.groups + cfg.resample) + g) % len(order)] for g in range(cfg.groups + cfg.resample)]
        kept, zero, rows, drawn = [], 0, [], 0
        first, extra = picked[: cfg.groups], picked[cfg.groups:]
        for attempt in (first, extra):
            if attempt is extra and (kept or not extra):  # resample only when every group had zero variance
                break
            batch = [t for t in attempt for _ in range(cfg.k)]
            rolls, st = run_batched(gen, tok, batch, toolset=cfg.toolset, limits=limits, temperature=cfg.temperature,
                                    max_new_tokens=cfg.max_new_tokens, seed=cfg.seed * 7919 + step * 31 + drawn)
            score(rolls, cfg.reward)
            for g, t in enumerate(attempt):
                grp = [r for r in rolls if r.task.id == t.id]
                drawn += 1
                rows += [rollout_row(r, step=step, group=drawn) for r in grp]
                a = advantages([r.reward for r in grp]) if len(grp) > 1 else None
                if a is None:
                    zero += 1
                else:
                    kept.append((grp, a))
        model.train()
        opt.zero_grad()
        loss = 0.0
        if kept:
            loss = grpo_loss(model, [r for g, _ in kept for r in g], [x for _, a in kept for x in a], cfg, pad)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            _sync(gen, model)
        model.eval()
        n = len(rows)
        rec = {"kind": "step", "step": step, "loss": loss, "groups": drawn, "zero_var_groups": zero,
               "zero_var_share": zero / drawn if drawn else float("nan"), "rollouts": n, "wall_s": time.time() - t0}
        for k in ("reward", "turns", "calls_per_turn", "first_parallel", "file_f2", "turn_penalty", "reported"):
            xs = [r[k] for r in rows]
            rec[k] = sum(xs) / n if n else float("nan")
        with log.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
            for r in rows:
                fh.write(json.dumps({"kind": "rollout", **r}) + "\n")
        ck.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(ck))
        tok.save_pretrained(str(ck))
        torch.save(opt.state_dict(), ck / "opt.pt")
        (ck / "state.json").write_text(json.dumps({"step": step}))
    return {"model": model, "tok": tok, "path": str(ck)}


def evaluate(cfg: MiniConfig, model, tok, tasks: list[Task], k: int, label: str) -> list[dict]:
    """Held-out rollouts: ``k`` samples a task at the training temperature and one greedy, all batched;
    one row per rollout (``mode`` sampled | greedy)."""
    gen = _gen_copy(model)
    limits = limits_of(cfg)
    rows = []
    for mode, temp, kk in (("sampled", cfg.temperature, k), ("greedy", 0.0, 1)):
        batch = [t for t in tasks for _ in range(kk)]
        rolls, st = run_batched(gen, tok, batch, toolset=cfg.toolset, limits=limits, temperature=temp,
                                max_new_tokens=cfg.max_new_tokens, seed=10_000 + cfg.seed)
        score(rolls, cfg.reward)
        rows += [rollout_row(r, mode=mode, label=label, model_s=sum(t.model_time for t in r.trace.turns),
                             duration_s=(r.trace.ended_at or 0) - (r.trace.started_at or 0)) for r in rolls]
    return rows


def config_dict(cfg: MiniConfig) -> dict:
    return asdict(cfg)
