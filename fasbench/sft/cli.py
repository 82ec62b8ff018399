"""``fasbench sft build | train | eval | config`` (registered through ``fasbench.cli.PLUGINS``)."""

from __future__ import annotations

import json
from typing import Optional

import typer


def _profile(config: str, out: Optional[str] = None, max_steps: Optional[int] = None):
    from fasbench.sft.train import load_profile

    over: dict = {}
    if out:
        over["build"] = {"out": out}
    if max_steps is not None:
        over["train"] = {"max_steps": max_steps}
    try:
        return load_profile(config, over)
    except (FileNotFoundError, ValueError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    sft = typer.Typer(no_args_is_help=True, help="SFT of a search subagent from reference traces (TRL)")

    @sft.command("config")
    def config_cmd(config: str = typer.Argument(..., help="profile name (tiny|cpu|gpu) or YAML/JSON path")):
        """Print a profile with every field resolved."""
        typer.echo(json.dumps(_profile(config).to_dict(), indent=1))

    @sft.command("build")
    def build_cmd(config: str = typer.Option(..., "--config", help="profile name (tiny|cpu|gpu) or path"),
                  out: Optional[str] = typer.Option(None, "--out", help="output folder (default: the cache)")):
        """Build the SFT data set (episodes → examples → datasets on disk); resumes."""
        from fasbench.sft.data import build

        p = _profile(config, out)
        stats = build(p.build, p.data_dir)
        typer.echo(json.dumps({"out": str(p.data_dir), "examples": stats["examples"],
                               "dropped": stats["dropped"]}, indent=1))

    @sft.command("train")
    def train_cmd(config: str = typer.Option(..., "--config", help="profile name (tiny|cpu|gpu) or path"),
                  max_steps: Optional[int] = typer.Option(None, "--max-steps", help="override train.max_steps"),
                  resume: bool = typer.Option(True, "--resume/--no-resume", help="continue from the last checkpoint")):
        """Train a profile with TRL's SFTTrainer (builds the data first when missing)."""
        from fasbench.sft.data import build
        from fasbench.sft.train import train

        p = _profile(config, max_steps=max_steps)
        if not (p.data_dir / "dataset").exists():
            build(p.build, p.data_dir)
        typer.echo(str(train(p, resume=resume)))

    @sft.command("eval")
    def eval_cmd(config: str = typer.Option(..., "--config", help="profile name or path (tool set, limits, eval block)"),
                 model: str = typer.Option(..., "--model", help="model name or checkpoint folder"),
                 label: str = typer.Option("model", "--label", help="name of this run in the output"),
                 out: Optional[str] = typer.Option(None, "--out", help="traces JSONL (resumes)")):
        """Run a model through the harness on dev tasks; prints the summary as JSON."""
        from fasbench.sft.evaluate import dev_tasks, evaluate, summary

        p = _profile(config)
        rows = evaluate(model, dev_tasks(p), p, label, out)
        typer.echo(json.dumps(summary(rows), indent=1))

    app.add_typer(sft, name="sft")
