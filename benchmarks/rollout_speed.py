"""Rollout speed (issue 35): one group of compact-protocol rollouts with the batched engine
(fasbench.rl.rollout) against the same group through today's path (the ``hf:`` policy, one episode at a
time, the whole chat re-encoded every turn), in CPU seconds (getrusage of the process and its children).

Prints, for the profile's limits (default ``rl_mini``: compact prompt, 8 turns, 400-character observations):

1. bf16 against fp32 on the engine's own conversations: the generated tokens' log-probs teacher-forced in
   both (max and mean |difference|), the share of generated positions whose most likely token agrees, and
   whether greedy (temperature 0) episodes give the same tokens;
2. tokens a second per rollout at batch 1 and batch ``k`` side by side (and CPU ms a generated token);
3. the CPU seconds of one group (one held-out ``symbols`` task × ``k`` samples at the training temperature)
   with the engine, and through today's path; the last line is the ratio.

    python benchmarks/rollout_speed.py [--model smollm2-offline|CHECKPOINT] [--k 8] [--max-new-tokens 160]
        [--skip-today] [--skip-bf16-check]

Set ``OMP_WAIT_POLICY=PASSIVE`` (fasbench does when it is imported first) and run on a machine as idle as
you can; CPU seconds are the figure to trust on a busy one. Measured numbers: ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import fasbench  # noqa: F401  (sets OMP_WAIT_POLICY before torch loads)

# isort: split
import torch

from fasbench.data.symbols import load_tasks
from fasbench.harness import run_episode
from fasbench.models import load_model
from fasbench.policies.hf import HFPolicy
from fasbench.rl.config import load_config
from fasbench.rl.rollout import rollout_group


def cpu_s() -> float:
    return sum(
        r.ru_utime + r.ru_stime
        for r in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def measure(fn):
    c, w = cpu_s(), time.time()
    out = fn()
    return out, cpu_s() - c, time.time() - w


def bf16_check(m32, m16, tok, tasks, cfg, max_new: int) -> dict:
    """Teacher-force fp32 greedy conversations through both models; and greedy episodes in both."""
    g32 = rollout_group(
        m32, tok, tasks, k=1, limits=cfg.limits, reward=cfg.reward, max_new_tokens=max_new, temperature=0.0
    )
    g16 = rollout_group(
        m16, tok, tasks, k=1, limits=cfg.limits, reward=cfg.reward, max_new_tokens=max_new, temperature=0.0
    )
    diffs, agree, n = [], 0, 0
    with torch.no_grad():
        for r in g32:
            ids = torch.tensor([r.ids])
            l32 = torch.log_softmax(m32(input_ids=ids).logits[0].float(), -1)
            l16 = torch.log_softmax(m16(input_ids=ids).logits[0].float(), -1)
            pos = [p - 1 for p, g in enumerate(r.gen_mask) if g]
            tgt = torch.tensor([r.ids[p + 1] for p in pos])
            p = torch.tensor(pos)
            diffs += (l32[p, tgt] - l16[p, tgt]).abs().tolist()
            agree += int((l32[p].argmax(-1) == l16[p].argmax(-1)).sum())
            n += len(pos)
    first = sum(
        a.trace.turns[0].completion_tokens == b.trace.turns[0].completion_tokens
        and a.ids[: a.prompt_len + a.trace.turns[0].completion_tokens]
        == b.ids[: b.prompt_len + b.trace.turns[0].completion_tokens]
        for a, b in zip(g32, g16)
    )
    return {
        "positions": n,
        "max_abs_logprob_diff": max(diffs),
        "mean_abs_logprob_diff": sum(diffs) / len(diffs),
        "top1_agree": agree / n,
        "greedy_first_reply_same": f"{first}/{len(tasks)}",
        "greedy_episode_same": f"{sum(a.ids == b.ids for a, b in zip(g32, g16))}/{len(tasks)}",
    }


def today(model_name: str, task, cfg, k: int, max_new: int):
    """Today's path: the hf: policy (fp32, as load_model loads it on CPU), one episode at a time."""
    model, tok = load_model(model_name)
    model.eval()
    traces = []
    for j in range(k):
        pol = HFPolicy(model=model, tokenizer=tok, max_new_tokens=max_new, temperature=1.0, top_p=1.0, top_k=0, seed=j)
        traces.append(run_episode(task, pol, cfg.toolset, cfg.limits))
    return traces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-offline")
    ap.add_argument("--profile", default="mini", help="the RL profile whose limits and prompt are used")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--symbols-k", type=int, default=6, help="symbols a task names (fasbench.data.symbols)")
    ap.add_argument("--task", type=int, default=0, help="index of the held-out symbols task of the group")
    ap.add_argument("--max-turns", type=int, default=None, help="override the profile's max_turns")
    ap.add_argument("--skip-today", action="store_true")
    ap.add_argument("--skip-batch1", action="store_true")
    ap.add_argument(
        "--today-n",
        type=int,
        default=None,
        help="run only this many of the k episodes through today's path and scale its CPU seconds by k/n "
        "(an estimate, printed as one)",
    )
    ap.add_argument("--skip-bf16-check", action="store_true")
    ap.add_argument("--only-bf16-check", action="store_true")
    ap.add_argument("--check-tasks", type=int, default=4, help="held-out tasks of the bf16 check")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = load_config(a.profile, {"max_turns": a.max_turns} if a.max_turns else None)
    tasks = load_tasks("test", k=a.symbols_k)
    task = tasks[a.task]
    print(
        f"model {a.model}, profile {a.profile} (prompt {cfg.prompt}, {cfg.max_turns} turns), task {task.id}, "
        f"k {a.k}, cap {a.max_new_tokens} tokens a turn, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    m16, tok = load_model(a.model, dtype="bfloat16")
    m16.eval()
    if not a.skip_bf16_check:
        m32, _ = load_model(a.model)
        m32.eval()
        print("bf16 vs fp32:", json.dumps(bf16_check(m32, m16, tok, tasks[: a.check_tasks], cfg, a.max_new_tokens)))
        del m32
        if a.only_bf16_check:
            return
    res = {}
    for b in (a.k,) if a.skip_batch1 else (1, a.k):
        rs, c, w = measure(
            lambda b=b: rollout_group(
                m16,
                tok,
                [task],
                k=b,
                limits=cfg.limits,
                reward=cfg.reward,
                max_new_tokens=a.max_new_tokens,
                temperature=cfg.temperature,
                seed=cfg.seed,
            )
        )
        new = sum(r.new_tokens for r in rs)
        res[b] = (rs, c, w)
        print(
            f"engine batch {b}: {new} new tokens, {w:.1f} s wall, {c:.1f} CPU-s; per rollout "
            f"{new / b / w:.2f} tokens/s; {1000 * c / new:.0f} CPU-ms a token; turns "
            f"{[r.turns for r in rs]}, calls/turn {[round(sum(r.calls_per_turn) / max(r.turns, 1), 2) for r in rs]}, "
            f"rewards {[round(r.reward, 2) for r in rs]}, capped {sum(r.capped for r in rs)}"
        )
    rsk, ck, wk = res[a.k]
    if 1 in res:
        rs1, c1, w1 = res[1]
        print(
            f"tokens/s per rollout: batch 1 {sum(r.new_tokens for r in rs1) / w1:.2f} | batch {a.k} "
            f"{sum(r.new_tokens for r in rsk) / a.k / wk:.2f} (group throughput {sum(r.new_tokens for r in rsk) / wk:.2f})"
        )
    if a.skip_today:
        print(f"one group of {a.k}: engine {ck:.1f} CPU-s (today's path skipped)")
        return
    n = min(a.today_n or a.k, a.k)
    traces, ct, wt = measure(lambda: today(a.model, task, cfg, n, a.max_new_tokens))
    new_t = sum(t.completion_tokens or 0 for tr in traces for t in tr.turns)
    print(
        f"today (hf: policy, fp32, one at a time, re-encoded each turn), {n} of {a.k} episodes: {new_t} new tokens, "
        f"{wt:.1f} s wall, {ct:.1f} CPU-s; turns {[tr.n_turns for tr in traces]}"
    )
    est = "" if n == a.k else f" (estimated: {n} episodes × {a.k}/{n})"
    ct *= a.k / n
    print(
        f"one group of {a.k} compact rollouts: today {ct:.1f} CPU-s{est} | engine {ck:.1f} CPU-s | ratio {ct / ck:.2f}x"
    )


if __name__ == "__main__":
    main()
