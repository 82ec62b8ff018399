"""``fasbench bon pools`` (build rollout pools, resumable) and ``fasbench bon evaluate`` (the
cascade / parallel experiment on a pool file)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from fasbench.data.corpora import with_corpora
from fasbench.data.tasksets import load_task_set

TASKS_HELP = "a task set: SOURCE[:SPLIT], a Task JSONL file[:SPLIT] or git:PATH (fasbench.data.tasksets)"


def register(app: typer.Typer) -> None:
    bon = typer.Typer(no_args_is_help=True, help="budget-aware best-of-N: rollout pools and stopping strategies")
    app.add_typer(bon, name="bon")

    @bon.command("pools")
    def pools_cmd(
        tasks: str = typer.Option(..., "--tasks", help=TASKS_HELP),
        n: int = typer.Option(10, "--n", help="rollouts per task"),
        policy: str = typer.Option("heuristic:temperature=1.0", "--policy", help="policy spec; rollout k adds seed=k"),
        toolset: str = typer.Option("relace", "--toolset"),
        name: str = typer.Option("heuristic-t1", "--name", help="pool name: <cache>/bon/<name>.jsonl"),
        limit: int | None = typer.Option(None, "--limit", help="first N tasks only"),
        reward: str = typer.Option("relace-f2", "--reward"),
        max_turns: int = typer.Option(6, "--max-turns", min=1),
        keep_traces: bool = typer.Option(
            False, "--keep-traces", help="also append full traces to <cache>/bon/<name>.traces.jsonl"
        ),
    ):
        """Run N rollouts per task and append them to the pool file (resumes)."""
        # local import: the harness, tools and policies are heavy to import
        from fasbench.bon.pool import build_pools, pool_path, seeded_policies
        from fasbench.harness import Limits

        make = seeded_policies(policy, reward, n)  # the options' checks, before any task loads
        ts = with_corpora(load_task_set(tasks, limit), desc="bon corpora").tasks
        out = pool_path(name)
        traces = out.with_suffix(".traces.jsonl") if keep_traces else None
        build_pools(ts, make, toolset, n, out, Limits(max_turns=max_turns), reward, traces_out=traces)
        typer.echo(str(out))

    @bon.command("reverify")
    def reverify_cmd(
        pool: Path = typer.Argument(..., help="pool JSONL file built with --keep-traces"),
        tasks: str = typer.Option(..., "--tasks", help=f"the pool's tasks, {TASKS_HELP}"),
        traces: Path | None = typer.Option(None, "--traces", help="kept traces (default: POOL's .traces.jsonl)"),
        out: Path = typer.Option(..., "--out", help="where to write the verified pool (.jsonl or .jsonl.gz)"),
    ):
        """Run the report verifier on every rollout of a pool (and recompute tool time and token
        split from the kept traces)."""
        # local import: the pools and tasks modules are heavy to import
        from fasbench.bon.pool import reverify

        tr = traces or pool.with_suffix(".traces.jsonl")
        for what, p in (("pool", pool), ("traces", tr)):
            if not p.exists():
                typer.echo(f"error: no {what} file at {p}", err=True)
                raise typer.Exit(2)
        typer.echo(str(reverify(pool, with_corpora(load_task_set(tasks), desc="bon corpora").tasks, tr, out)))

    @bon.command("evaluate")
    def evaluate_cmd(
        pool: Path = typer.Argument(..., help="pool JSONL file (or a name in <cache>/bon, or shipped in data/bon)"),
        selector: str = typer.Option(
            "majority",
            "--selector",
            help="majority | union-top1 | union-top3 | confidence | medoid | llm-judge (needs --judge and --tasks)",
        ),
        judge: str = typer.Option("", "--judge", help="llm-judge endpoint: model=NAME,base_url=URL[,max_tokens=...]"),
        judge_tasks: str = typer.Option("", "--tasks", help=f"llm-judge: the pool's tasks, {TASKS_HELP}"),
        schedule: str = typer.Option("1,3,5,10", "--schedule", help="cascade pool sizes (and parallel checkpoints)"),
        cost: str = typer.Option("tokens", "--cost", help="tokens | est_tokens | tool_time | calls | latency"),
        success_at: float = typer.Option(0.5, "--success-at"),
        max_loss: float = typer.Option(1.0, "--max-loss", help="quality points allowed to lose when tuning"),
        train: str = typer.Option("train,dev", "--train", help="splits that train and tune"),
        tune: str = typer.Option("joint", "--tune", help="joint | cost | latency: what the shared thresholds minimise"),
        latency: str = typer.Option(
            "auto", "--latency", help="model | wall | auto (model when the pool has token splits)"
        ),
        decode_tps: float = typer.Option(100.0, "--decode-tps", help="latency model: decoded tokens/s per stream"),
        prefill_tps: float = typer.Option(5000.0, "--prefill-tps", help="latency model: prefilled tokens/s"),
        turn_overhead: float = typer.Option(0.05, "--turn-overhead", help="latency model: seconds per model call"),
        n_boot: int = typer.Option(2000, "--n-boot", help="bootstrap resamples for the intervals"),
        out: Path | None = typer.Option(None, "--out", help="write the full result as JSON here"),
    ):
        """Tune ONE pair of stop thresholds on the train split, shared by the cascade and parallel
        early stopping; print one JSON line per strategy with its test-split savings (``*_saved_%``
        > 0 is a saving, < 0 a premium) and quality change in points with 95% intervals."""
        # local import: the experiment (sklearn) is heavy to import
        from fasbench.bon.experiment import BonConfig, evaluate_pool, parse_schedule, result_table, to_dict

        cfg = BonConfig(
            selector=selector,
            schedule=parse_schedule(schedule),
            cost=cost,
            success_at=success_at,
            max_loss=max_loss,
            train_splits=tuple(train.split(",")),
            tune=tune,
            latency=latency,
            decode_tps=decode_tps,
            prefill_tps=prefill_tps,
            turn_overhead_s=turn_overhead,
            n_boot=n_boot,
        )
        needs_tasks = selector == "llm-judge" and judge and judge_tasks
        res = evaluate_pool(pool, cfg, judge, load_task_set(judge_tasks) if needs_tasks else None)
        for row in result_table(res):
            typer.echo(json.dumps(row))
        if out:
            out.write_text(json.dumps(to_dict(res), indent=1, default=str), encoding="utf-8")
