"""Turns and accuracy over GRPO training: Relace's finding, read off a run's logs.

Relace (seed 000): RL cut the turns of its searcher from 20 to 5 (agent-trace data) and from 10 to 4
(GitHub-PR data) at accuracy similar to Claude 4.5 Sonnet's; reward first rose through parallel
calls alone, stalled once turns fell below n_max, then rose again with accuracy. This module compares
a run's first and last training steps on the rollouts it logged (``rollouts.jsonl``: one harness
trace per rollout, with its step and score) — turns, accuracy and the turn penalty, with 95%
bootstrap intervals over rollouts and a two-sample permutation test of the turns (:func:`two_sample_p`;
"turns fell" needs the intervals apart AND p < 0.05, reported with both n) — and writes notebook 06's
closing "What we found" from them.

*Accuracy* is the reward's accuracy part: Relace's ``accuracy`` (A2 or A1); under a reward without
one, FastContext's ``f0.5`` file score, else ``recall``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
from tqdm.auto import tqdm

from fasbench.evaluation.episodes import EMPTY_SCHEMA, column_name, episode_row, part_columns, reward_column
from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.records import Task, Trace
from fasbench.stats.findings import Findings
from fasbench.stats.metrics import mean_ci

ACCURACY_PARTS = ("accuracy", "f0.5", "recall")
RELACE_FINDING = {"agent-trace data (1)": (20, 5), "GitHub-PR data (2)": (10, 4)}


def accuracy_part(parts) -> str | None:
    """The name of the accuracy part among ``parts`` (see the module doc), or None."""
    return next((p for p in ACCURACY_PARTS if p in parts), None)


def _rollout_row(tr: Trace) -> dict:
    """The episode-table row of a logged rollout, its reward and parts read from the score the
    trainer logged (``meta["score"]``; the rollout's task and corpus are not needed), then step,
    accuracy and turn penalty."""
    score = tr.meta.get("score") or {}
    parts = score.get("parts") or {}
    name = tr.meta.get("reward")  # the reward's name (fasbench.rl.episode_reward.EpisodeReward)
    row = episode_row(tr, None, localization=False)  # a task-less row's reward: the logged meta["score"]
    if isinstance(name, str):
        row[reward_column(name)] = row["reward"]
        row.update({f"{reward_column(name)}__{column_name(k)}": float(v) for k, v in parts.items()})
    acc = accuracy_part(parts)
    return {
        "step": int(tr.meta.get("step", 0)),
        **row,
        "accuracy": float(parts[acc]) if acc else None,
        "accuracy_part": acc,
        "turn_penalty": float(parts["turn_penalty"]) if "turn_penalty" in parts else None,
    }


def rollout_frame(rollouts: list[Trace]) -> pl.DataFrame:
    """One row per logged rollout: ``step``, the episode table's columns
    (:func:`fasbench.evaluation.episodes.episode_row`: task_id, turns, calls, reported, reward, …; the columns
    that need the gold are null, the reward and its ``reward_NAME__PART`` columns are the logged
    score), then ``accuracy``, ``accuracy_part`` and ``turn_penalty`` (None where the reward has none)."""
    schema = {
        "step": pl.Int64,
        **EMPTY_SCHEMA,
        "accuracy": pl.Float64,
        "accuracy_part": pl.Utf8,
        "turn_penalty": pl.Float64,
    }
    rows = [_rollout_row(tr) for tr in rollouts]
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)


SETUP_POLICIES = {"sequential start": "sequential:per_turn=1,turns=3", "parallel target": "heuristic:turns=3"}


def start_vs_target(
    tasks: list[Task],
    toolset: str = "relace",
    reward: str = "relace",
    max_turns: int = 24,
    policies: dict[str, str] | None = None,
    progress: bool = True,
) -> pl.DataFrame:
    """The gap Relace's RL closes, on real tasks: the same search run sequentially (one call a turn,
    the long-episode starting point) and in parallel (the heuristic), each scored under ``reward``.
    One row per (policy, task): the episode table's columns (:func:`fasbench.evaluation.episodes.episode_row`,
    ``policy`` = the label of ``policies``, ``reward`` and its ``reward_NAME__PART`` columns), then
    ``accuracy`` (the reward's accuracy part), ``turn_penalty`` (1 under a reward without one),
    ``reward_name`` and ``max_turns``."""
    rows = []
    pols = {k: make_policy(v) for k, v in (policies or SETUP_POLICIES).items()}
    for label, pol in pols.items():
        for t in tqdm(tasks, desc=label, disable=not progress):
            tr = run_episode(t, pol.bind(t), toolset, Limits(max_turns=max_turns))
            row = episode_row(tr, t, reward, rewards=[reward], localization=False)
            parts = {c.split("__", 1)[1]: row[c] for c in part_columns(row, reward)}
            acc = next((column_name(p) for p in ACCURACY_PARTS if column_name(p) in parts), None)
            rows.append(
                {
                    **row,
                    "policy": label,
                    "accuracy": parts[acc] if acc else None,
                    "turn_penalty": parts.get("turn_penalty", 1.0),
                    "reward_name": reward,
                    "max_turns": max_turns,
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None)


def _est(x: pl.Series) -> dict | None:
    v = x.drop_nulls().to_numpy().astype(float)
    if not v.size:
        return None
    m, lo, hi = mean_ci(v)
    return {"mean": m, "lo": lo, "hi": hi, "n": int(v.size)}


def two_sample_p(x, y, exact_max: int = 50_000, n_perm: int = 20_000, seed: int = 0) -> tuple[float, str]:
    """Two-sided permutation p-value of the difference of means of two independent samples (the
    rollouts of two steps): the share of relabellings of the pooled values whose |mean difference| is at
    least the observed one (Good, *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 2005).
    Exact over all C(n₁ + n₂, n₁) splits up to ``exact_max`` of them (4 vs 4 rollouts: 70 splits, the
    smallest p 2/70 = 0.029); above, ``n_perm`` random splits with p = (b + 1)/(B + 1)."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if not a.size or not b.size:
        return math.nan, "none"
    pool, n1 = np.concatenate([a, b]), a.size
    obs = abs(a.mean() - b.mean()) - 1e-9 * max(1.0, float(np.abs(pool).max()))
    total = pool.sum()
    if math.comb(pool.size, n1) <= exact_max:
        s1 = np.array([pool[list(c)].sum() for c in itertools.combinations(range(pool.size), n1)])
        diffs = s1 / n1 - (total - s1) / b.size
        return float((np.abs(diffs) >= obs).mean()), "exact permutation"
    rng = np.random.default_rng(seed)
    hits = sum(
        abs(pool[idx[:n1]].mean() - pool[idx[n1:]].mean()) >= obs
        for idx in (rng.permutation(pool.size) for _ in range(n_perm))
    )
    return (hits + 1) / (n_perm + 1), f"permutation, {n_perm:,} random splits"


def turn_trend(frame: pl.DataFrame, window: int = 1) -> dict:
    """First vs last ``window`` logged steps: turns, accuracy, turn penalty and reward (mean, 95%
    bootstrap interval, n rollouts), the permutation p of the turns (``turns_p``, :func:`two_sample_p`),
    and whether turns fell: intervals apart and ``turns_p`` < 0.05 (``turns_fell``)."""
    if not frame.height:
        return {"steps": 0}
    steps = sorted(frame["step"].unique().to_list())
    first, last = steps[:window], steps[-window:]
    out: dict = {
        "steps": len(steps),
        "first_steps": first,
        "last_steps": last,
        "accuracy_part": next((p for p in frame["accuracy_part"].to_list() if p), None),
    }
    for name, sel in (("first", first), ("last", last)):
        sub = frame.filter(pl.col("step").is_in(sel))
        out[name] = {k: _est(sub[k]) for k in ("turns", "accuracy", "turn_penalty", "reward")}
    t0, t1 = out["first"]["turns"], out["last"]["turns"]
    x0 = frame.filter(pl.col("step").is_in(first))["turns"].drop_nulls().to_list()
    x1 = frame.filter(pl.col("step").is_in(last))["turns"].drop_nulls().to_list()
    out["turns_p"], out["turns_test"] = two_sample_p(x0, x1) if first != last else (math.nan, "none")
    # intervals apart and the permutation test rejects (a bootstrap interval over 4 rollouts is too narrow alone)
    out["turns_fell"] = bool(t0 and t1 and t1["hi"] < t0["lo"] and out["turns_p"] < 0.05)
    out["same_steps"] = first == last
    return out


def _fmt(e: dict | None, pct: bool = False) -> str:
    if not e:
        return "n/a"
    f = (lambda v: f"{100 * v:.0f}%") if pct else (lambda v: f"{v:.2f}")
    return f"{f(e['mean'])} [{f(e['lo'])}, {f(e['hi'])}] (n={e['n']})"


def findings(
    summary: dict, trend: dict, cfg, before_after: pl.DataFrame | None = None, setup: pl.DataFrame | None = None
) -> Findings:
    """Notebook 06's "What we found" (a :class:`fasbench.stats.findings.Findings`) from the run's summary, the
    rollout trend, and (optional) the before/after evaluation frame and the ``start_vs_target`` frame,
    beside Relace's finding, with caveats."""
    part = trend.get("accuracy_part") or "accuracy"
    acc = "accuracy" if part == "accuracy" else f"accuracy ({part})"
    out = Findings("GRPO")
    out.text(
        f"GRPO run: {summary.get('global_step')} steps on {summary.get('n_tasks')} tasks from "
        f"`{summary.get('model')}`, reward `{cfg.reward}`, tool set `{cfg.toolset}`, turn limit {cfg.max_turns}, "
        f"up to {cfg.max_calls_per_turn} calls a turn, {cfg.num_generations} rollouts a group."
    )
    if not trend.get("steps"):
        out.text("No rollouts were logged, so there is nothing to compare.")
    else:
        f, l_ = trend["first"], trend["last"]
        out.table(
            ["", "turns", acc, "turn penalty", "reward"],
            [
                [name, *(_fmt(e[k]) for k in ("turns", "accuracy", "turn_penalty", "reward"))]
                for name, e in (("first", f), ("last", l_))
            ],
            intro=f"Rollouts of the first logged step(s) {trend['first_steps']} vs the last {trend['last_steps']} "
            "(mean [95% interval: percentile bootstrap, Student t below 10] (n rollouts)):",
        )
        if trend["same_steps"]:
            out.add("Only one step was logged: there is no trend to read.")
        else:
            test = (
                f"two-sided {trend['turns_test']} test p = {trend['turns_p']:.3g}, n = {(f.get('turns') or {}).get('n')} "
                f"vs {(l_.get('turns') or {}).get('n')} rollouts"
            )
            if trend["turns_fell"]:
                out.add(f"Turns fell from the first to the last step, with intervals apart ({test}).")
            else:
                out.add(
                    f"No change in turns is shown between the first and last steps: the intervals overlap or "
                    f"the test does not reject at 0.05 ({test})."
                )
        t0 = (f.get("turns") or {}).get("mean")
        if t0 is not None and t0 <= 4 and cfg.reward.startswith("relace"):
            out.add(
                f"The run started at {t0:.1f} turns, inside Relace's free zone (n <= 4, penalty 1): "
                "the turn penalty cannot bite; start from long episodes (profiles `long_cpu`, `long_gpu`)."
            )
    if before_after is not None and before_after.height:
        g = before_after.group_by("policy", maintain_order=True).agg(
            pl.len().alias("n"), pl.col("turns").mean(), pl.col("reward").mean(), pl.col("reported").mean()
        )
        out.text(
            "Greedy evaluation on held-out tasks, before vs after: "
            + "; ".join(
                f"{r['policy']}: n={r['n']}, turns {r['turns']:.2f}, reward {r['reward']:.3f}, reported {r['reported']:.0%}"
                for r in g.iter_rows(named=True)
            )
            + "."
        )
    if setup is not None and setup.height:
        g = {
            r["policy"]: r
            for r in setup.group_by("policy", maintain_order=True)
            .agg(pl.len().alias("n"), pl.col("turns", "calls", "accuracy", "turn_penalty", "reward").mean())
            .iter_rows(named=True)
        }
        text = (
            f"The setup, on the tasks above (reward `{setup['reward_name'][0]}`, turn limit "
            f"{setup['max_turns'][0]}): "
            + "; ".join(
                f"{k}: n={r['n']}, {r['turns']:.1f} turns, {r['calls']:.1f} calls, accuracy {r['accuracy']:.3f}, "
                f"turn penalty {r['turn_penalty']:.2f}, reward {r['reward']:.3f}"
                for k, r in g.items()
            )
            + "."
        )
        if len(g) == 2:
            wide = setup.pivot(on="policy", index="task_id", values="accuracy")
            a, b = list(g)
            same = int((wide[a] == wide[b]).sum())
            text += (
                f"\nAccuracy is equal on {same} of {wide.height} tasks; the reward the first leaves on the table "
                "is what RL can win by parallelising alone (Relace's first phase), before any gain in accuracy."
            )
        out.text(text)
    out.text(
        "Relace (seed 000): RL cut turns "
        + ", ".join(f"{a} → {b} on its {k}" for k, (a, b) in RELACE_FINDING.items())
        + " at similar accuracy, with an 8×H200 node, 3 epochs over 3.2k prompts, the turn penalty "
        "P = clip((24 − n)/(24 − 4), 0, 1) and a base model that searched sequentially."
    )
    return out.caveat(
        "a profile's rollouts are few (intervals are over rollouts of a step, not over seeds or runs); "
        "the tiny and cpu profiles use models far too small to search well, so their numbers check that "
        "the pipeline runs and which way the curves move, not Relace's effect; under a reward without a "
        "turn term (FastContext's) fewer turns are not paid for; accuracy here is the reward's own part, "
        "on training tasks."
    )
