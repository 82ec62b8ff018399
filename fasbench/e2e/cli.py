"""``fasbench e2e``: the live main agent with and without the search subagent (a cli plugin; the
runner is imported inside the command: LiteLLM's import alone takes 6-17 s here)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from fasbench.data.tasksets import load_task_set
from fasbench.tools import TOOLSETS


def register(app) -> None:
    @app.command("e2e")
    def e2e_cmd(
        tasks: str = typer.Option(
            ...,
            "--tasks",
            help="a task set: SOURCE[:SPLIT] (e.g. swebench-lite:fasbench-test), a Task "
            "JSONL file[:SPLIT] or git:PATH (fasbench.data.tasksets)",
        ),
        main: str = typer.Option(..., "--main", help="the main agent: openai:model=NAME,base_url=URL[,step_limit=N,…]"),
        search: str = typer.Option(
            ...,
            "--search",
            help="the subagent's policy spec (e.g. heuristic:turns=3, "
            "openai:model=…,base_url=…), or none for the main agent alone",
        ),
        out: Path = typer.Option(
            ..., "--out", help="run directory (records.jsonl, trajs/, search_traces.jsonl); resumes"
        ),
        toolset: str = typer.Option("relace", "--toolset", help="the subagent's tools: " + " | ".join(TOOLSETS)),
        handoff: str = typer.Option("code+search", "--handoff", help="citations | code | code+search"),
        search_turns: int = typer.Option(6, "--search-turns", min=1),
        limit: int = typer.Option(0, "--limit", help="first N tasks only (0 = all)"),
        ids: list[str] | None = typer.Option(None, "--ids", help="only these task ids (repeatable)"),
        keep_work: bool = typer.Option(False, "--keep-work", help="keep the corpus copies under OUT/work"),
    ):
        """Run the main agent on each task with and without the subagent's handoff; record trajectories,
        patches, tokens, turns and wall time; print paired differences (search − none) with 95% CIs."""
        # local import: the runner loads mini-swe-agent and LiteLLM, heavy
        from fasbench.e2e.live import MainAgentError
        from fasbench.e2e.runner import compare_arms, load_records, run_e2e

        try:
            ts = load_task_set(tasks)
            if ids:
                want = set(ids)
                ts = [t for t in ts if t.id in want or t.meta.get("instance_id") in want]
                if not ts:
                    raise ValueError(f"--ids: none of {', '.join(sorted(want))} is in {tasks}")
            n_all = len(ts)
            ts = ts[:limit] if limit else ts
            if limit:
                typer.echo(
                    f"e2e: running the first {len(ts)} of the {limit} asked"
                    + (f" (the task set {tasks} holds only {n_all})" if n_all < limit else f" ({n_all} in {tasks})")
                    + "; tasks without a usable corpus are skipped with their reason in the records",
                    err=True,
                )
            run_e2e(ts, main, search, out, toolset, handoff, search_turns, keep_work)
        except (ValueError, FileNotFoundError, MainAgentError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        df = load_records(out)
        typer.echo(f"{df.height} episodes in {out / 'records.jsonl'}; trajectories under {out / 'trajs'}")
        for row in compare_arms(df):
            typer.echo(json.dumps(row))
