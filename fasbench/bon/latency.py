"""Latency of a rollout as it would be with a served model, not as the local machine measured it.

A pool built with the LLM-free heuristic (or on a loaded shared CPU) has wall times that say
nothing about a served model: the heuristic "decides" in microseconds and the machine's contention
dominates. ``LatencyModel`` replaces each rollout's latency with

    latency = prefill_tokens / prefill_tps + decode_tokens / decode_tps + turns · turn_overhead_s + tool_time

where ``prefill_tokens`` are the input tokens not already in the previous turn's context (a server
with a prefix cache, e.g. vLLM's automatic prefix caching), ``decode_tokens`` what the model wrote
(both reported by the endpoint when a model policy ran, else chars / 4 from the trace; see
``fasbench.bon.pool.token_split``) and ``tool_time`` the measured tool wall time (per turn, the
slowest of its concurrent calls). The defaults are assumptions for a small (≈4–8B) searcher served
alone on one modern GPU: 100 decoded tokens/s per stream, 5 000 prefilled tokens/s, 0.05 s
scheduling / first-token overhead per turn. They are parameters (``fasbench bon evaluate
--decode-tps/--prefill-tps/--turn-overhead``), not measurements; the relative savings depend on the
decode share of a rollout, which the notebook shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from fasbench.bon.pool import Pool, Rollout


@dataclass(frozen=True)
class LatencyModel:
    decode_tps: float = 100.0  # decoded tokens per second, one stream
    prefill_tps: float = 5000.0  # prefilled (new input) tokens per second
    turn_overhead_s: float = 0.05  # per model call: scheduling, first-token latency, network

    def __post_init__(self):
        if self.decode_tps <= 0 or self.prefill_tps <= 0 or self.turn_overhead_s < 0:
            raise ValueError(f"latency model: speeds must be > 0 and the overhead >= 0, got {self}")

    def model_time(self, r: Rollout) -> float:
        """The model's share of the rollout's latency (seconds)."""
        if r.prefill_tokens is None or r.decode_tokens is None:
            raise ValueError(
                f"rollout {r.task_id}#{r.index} has no token split (prefill/decode tokens); "
                "rebuild the pool, or evaluate with the measured wall time (--latency wall)"
            )
        return r.prefill_tokens / self.prefill_tps + r.decode_tokens / self.decode_tps + r.turns * self.turn_overhead_s

    def latency(self, r: Rollout) -> float:
        return self.model_time(r) + r.tool_time


def with_latency(pools: Sequence[Pool], model: LatencyModel | None) -> list[Pool]:
    """Copies of the pools whose rollouts' ``latency`` is the model's (``None``: unchanged, the
    measured wall time)."""
    if model is None:
        return list(pools)
    return [
        Pool(
            p.task_id, p.gold, [dataclasses.replace(r, latency=model.latency(r)) for r in p.rollouts], p.split, p.reward
        )
        for p in pools
    ]
