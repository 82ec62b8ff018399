"""Best-of-N strategies replayed on a recorded pool, with exact cost and latency accounting.

Rollouts are assumed to run on independent workers (as with an API model): a batch launched
together takes as long as its slowest rollout.

- ``always_n``: launch the first ``n`` rollouts together; cost = their summed cost, latency = the
  slowest one. ``n`` = the pool's maximum is the always-max-N baseline.
- ``cascade``: pool sizes ``schedule`` (e.g. 1, 3, 5, 10); batch ``j`` launches rollouts
  ``s[j-1] .. s[j]-1`` together after the previous batch ended; after each batch ``decide`` may
  stop. Cost = summed cost of the rollouts run; latency = the sum of the batches' latencies.
- ``parallel``: launch all at once; when the ``n``-th rollout finishes (at time t) ``decide`` may
  stop and cancel the rest. Cost = finished rollouts' cost + each cancelled rollout's cost
  pro-rated to the time it ran, ``c · t / latency``; latency = t.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from fasbench.bon.features import checkpoints, select_state
from fasbench.bon.pool import Pool
from fasbench.bon.select import Selector

# decide(pool, stage, n) -> stop now?  (stage = index of the checkpoint, n = pool size there)
Decide = Callable[[Pool, int, int], bool]


@dataclass
class Outcome:
    task_id: str
    strategy: str
    n_used: int  # rollouts whose answers the selector saw
    cost: float
    latency: float
    quality: float
    stage: int  # checkpoint index where it stopped

    def to_dict(self) -> dict:
        return asdict(self)


def never(pool: Pool, stage: int, n: int) -> bool:
    return False


def always_n(pool: Pool, selector: Selector, n: int | None = None, cost: str = "tokens") -> Outcome:
    n = pool.n if n is None else n
    if not 1 <= n <= pool.n:
        raise ValueError(f"always_n: n={n} but task {pool.task_id} has {pool.n} rollouts")
    rs = pool.rollouts[:n]
    q = select_state(pool, selector, n, "launch")[1]
    return Outcome(pool.task_id, f"always-{n}", n, sum(r.cost(cost) for r in rs), max(r.latency for r in rs), q, 0)


def cascade(
    pool: Pool, selector: Selector, schedule: Sequence[int], decide: Decide = never, cost: str = "tokens"
) -> Outcome:
    sizes = checkpoints(pool.n, schedule)
    prev, lat, c = 0, 0.0, 0.0
    for j, s in enumerate(sizes):
        batch = pool.rollouts[prev:s]
        lat += max(r.latency for r in batch)
        c += sum(r.cost(cost) for r in batch)
        prev = s
        if j == len(sizes) - 1 or decide(pool, j, s):
            break
    q = select_state(pool, selector, s, "launch")[1]
    return Outcome(pool.task_id, "cascade", s, c, lat, q, j)


def parallel(
    pool: Pool, selector: Selector, decide: Decide = never, cost: str = "tokens", checks: Sequence[int] | None = None
) -> Outcome:
    fin = pool.finish_order()
    sizes = checkpoints(pool.n, checks)
    for j, s in enumerate(sizes):
        t = fin[s - 1].latency
        if j == len(sizes) - 1 or decide(pool, j, s):
            break
    c = sum(r.cost(cost) for r in fin[:s])
    c += sum(r.cost(cost) * (min(1.0, t / r.latency) if r.latency > 0 else 1.0) for r in fin[s:])
    q = select_state(pool, selector, s, "finish")[1]
    return Outcome(pool.task_id, "parallel", s, c, t, q, j)


def threshold_rule(probs: dict, p_target: float, g: float) -> Decide:
    """Stop when RN ≥ p_target (the pool already resolves the task) or when RL = p_later − p_now
    < g (one more batch is not worth it). ``probs`` maps (task_id, n) → (p_now, p_later)."""

    def decide(pool: Pool, stage: int, n: int) -> bool:
        p_now, p_later = probs[(pool.task_id, n)]
        return p_now >= p_target or (p_later - p_now) < g

    return decide


def oracle_rule(selector: Selector, order: str) -> Decide:
    """The oracle bound: stop at the first checkpoint whose selected answer is already as good as
    the full pool's (it knows the gold). No classifier can save more without losing quality."""

    def decide(pool: Pool, stage: int, n: int) -> bool:
        return select_state(pool, selector, n, order)[1] >= select_state(pool, selector, pool.n, order)[1] - 1e-12

    return decide
