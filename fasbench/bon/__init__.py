"""Budget-aware best-of-N for the search subagent: rollout pools, selectors, pool-state features,
calibrated Resolve-Now / Resolve-Later stopping, cascade and parallel-with-early-stopping
strategies, and their cost / latency / quality frontiers. See README.md for the file map."""

import importlib

# Names are imported on first use (PEP 562) so that `fasbench bon` registering its CLI does not
# load numpy and scikit-learn into every `fasbench` command.
_LAZY = {
    "GOALS": "fasbench.bon.experiment",
    "SEED": "fasbench.bon.experiment",
    "BonConfig": "fasbench.bon.experiment",
    "BonResult": "fasbench.bon.experiment",
    "compare": "fasbench.bon.experiment",
    "evaluate": "fasbench.bon.experiment",
    "result_table": "fasbench.bon.experiment",
    "tolerance_table": "fasbench.bon.experiment",
    "FEATURES": "fasbench.bon.features",
    "pool_features": "fasbench.bon.features",
    "states": "fasbench.bon.features",
    "Pool": "fasbench.bon.pool",
    "Rollout": "fasbench.bon.pool",
    "build_pools": "fasbench.bon.pool",
    "pool_path": "fasbench.bon.pool",
    "read_pools": "fasbench.bon.pool",
    "summarize": "fasbench.bon.pool",
    "write_pools": "fasbench.bon.pool",
    "SELECTORS": "fasbench.bon.select",
    "Selection": "fasbench.bon.select",
    "get_selector": "fasbench.bon.select",
    "judge_selector": "fasbench.bon.select",
    "majority": "fasbench.bon.select",
    "union_topk": "fasbench.bon.select",
    "StopClassifiers": "fasbench.bon.stop",
    "cross_fit": "fasbench.bon.stop",
    "fit_calibrated": "fasbench.bon.stop",
    "fit_stop": "fasbench.bon.stop",
    "Outcome": "fasbench.bon.strategies",
    "always_n": "fasbench.bon.strategies",
    "cascade": "fasbench.bon.strategies",
    "parallel": "fasbench.bon.strategies",
    "threshold_rule": "fasbench.bon.strategies",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'fasbench.bon' has no attribute {name!r}")


__all__ = [
    "GOALS",
    "SEED",
    "BonConfig",
    "BonResult",
    "compare",
    "evaluate",
    "result_table",
    "tolerance_table",
    "FEATURES",
    "pool_features",
    "states",
    "Pool",
    "Rollout",
    "build_pools",
    "pool_path",
    "read_pools",
    "summarize",
    "write_pools",
    "SELECTORS",
    "Selection",
    "get_selector",
    "judge_selector",
    "majority",
    "union_topk",
    "StopClassifiers",
    "cross_fit",
    "fit_calibrated",
    "fit_stop",
    "Outcome",
    "always_n",
    "cascade",
    "parallel",
    "threshold_rule",
]
