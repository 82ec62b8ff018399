"""A model before vs after SFT, through the harness on dev tasks: share of episodes whose tool
calls are all well-formed, share with a parsable report, calls per turn, turns, reward."""

from __future__ import annotations

from pathlib import Path

from fasbench.records import Task, Trace, append_jsonl, read_traces, repair_jsonl


def dev_tasks(profile, n: int | None = None) -> list[Task]:
    """``n`` dev tasks of the profile's eval source whose corpus can be materialised (never test)."""
    from fasbench.data import load_tasks
    from fasbench.sft.data import _materialized

    n = n if n is not None else profile.eval.n_tasks
    return _materialized(load_tasks(profile.eval.source, split="dev"), n, "dev corpora")


def episode_row(trace: Trace, task: Task, tools: list[dict], reward: str = "relace") -> dict:
    """Per-episode metrics. A call is well-formed when its arguments parsed to a JSON object and
    its name is one of the tools; ``wellformed`` = the episode made calls and all were well-formed;
    ``report_wellformed`` = that and a parsable report (the SFT acceptance measure)."""
    from fasbench.models import well_formed
    from fasbench.reward import score_report

    calls = [c for t in trace.turns for c in t.calls]
    ok = [well_formed(c, tools) for c in calls]
    s = score_report(reward, task.gold, trace.report, turns=trace.n_turns, root=task.root)
    return {"task_id": task.id, "policy": trace.policy, "turns": trace.n_turns, "calls": len(calls),
            "calls_per_turn": len(calls) / max(1, trace.n_turns), "wellformed_calls": sum(ok),
            "wellformed": bool(calls) and all(ok), "any_wellformed": any(ok),
            "report": trace.report is not None,
            "report_wellformed": trace.report is not None and bool(calls) and all(ok),
            "reward": s.value, "stop_reason": trace.stop_reason,
            "completion_tokens": sum(t.completion_tokens or 0 for t in trace.turns)}


def evaluate(model: str, tasks: list[Task], profile, label: str, out: str | Path | None = None) -> list[dict]:
    """Run ``model`` (a name or checkpoint for ``load_model``) greedily on ``tasks`` with the
    profile's tool set and limits; traces are appended to ``out`` (resuming) and per-episode rows
    returned."""
    from fasbench.harness import run_episode
    from fasbench.policies.hf import HFPolicy
    from fasbench.sft.data import limits
    from fasbench.tools import make_toolset
    from tqdm.auto import tqdm

    ev = profile.eval
    lim = limits(profile.build, max_turns=ev.max_turns)
    done: dict[str, Trace] = {}
    if out is not None and Path(out).exists():
        repair_jsonl(out)
        done = {t.task_id: t for t in read_traces(out)}
    pol = None
    rows = []
    for task in tqdm(tasks, desc=f"eval {label}"):
        tr = done.get(task.id)
        if tr is None:
            if pol is None:
                pol = HFPolicy(model, max_new_tokens=ev.max_new_tokens, temperature=ev.temperature, name=label)
            tr = run_episode(task, pol, profile.build.toolset, lim)
            if out is not None:
                append_jsonl(out, [tr])
        tools = make_toolset(profile.build.toolset, task.root).schemas
        rows.append({"model": label, **episode_row(tr, task, tools, ev.reward)})
    return rows


def summary(rows: list[dict]) -> dict:
    """Means of the per-episode metrics."""
    if not rows:
        return {}
    n = len(rows)
    keys = ("wellformed", "any_wellformed", "report", "report_wellformed", "calls_per_turn", "turns", "reward")
    return {"episodes": n, **{k: sum(float(r[k]) for r in rows) / n for k in keys}}


def dataset_frame(dataset, tokenizer):
    """One row per example (split, source, turns, calls, calls per turn, tokens), a polars frame."""
    import polars as pl

    from fasbench.sft.train import example_tokens

    rows = []
    for split in dataset:
        for ex in dataset[split]:
            rows.append({"split": split, "source": ex["source"], "turns": ex["n_turns"], "calls": ex["n_calls"],
                         "calls_per_turn": ex["n_calls"] / max(1, ex["n_turns"]),
                         "tokens": example_tokens(ex, tokenizer)})
    return pl.DataFrame(rows, schema={"split": pl.Utf8, "source": pl.Utf8, "turns": pl.Int64, "calls": pl.Int64,
                                      "calls_per_turn": pl.Float64, "tokens": pl.Int64})


def dataset_stats(frame):
    """Per split and source: examples, mean turns, calls per turn, mean and max tokens."""
    import polars as pl

    return (frame.group_by("split", "source").agg(
        pl.len().alias("examples"), pl.col("turns").mean().round(2).alias("turns"),
        pl.col("calls_per_turn").mean().round(2).alias("calls_per_turn"),
        pl.col("tokens").mean().round(0).alias("tokens_mean"), pl.col("tokens").max().alias("tokens_max"))
        .sort("split", "source"))
