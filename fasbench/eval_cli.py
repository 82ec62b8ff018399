"""`fasbench eval` and `fasbench compare` (a cli plugin; heavy imports stay inside the commands)."""

from __future__ import annotations

import json
from pathlib import Path


def register(app) -> None:
    import typer

    @app.command("eval")
    def eval_cmd(
        tasks: str = typer.Option(..., "--tasks", help="tasks JSONL file, or SOURCE[:SPLIT] e.g. swebench-lite:test"),
        policy: str = typer.Option(..., "--policy", help="NAME[:key=value,...], e.g. heuristic:turns=3, bm25, dense"),
        toolset: str = typer.Option("relace", "--toolset", help="relace | fastcontext"),
        out: Path = typer.Option(..., "--out", help="run directory (traces.jsonl, summary.parquet); resumes"),
        max_turns: int = typer.Option(6, "--max-turns", min=1),
        max_calls: int = typer.Option(12, "--max-calls", min=1),
        workers: int = typer.Option(0, "--workers", help="parallel episodes (0 = CPU count)"),
        backend: str = typer.Option("", "--backend", help="process | thread | serial (default by policy)"),
        limit: int = typer.Option(0, "--limit", help="first N tasks only (0 = all)"),
        shard: str = typer.Option("", "--shard", help="i/n: run shard i (0-based) of n of the tasks, for several "
                                  "machines; merge with `fasbench eval-merge`"),
    ):
        """Run a policy over tasks; append traces; write summary.parquet; print macro means with 95% CIs."""
        from fasbench.evaluate import aggregate, load_task_arg, run_eval
        from fasbench.harness import Limits

        try:
            ts = load_task_arg(tasks, limit or None)
            if shard:
                from fasbench.shards import parse_shard, record_shard, select_shard

                i, n = parse_shard(shard)
                record_shard(out, i, n, len(ts))
                ts = select_shard(ts, i, n)
            df = run_eval(ts, policy, toolset, out, Limits(max_turns=max_turns, max_calls_per_turn=max_calls),
                          workers or None, backend or None)
        except (ValueError, FileNotFoundError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2)
        if df.height:
            typer.echo(aggregate(df).to_pandas().to_string(index=False))
        typer.echo(f"{df.height} episodes summarised in {out / 'summary.parquet'}")
        failed = int(df["error"].is_not_null().sum()) if "error" in df.columns else 0
        if failed:  # e.g. a model server that still failed after the last retry; the reasons are in the traces
            typer.echo(f"{failed} episodes failed (summary column `error`, traces' meta.failed_requests)", err=True)

    @app.command("eval-merge")
    def eval_merge_cmd(
        out: Path = typer.Argument(..., help="new run directory for the merged run"),
        shards: list[Path] = typer.Argument(..., help="run directories of shards 0…n-1 (`fasbench eval --shard i/n`)"),
    ):
        """Merge the shards of one run into one run directory (traces, summary sorted by task id)."""
        from fasbench.evaluate import aggregate
        from fasbench.shards import ShardError, merge_shards

        try:
            df = merge_shards(shards, out)
        except (ShardError, FileNotFoundError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2)
        if df.height:
            typer.echo(aggregate(df).to_pandas().to_string(index=False))
        typer.echo(f"{len(shards)} shards, {df.height} episodes merged into {out / 'summary.parquet'}")

    @app.command("compare")
    def compare_cmd(
        run_a: Path = typer.Argument(..., help="run directory A"),
        run_b: Path = typer.Argument(..., help="run directory B"),
        metric: str = typer.Option("file_f2", "--metric"),
    ):
        """Paired bootstrap of a metric between two runs (A − B) on their shared tasks."""
        from fasbench.evaluate import compare, load_summary

        try:
            r = compare(load_summary(run_a), load_summary(run_b), metric)
        except (ValueError, FileNotFoundError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2)
        typer.echo(json.dumps(r))
