"""``fasbench replay RUN [TASK]``: one episode of a run in the terminal, or as a static HTML page
(an e2e run folder: the task's main agent with its search episode, as a tree)
(``--html FILE``), for users outside Jupyter (registered by fasbench.cli's PLUGINS; outside
fasbench/replay/ because importing that package loads the widgets, plotly and polars: ~7 s)."""

from __future__ import annotations

from pathlib import Path

import typer


def replay_cmd(
    run: str = typer.Argument(
        "example",
        help="run directory or run name (`fasbench runs` lists them); "
        "`example`: the shipped example run (data/examples/heuristic-swebench-lite)",
    ),
    task: str = typer.Argument(
        "", help="task id of the episode (default: the example task, else the episode with the widest turn)"
    ),
    html: Path | None = typer.Option(
        None, "--html", help="write a self-contained static HTML page to FILE instead of printing text"
    ),
    reward: str = typer.Option("relace", "--reward", help="reward to score the report with (fasbench.scoring.reward)"),
    lines: int = typer.Option(8, "--lines", min=0, help="lines of each tool result shown"),
    width: int = typer.Option(100, "--width", min=40, help="terminal width the text is cut to"),
):
    """Replay one episode: each turn's text and parallel calls with their arguments and result excerpts,
    the report, the reward and its parts, and the lines viewed / matched / cited / gold per file."""
    # local import: fasbench.replay loads plotly, ipywidgets and polars, heavy
    from fasbench.base.paths import data_dir
    from fasbench.replay.run_episodes import EXAMPLE_RUN, load_run_episodes, pick_episode
    from fasbench.replay.text import episode_view, to_html, to_text
    from fasbench.scoring.reward import REWARDS

    if Path(run).is_dir() and (Path(run) / "records.jsonl").is_file() and (Path(run) / "search_traces.jsonl").is_file():
        return _e2e_tree(Path(run), task, html)
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
    if html is not None and html.is_dir():
        raise ValueError(f"--html {html} is a folder; give a file name such as replay.html")
    r = load_run_episodes(data_dir() / EXAMPLE_RUN if run == "example" else run, reward)
    tr = pick_episode(r, task)
    v = episode_view(tr, r.tasks.get(tr.task_id), reward, run=r.name, lines=lines)
    if html is None:
        typer.echo(to_text(v, width), nl=False)
        return
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(to_html(v), encoding="utf-8")
    typer.echo(
        f"wrote {html} (episode {tr.task_id} of run {r.name}, {len(tr.turns)} turn{'' if len(tr.turns) == 1 else 's'})"
    )


def _e2e_tree(run: Path, task: str, html: Path | None) -> None:
    """An e2e run folder: the task's main agent (search arm) with its search episode, as a tree."""
    # local import: fasbench.replay loads plotly, ipywidgets and polars, heavy
    from fasbench.records import iter_jsonl
    from fasbench.replay.static import replay_html
    from fasbench.replay.subagent_tree import e2e_tree, tree_html, tree_text

    if not task:
        task = next(
            (
                r["task_id"]
                for r in iter_jsonl(run / "records.jsonl")
                if r.get("arm") == "search" and isinstance(r.get("task_id"), str)
            ),
            "",
        )
    node = e2e_tree(run, task)
    if html is None:
        typer.echo(tree_text(node))
        return
    html.parent.mkdir(parents=True, exist_ok=True)
    from fasbench.base.markup import html as page  # local import: markupsafe; only --html needs it

    html.write_text(
        page("<!doctype html><meta charset='utf-8'><title>fasbench e2e tree</title>{}", tree_html(node, replay_html)),
        encoding="utf-8",
    )
    typer.echo(f"wrote {html} (task {task} of e2e run {run}: main agent and {len(node.children)} search episodes)")


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
