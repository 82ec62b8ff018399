"""End to end, in the seed's protocol: states → ONE pair of calibrated classifiers (Resolve-Now and
one-more-batch, fitted on the cascade's training states) → a threshold grid run through both
strategies → ONE train-optimal (p_target, g) shared by cascade and parallel → test-split savings
against always-max-N with task-bootstrap intervals, the oracle bound and calibration diagnostics.

Thresholds are tuned on the training tasks with out-of-fold probabilities (task folds), so the
tuning sees the same kind of error the test split will; the test split is scored by the
classifiers fitted on all training tasks. Latency is, by default, what a served model would take
(``fasbench.bon.latency``). Sign convention everywhere: ``*_saved`` > 0 is a saving (cost or
latency below always-max-N), < 0 a premium; ``dq`` > 0 is a quality gain, in points (0–100).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fasbench.bon.features import FEATURES, states
from fasbench.bon.latency import LatencyModel, with_latency
from fasbench.bon.pool import Pool, find_pool, read_pools
from fasbench.bon.select import get_selector
from fasbench.bon.stop import brier, ece, fit_stop, reliability
from fasbench.bon.strategies import Outcome, always_n, cascade, oracle_rule, parallel, threshold_rule

# The seed paper's headline numbers (budget-aware best-of-N), drawn beside ours.
SEED = {"cascade_cost_saving": 0.44, "cascade_latency_increase": (0.20, 0.41), "parallel_latency_saving": 0.25}
# This project's acceptance goals on the test split (issue 20: the seed's numbers): cascade cost saved
# and parallel latency saved, each at <= 1 point of quality loss.
GOALS = {"cascade_cost_saving": 0.44, "parallel_latency_saving": 0.25}

P_GRID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 1.01)  # 1.01: RN never stops
G_GRID = (-1.0, -0.05, 0.0, 0.02, 0.05, 0.1)  # -1: RL never stops


@dataclass
class BonConfig:
    """One best-of-N experiment."""

    selector: str = "majority"  # a name in select.SELECTORS
    schedule: tuple[int, ...] = (1, 3, 5, 10)  # cascade pool sizes; the last is max-N
    parallel_checks: tuple[int, ...] | None = None  # parallel decision points (finished rollouts); None = the schedule
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
    tune: str = "joint"  # what the shared thresholds minimise on train: joint | cost | latency
    latency: str = "auto"  # model: LatencyModel below (a served model's share from tokens) | wall: measured | auto: model when every rollout has a token split
    decode_tps: float = 100.0
    prefill_tps: float = 5000.0
    turn_overhead_s: float = 0.05

    def __post_init__(self):
        if self.tune not in ("joint", "cost", "latency"):
            raise ValueError(f"tune must be joint, cost or latency, got {self.tune!r}")
        if self.latency not in ("model", "wall", "auto"):
            raise ValueError(f"latency must be model, wall or auto, got {self.latency!r}")

    def latency_model(self, pools: Sequence[Pool] = ()) -> LatencyModel | None:
        """The latency model, or None for measured wall times (``auto``: the model when every
        rollout carries its token split)."""
        use = self.latency == "model" or (
            self.latency == "auto"
            and all(r.prefill_tokens is not None and r.decode_tokens is not None for p in pools for r in p.rollouts)
        )
        return LatencyModel(self.decode_tps, self.prefill_tps, self.turn_overhead_s) if use else None


@dataclass
class StrategyResult:
    name: str  # cascade | parallel
    objective: str  # cost | latency
    grid: list[dict]  # one row per (split, p_target, g): relative cost/latency, quality, Δquality
    chosen: dict  # the shared train-optimal (p_target, g) and this strategy's train row
    test: dict  # the chosen config on the test split vs always-max-N, with bootstrap intervals
    outcomes: list[dict]  # per test task: the chosen strategy's and the baseline's outcome
    calibration: dict  # Brier / ECE of RN and the later classifier on the test states; the oracle bound
    reliability: list[dict]


@dataclass
class BonResult:
    config: BonConfig
    n_train: int
    n_test: int
    baseline: dict  # always-max-N on the test split
    fixed: list[dict]  # always-n for each n in the schedule, per split
    strategies: dict[str, StrategyResult] = field(default_factory=dict)
    latency_source: str = "wall"  # model (fasbench.bon.latency) | wall (measured episode time)


def _trim(pools: Sequence[Pool], n: int) -> list[Pool]:
    out, short = [], 0
    for p in pools:
        if p.n < n:
            short += 1
            continue
        out.append(p if p.n == n else Pool(p.task_id, p.gold, p.rollouts[:n], p.split, p.reward))
    if short:
        warnings.warn(f"{short} task(s) have fewer than {n} rollouts and are left out", stacklevel=2)
    return out


def summarize(outs: Sequence[Outcome], base: Sequence[Outcome]) -> dict:
    """Relative cost and latency (sums over tasks, strategy / baseline), quality in points."""
    c, cb = sum(o.cost for o in outs), sum(o.cost for o in base)
    lat, lb = sum(o.latency for o in outs), sum(o.latency for o in base)
    q, qb = 100 * np.mean([o.quality for o in outs]), 100 * np.mean([o.quality for o in base])
    return {
        "cost_rel": c / cb if cb else float("nan"),
        "latency_rel": lat / lb if lb else float("nan"),
        "quality": float(q),
        "dq": float(q - qb),
        "n_mean": float(np.mean([o.n_used for o in outs])),
        "tasks": len(outs),
    }


def compare(
    outs: Sequence[Outcome], base: Sequence[Outcome], n_boot: int = 2000, seed: int = 0, alpha: float = 0.05
) -> dict:
    """Savings of a strategy against the baseline on the same tasks, with percentile bootstrap
    intervals over tasks: cost and latency saved (1 − Σ strategy / Σ baseline) and the quality
    difference in points."""
    if [o.task_id for o in outs] != [o.task_id for o in base]:
        raise ValueError("compare: strategy and baseline outcomes must cover the same tasks in the same order")
    c, cb = np.array([o.cost for o in outs]), np.array([o.cost for o in base])
    lt, lb = np.array([o.latency for o in outs]), np.array([o.latency for o in base])
    q, qb = 100 * np.array([o.quality for o in outs]), 100 * np.array([o.quality for o in base])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(c), size=(max(1, n_boot), len(c))) if n_boot else np.arange(len(c))[None, :]
    boot = {
        "cost_saved": 1 - c[idx].sum(1) / cb[idx].sum(1),
        "latency_saved": 1 - lt[idx].sum(1) / lb[idx].sum(1),
        "dq": (q - qb)[idx].mean(1),
    }
    point = {
        "cost_saved": 1 - c.sum() / cb.sum(),
        "latency_saved": 1 - lt.sum() / lb.sum(),
        "dq": float((q - qb).mean()),
    }
    out = {
        "tasks": len(c),
        "quality": float(q.mean()),
        "quality_base": float(qb.mean()),
        "n_mean": float(np.mean([o.n_used for o in outs])),
    }
    for k, v in point.items():
        out[k] = float(v)
        out[k + "_lo"] = float(np.quantile(boot[k], alpha / 2))
        out[k + "_hi"] = float(np.quantile(boot[k], 1 - alpha / 2))
    return out


def _run(name: str, pools: Sequence[Pool], selector, cfg: BonConfig, decide) -> list[Outcome]:
    if name == "cascade":
        return [cascade(p, selector, cfg.schedule, decide, cfg.cost) for p in pools]
    return [parallel(p, selector, decide, cfg.cost, _checks(cfg)) for p in pools]


def _checks(cfg: BonConfig) -> tuple[int, ...]:
    """Parallel decision points: the cascade's stages unless set (the seed checks its classifiers
    "as finished rollouts reach the stage thresholds")."""
    return tuple(cfg.parallel_checks) if cfg.parallel_checks else tuple(cfg.schedule)


ORDERS = {"cascade": "launch", "parallel": "finish"}


def shared_probabilities(rows: dict, cfg: BonConfig, feats: list[str]):
    """The seed's protocol: ONE pair of calibrated classifiers (RN, one-more-batch), fitted on the
    cascade's training states, scores every state of both strategies. Training states get
    out-of-fold probabilities (task folds; each task scored by classifiers that never saw it);
    test states are scored by the classifiers fitted on all training tasks."""
    fit_rows = rows[("train", "cascade")]
    tasks = np.array(sorted({r["task_id"] for r in fit_rows}))
    if len(tasks) < 2:
        raise ValueError(f"need states of >= 2 training tasks, got {len(tasks)}")
    fold = {t: i % cfg.folds for i, t in enumerate(np.random.default_rng(cfg.seed).permutation(tasks))}
    probs: dict = {}
    for name in ORDERS:
        probs[("train", name)] = {}
    for k in range(min(cfg.folds, len(tasks))):
        m = fit_stop([r for r in fit_rows if fold[r["task_id"]] != k], feats, cfg.calibration, cfg.model, cfg.folds)
        for name in ORDERS:
            held = [r for r in rows[("train", name)] if fold.get(r["task_id"]) == k]
            a, b = m.predict(held)
            probs[("train", name)].update({(r["task_id"], int(r["n"])): (x, y) for r, x, y in zip(held, a, b)})
    model = fit_stop(fit_rows, feats, cfg.calibration, cfg.model, cfg.folds)
    for name in ORDERS:
        te = rows[("test", name)]
        a, b = model.predict(te)
        probs[("test", name)] = {(r["task_id"], int(r["n"])): (x, y) for r, x, y in zip(te, a, b)}
    return model, probs


def _objective(rows: dict, cfg: BonConfig) -> float:
    if cfg.tune == "cost":
        return rows["cascade"]["cost_rel"]
    if cfg.tune == "latency":
        return rows["parallel"]["latency_rel"]
    return (rows["cascade"]["cost_rel"] + rows["parallel"]["latency_rel"]) / 2


def choose(grid: Sequence[dict], cfg: BonConfig, max_loss: float) -> dict:
    """The shared (p_target, g): among the configurations where the tuned strategies lose at most
    ``max_loss`` points on train, the one with the least objective; ties go to the higher quality,
    then the safer (higher) p_target and lower g. ``cfg.tune``: ``joint`` = the mean of the
    cascade's relative cost and parallel's relative latency, both held to ``max_loss``; ``cost``
    = the cascade's cost, only the cascade held (the seed: parallel reuses the cascade's
    thresholds); ``latency`` = parallel's latency, only parallel held."""
    by: dict = {}
    for r in grid:
        if r["split"] == "train":
            by.setdefault((r["p_target"], r["g"]), {})[r["strategy"]] = r
    held = {"cost": ("cascade",), "latency": ("parallel",), "joint": tuple(ORDERS)}[cfg.tune]
    ok = [(k, v) for k, v in by.items() if all(v[n]["dq"] >= -max_loss - 1e-9 for n in held)]
    (pt, g), v = min(
        ok, key=lambda kv: (_objective(kv[1], cfg), -sum(x["dq"] for x in kv[1].values()), -kv[0][0], kv[0][1])
    )
    return {"p_target": pt, "g": g, "train": v}


def evaluate(pools: Sequence[Pool], cfg: BonConfig | None = None) -> BonResult:
    """Run the whole experiment on pools that carry their split."""
    cfg = cfg or BonConfig()
    selector = get_selector(cfg.selector)
    n_max = cfg.schedule[-1]
    pools = _trim(pools, n_max)
    lat_model = cfg.latency_model(pools)
    pools = with_latency(pools, lat_model)
    train = [p for p in pools if p.split in cfg.train_splits]
    test = [p for p in pools if p.split in cfg.test_splits]
    if len(train) < 2 or not test:
        raise ValueError(
            f"need >= 2 training and >= 1 test tasks with {n_max} rollouts; have {len(train)} in "
            f"{cfg.train_splits} and {len(test)} in {cfg.test_splits}"
        )
    split_pools = {"train": train, "test": test}
    base = {s: [always_n(p, selector, n_max, cfg.cost) for p in ps] for s, ps in split_pools.items()}
    fixed = []
    for s, ps in split_pools.items():
        for n in cfg.schedule:
            fixed.append(
                {
                    "strategy": f"always-{n}",
                    "split": s,
                    "n": n,
                    **summarize([always_n(p, selector, n, cfg.cost) for p in ps], base[s]),
                }
            )
    res = BonResult(
        cfg,
        len(train),
        len(test),
        summarize(base["test"], base["test"]),
        fixed,
        latency_source="model" if lat_model else "wall",
    )
    feats = list(cfg.features)
    rows = {
        (s, name): states(
            split_pools[s], selector, ORDERS[name], cfg.schedule if name == "cascade" else _checks(cfg), cfg.success_at
        )
        for s in split_pools
        for name in ORDERS
    }
    _, probs = shared_probabilities(rows, cfg, feats)
    grid, outs_by = [], {}
    for s in split_pools:
        for pt in cfg.p_grid:
            for g in cfg.g_grid:
                for name in ORDERS:
                    outs = _run(name, split_pools[s], selector, cfg, threshold_rule(probs[(s, name)], pt, g))
                    outs_by[(name, s, pt, g)] = outs
                    grid.append({"strategy": name, "split": s, "p_target": pt, "g": g, **summarize(outs, base[s])})
    chosen = choose(grid, cfg, cfg.max_loss)
    prior = np.mean([r["success"] for r in rows[("train", "cascade")]])
    for name in ORDERS:
        outs = outs_by[(name, "test", chosen["p_target"], chosen["g"])]
        test_cmp = compare(outs, base["test"], cfg.n_boot, cfg.seed)
        oracle = compare(
            _run(name, test, selector, cfg, oracle_rule(selector, ORDERS[name])), base["test"], 0, cfg.seed
        )
        per_task = [
            {"task_id": o.task_id, "strategy": o.to_dict(), "baseline": bo.to_dict()}
            for o, bo in zip(outs, base["test"])
        ]
        te = rows[("test", name)]
        c = np.array([probs[("test", name)][(r["task_id"], int(r["n"]))][0] for r in te])
        d = np.array([probs[("test", name)][(r["task_id"], int(r["n"]))][1] for r in te])
        y_now, y_next = [r["success"] for r in te], [r["success_next"] for r in te]
        calib = {
            "rn_brier": brier(y_now, c),
            "rn_ece": ece(y_now, c),
            "rn_brier_prior": brier(y_now, np.full(len(c), prior)),
            "later_brier": brier(y_next, d),
            "later_ece": ece(y_next, d),
            "test_states": len(te),
            "oracle": oracle,
        }
        res.strategies[name] = StrategyResult(
            name,
            "cost" if name == "cascade" else "latency",
            [r for r in grid if r["strategy"] == name],
            {"p_target": chosen["p_target"], "g": chosen["g"], "train": chosen["train"][name]},
            test_cmp,
            per_task,
            calib,
            reliability(y_now, c),
        )
    return res


def parse_schedule(text: str) -> tuple[int, ...]:
    """``"1,3,5,10"`` → ``(1, 3, 5, 10)``; a ValueError naming ``--schedule`` otherwise."""
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--schedule must be comma-separated integers, got {text!r}") from None


def evaluate_pool(pool: str | Path, cfg: BonConfig, judge: str = "", judge_tasks: Sequence | None = None) -> BonResult:
    """``fasbench bon evaluate``: :func:`evaluate` on a pool file (a path, or a name
    :func:`fasbench.bon.pool.find_pool` knows), its first ``cfg.schedule[-1]`` rollouts a task.
    ``cfg.selector == "llm-judge"`` asks the ``judge`` endpoint over ``judge_tasks`` (both needed)."""
    p = Path(pool) if Path(pool).exists() else find_pool(str(pool))
    if cfg.selector == "llm-judge":
        # local import: the judge's policies (httpx) are heavy, only for this selector
        from fasbench.bon.pool_judge import llm_judge_selector

        if not judge or judge_tasks is None:
            raise ValueError(
                "--selector llm-judge needs --judge model=NAME,base_url=URL and --tasks (the pool's tasks)"
            )
        cfg.selector, _ = llm_judge_selector(judge, judge_tasks)
    cfg.latency_model()  # validates the speeds
    return evaluate(read_pools(p, n=cfg.schedule[-1]), cfg)


def result_table(res: BonResult) -> list[dict]:
    """The headline rows: per strategy, the train-optimal thresholds and the test-split savings."""
    rows = []
    for name, s in res.strategies.items():
        t = s.test
        o = s.calibration["oracle"]
        rows.append(
            {
                "strategy": name,
                "n_test_tasks": t["tasks"],
                "p_target": s.chosen["p_target"],
                "g": s.chosen["g"],
                "cost_saved_%": 100 * t["cost_saved"],
                "cost_ci_%": (100 * t["cost_saved_lo"], 100 * t["cost_saved_hi"]),
                "latency_saved_%": 100 * t["latency_saved"],
                "latency_ci_%": (100 * t["latency_saved_lo"], 100 * t["latency_saved_hi"]),
                "dq_points": t["dq"],
                "dq_ci": (t["dq_lo"], t["dq_hi"]),
                "n_mean": t["n_mean"],
                "rn_brier": s.calibration["rn_brier"],
                "rn_brier_prior": s.calibration["rn_brier_prior"],
                "rn_ece": s.calibration["rn_ece"],
                "oracle_cost_saved_%": 100 * o["cost_saved"],
                "oracle_latency_saved_%": 100 * o["latency_saved"],
                "oracle_dq_points": o["dq"],
            }
        )
    return rows


def to_dict(res: BonResult) -> dict:
    return {
        "config": asdict(res.config),
        "latency_source": res.latency_source,
        "n_train": res.n_train,
        "n_test": res.n_test,
        "baseline": res.baseline,
        "fixed": res.fixed,
        "strategies": {k: asdict(v) for k, v in res.strategies.items()},
    }


def tolerance_table(res: BonResult, tolerances: Sequence[float] = (0.0, 1.0, 2.0, 5.0, 10.0)) -> list[dict]:
    """For each allowed quality loss (points), the shared train-optimal thresholds and their
    test-split savings for both strategies (point values from the grid): what a looser quality
    budget buys."""
    grid = [r for s in res.strategies.values() for r in s.grid]
    rows = []
    for tol in tolerances:
        ch = choose(grid, res.config, tol)
        for name in res.strategies:
            t = next(
                r
                for r in grid
                if r["strategy"] == name
                and r["split"] == "test"
                and r["p_target"] == ch["p_target"]
                and r["g"] == ch["g"]
            )
            rows.append(
                {
                    "strategy": name,
                    "max_loss": tol,
                    "p_target": ch["p_target"],
                    "g": ch["g"],
                    "train_dq": ch["train"][name]["dq"],
                    "test_dq": t["dq"],
                    "test_cost_saved_%": 100 * (1 - t["cost_rel"]),
                    "test_latency_saved_%": 100 * (1 - t["latency_rel"]),
                    "test_n_mean": t["n_mean"],
                }
            )
    return rows
