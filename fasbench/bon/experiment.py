"""End to end: states → calibrated classifiers → threshold grids → train-optimal configurations →
test-split savings against always-max-N with bootstrap intervals → frontier figures.

Thresholds are tuned on the training tasks with out-of-fold probabilities (``stop.cross_fit``),
so the tuning sees the same kind of error the test split will; the test split is scored by
classifiers fitted on all training tasks.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from fasbench.bon.features import FEATURES, states
from fasbench.bon.pool import Pool
from fasbench.bon.select import get_selector
from fasbench.bon.stop import brier, cross_fit, ece, fit_stop, reliability
from fasbench.bon.strategies import Outcome, always_n, cascade, parallel, threshold_rule

# The seed paper's headline numbers (budget-aware best-of-N), drawn beside ours.
SEED = {"cascade_cost_saving": 0.44, "cascade_latency_increase": (0.20, 0.41), "parallel_latency_saving": 0.25}
# This project's acceptance goals on the test split (issue 9): cascade cost saved at <= 1 point of
# quality loss, and latency saved by parallel early stopping.
GOALS = {"cascade_cost_saving": 0.40, "parallel_latency_saving": 0.25}

P_GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 1.01)  # 1.01: RN never stops
G_GRID = (-1.0, -0.05, 0.0, 0.02, 0.05, 0.1)  # -1: RL never stops


@dataclass
class BonConfig:
    """One best-of-N experiment."""

    selector: str = "majority"  # a name in select.SELECTORS
    schedule: tuple[int, ...] = (1, 3, 5, 10)  # cascade pool sizes; the last is max-N
    parallel_checks: tuple[int, ...] | None = None  # parallel decision points (finished rollouts); None = every finish
    cost: str = "tokens"  # rollout cost: tokens (reported, else estimated) | est_tokens | tool_time | calls | latency
    success_at: float = 0.5  # a selection "succeeds" when its quality reaches this
    max_loss: float = 1.0  # quality points (0–100 scale) a strategy may lose against max-N when tuned
    train_splits: tuple[str, ...] = ("train",)  # tasks that fit the classifiers and tune the thresholds
    test_splits: tuple[str, ...] = ("test",)  # tasks the savings are reported on
    calibration: str = "auto"  # isotonic | sigmoid | auto
    model: str = "logistic"  # logistic | hgb
    features: tuple[str, ...] = tuple(FEATURES)
    p_grid: tuple[float, ...] = P_GRID
    g_grid: tuple[float, ...] = G_GRID
    folds: int = 3  # task folds for out-of-fold probabilities and for calibration
    n_boot: int = 2000
    seed: int = 0


@dataclass
class StrategyResult:
    name: str  # cascade | parallel
    objective: str  # cost | latency
    grid: list[dict]  # one row per (split, p_target, g): relative cost/latency, quality, Δquality
    chosen: dict  # the train-optimal (p_target, g) and its train row
    test: dict  # the chosen config on the test split vs always-max-N, with bootstrap intervals
    outcomes: list[dict]  # per test task: the chosen strategy's and the baseline's outcome
    calibration: dict  # Brier / ECE of RN and the later classifier on the test states
    reliability: list[dict]


@dataclass
class BonResult:
    config: BonConfig
    n_train: int
    n_test: int
    baseline: dict  # always-max-N on the test split
    fixed: list[dict]  # always-n for each n in the schedule, per split
    strategies: dict[str, StrategyResult] = field(default_factory=dict)


def _trim(pools: Sequence[Pool], n: int) -> list[Pool]:
    out, short = [], 0
    for p in pools:
        if p.n < n:
            short += 1
            continue
        out.append(p if p.n == n else Pool(p.task_id, p.gold, p.rollouts[:n], p.split, p.reward))
    if short:
        warnings.warn(f"{short} task(s) have fewer than {n} rollouts and are left out")
    return out


def summarize(outs: Sequence[Outcome], base: Sequence[Outcome]) -> dict:
    """Relative cost and latency (sums over tasks, strategy / baseline), quality in points."""
    c, cb = sum(o.cost for o in outs), sum(o.cost for o in base)
    lat, lb = sum(o.latency for o in outs), sum(o.latency for o in base)
    q, qb = 100 * np.mean([o.quality for o in outs]), 100 * np.mean([o.quality for o in base])
    return {"cost_rel": c / cb if cb else float("nan"), "latency_rel": lat / lb if lb else float("nan"),
            "quality": float(q), "dq": float(q - qb), "n_mean": float(np.mean([o.n_used for o in outs])), "tasks": len(outs)}


def compare(outs: Sequence[Outcome], base: Sequence[Outcome], n_boot: int = 2000, seed: int = 0,
            alpha: float = 0.05) -> dict:
    """Savings of a strategy against the baseline on the same tasks, with percentile bootstrap
    intervals over tasks: cost and latency saved (1 − Σ strategy / Σ baseline) and the quality
    difference in points."""
    if [o.task_id for o in outs] != [o.task_id for o in base]:
        raise ValueError("compare: strategy and baseline outcomes must cover the same tasks in the same order")
    c, cb = np.array([o.cost for o in outs]), np.array([o.cost for o in base])
    lt, lb = np.array([o.latency for o in outs]), np.array([o.latency for o in base])
    q, qb = 100 * np.array([o.quality for o in outs]), 100 * np.array([o.quality for o in base])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(c), size=(n_boot, len(c)))
    boot = {
        "cost_saved": 1 - c[idx].sum(1) / cb[idx].sum(1),
        "latency_saved": 1 - lt[idx].sum(1) / lb[idx].sum(1),
        "dq": (q - qb)[idx].mean(1),
    }
    point = {"cost_saved": 1 - c.sum() / cb.sum(), "latency_saved": 1 - lt.sum() / lb.sum(), "dq": float((q - qb).mean())}
    out = {"tasks": len(c), "quality": float(q.mean()), "quality_base": float(qb.mean()),
           "n_mean": float(np.mean([o.n_used for o in outs]))}
    for k, v in point.items():
        out[k] = float(v)
        out[k + "_lo"] = float(np.quantile(boot[k], alpha / 2))
        out[k + "_hi"] = float(np.quantile(boot[k], 1 - alpha / 2))
    return out


def _run(name: str, pools: Sequence[Pool], selector, cfg: BonConfig, decide) -> list[Outcome]:
    if name == "cascade":
        return [cascade(p, selector, cfg.schedule, decide, cfg.cost) for p in pools]
    return [parallel(p, selector, decide, cfg.cost, cfg.parallel_checks) for p in pools]


def _strategy(name: str, train: list[Pool], test: list[Pool], selector, cfg: BonConfig, base: dict) -> StrategyResult:
    order, sched = ("launch", cfg.schedule) if name == "cascade" else ("finish", cfg.parallel_checks)
    feats = list(cfg.features)
    rows_tr = states(train, selector, order, sched, cfg.success_at)
    rows_te = states(test, selector, order, sched, cfg.success_at)
    a, b = cross_fit(rows_tr, feats, cfg.calibration, cfg.model, cfg.folds, cfg.seed)
    model = fit_stop(rows_tr, feats, cfg.calibration, cfg.model, cfg.folds)
    c, d = model.predict(rows_te)
    probs = {"train": {(r["task_id"], int(r["n"])): (x, y) for r, x, y in zip(rows_tr, a, b)},
             "test": {(r["task_id"], int(r["n"])): (x, y) for r, x, y in zip(rows_te, c, d)}}
    split_pools = {"train": train, "test": test}
    grid, outs_by = [], {}
    for split in ("train", "test"):
        for pt in cfg.p_grid:
            for g in cfg.g_grid:
                outs = _run(name, split_pools[split], selector, cfg, threshold_rule(probs[split], pt, g))
                outs_by[(split, pt, g)] = outs
                grid.append({"strategy": name, "split": split, "p_target": pt, "g": g,
                             **summarize(outs, base[split])})
    objective = "cost" if name == "cascade" else "latency"
    key = f"{objective}_rel"
    ok = [r for r in grid if r["split"] == "train" and r["dq"] >= -cfg.max_loss - 1e-9]
    best = min(ok, key=lambda r: (r[key], -r["dq"], -r["p_target"]))
    chosen = {"p_target": best["p_target"], "g": best["g"], "train": best}
    outs = outs_by[("test", best["p_target"], best["g"])]
    test_cmp = compare(outs, base["test"], cfg.n_boot, cfg.seed)
    per_task = [{"task_id": o.task_id, "strategy": o.to_dict(), "baseline": bo.to_dict()}
                for o, bo in zip(outs, base["test"])]
    y_now, y_next = [r["success"] for r in rows_te], [r["success_next"] for r in rows_te]
    prior = np.mean([r["success"] for r in rows_tr])
    calib = {"rn_brier": brier(y_now, c), "rn_ece": ece(y_now, c), "rn_brier_prior": brier(y_now, np.full(len(c), prior)),
             "later_brier": brier(y_next, d), "later_ece": ece(y_next, d), "test_states": len(rows_te)}
    return StrategyResult(name, objective, grid, chosen, test_cmp, per_task, calib, reliability(y_now, c))


def evaluate(pools: Sequence[Pool], cfg: BonConfig | None = None) -> BonResult:
    """Run the whole experiment on pools that carry their split."""
    cfg = cfg or BonConfig()
    selector = get_selector(cfg.selector)
    n_max = cfg.schedule[-1]
    pools = _trim(pools, n_max)
    train = [p for p in pools if p.split in cfg.train_splits]
    test = [p for p in pools if p.split in cfg.test_splits]
    if len(train) < 2 or not test:
        raise ValueError(f"need >= 2 training and >= 1 test tasks with {n_max} rollouts; have {len(train)} in "
                         f"{cfg.train_splits} and {len(test)} in {cfg.test_splits}")
    base = {s: [always_n(p, selector, n_max, cfg.cost) for p in ps] for s, ps in (("train", train), ("test", test))}
    fixed = []
    for s, ps in (("train", train), ("test", test)):
        for n in cfg.schedule:
            fixed.append({"strategy": f"always-{n}", "split": s, "n": n,
                          **summarize([always_n(p, selector, n, cfg.cost) for p in ps], base[s])})
    res = BonResult(cfg, len(train), len(test), summarize(base["test"], base["test"]), fixed)
    for name in ("cascade", "parallel"):
        res.strategies[name] = _strategy(name, train, test, selector, cfg, base)
    return res


def result_table(res: BonResult) -> list[dict]:
    """The headline rows: per strategy, the train-optimal thresholds and the test-split savings."""
    rows = []
    for name, s in res.strategies.items():
        t = s.test
        rows.append({"strategy": name, "p_target": s.chosen["p_target"], "g": s.chosen["g"],
                     "cost_saved_%": 100 * t["cost_saved"], "cost_ci_%": (100 * t["cost_saved_lo"], 100 * t["cost_saved_hi"]),
                     "latency_saved_%": 100 * t["latency_saved"],
                     "latency_ci_%": (100 * t["latency_saved_lo"], 100 * t["latency_saved_hi"]),
                     "dq_points": t["dq"], "dq_ci": (t["dq_lo"], t["dq_hi"]), "n_mean": t["n_mean"],
                     "rn_brier": s.calibration["rn_brier"], "rn_brier_prior": s.calibration["rn_brier_prior"],
                     "rn_ece": s.calibration["rn_ece"]})
    return rows


def to_dict(res: BonResult) -> dict:
    return {"config": asdict(res.config), "n_train": res.n_train, "n_test": res.n_test, "baseline": res.baseline,
            "fixed": res.fixed, "strategies": {k: asdict(v) for k, v in res.strategies.items()}}


def tolerance_table(res: BonResult, tolerances: Sequence[float] = (0.0, 1.0, 2.0, 5.0, 10.0)) -> list[dict]:
    """For each allowed quality loss (points), the train-optimal thresholds and their test-split
    savings (point values from the grid): how much a looser quality budget buys."""
    rows = []
    for name, s in res.strategies.items():
        key = f"{s.objective}_rel"
        for tol in tolerances:
            ok = [r for r in s.grid if r["split"] == "train" and r["dq"] >= -tol - 1e-9]
            b = min(ok, key=lambda r: (r[key], -r["dq"], -r["p_target"]))
            t = next(r for r in s.grid if r["split"] == "test" and r["p_target"] == b["p_target"] and r["g"] == b["g"])
            rows.append({"strategy": name, "max_loss": tol, "p_target": b["p_target"], "g": b["g"],
                         "train_dq": b["dq"], "test_dq": t["dq"], "test_cost_saved_%": 100 * (1 - t["cost_rel"]),
                         "test_latency_saved_%": 100 * (1 - t["latency_rel"]), "test_n_mean": t["n_mean"]})
    return rows
