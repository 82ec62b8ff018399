"""``fasbench sft build | train | launch | eval | config`` (registered through ``fasbench.cli.PLUGINS``).

Every command takes a profile (a name or a YAML file) and ``--set key=value`` overrides, read by the
loader shared with ``fasbench rl`` (fasbench.training.profiles); config errors are one-line errors
with exit status 2 (``fasbench.base.errors.CliGroup``)."""

from __future__ import annotations

import json

import typer

from fasbench.training import profile_help

PROFILE_HELP = profile_help("sft")
SET_HELP = (
    "override a config field: key=value (key: a field of build/train/eval, or section.key where "
    "two sections have it, e.g. eval.max_turns), the value read as the field's type (repeatable)"
)
SetOpt = typer.Option(None, "--set", help=SET_HELP)


def _profile(config: str, sets: list[str] | None, **given):
    # local import: fasbench.sft.train imports sft.data, the harness, the policies and tqdm: heavy,
    # which `fasbench --help` and every other command would pay at start-up
    from fasbench.sft.train import load_profile

    return load_profile(config, {k: v for k, v in given.items() if v is not None}, sets or ())


def register(app: typer.Typer) -> None:
    sft = typer.Typer(no_args_is_help=True, help="SFT of a search subagent from reference traces (TRL)")

    @sft.command("config")
    def config_cmd(config: str = typer.Argument(..., help=PROFILE_HELP), set_: list[str] | None = SetOpt):
        """Print a profile with every field resolved."""
        typer.echo(json.dumps(_profile(config, set_).to_dict(), indent=1))

    @sft.command("build")
    def build_cmd(
        config: str = typer.Option(..., "--config", help=PROFILE_HELP),
        set_: list[str] | None = SetOpt,
        out: str | None = typer.Option(None, "--out", help="output folder (build.out; default: the cache)"),
    ):
        """Build the SFT data set (episodes → examples → datasets on disk); resumes."""
        p = _profile(config, set_, out=out)
        from fasbench.sft.data import build  # local import: heavy (sft.data), as in _profile
        from fasbench.tools.fastcontext_query import query_note

        stats = build(p.build, p.data_dir)
        typer.echo(
            json.dumps(
                {
                    "out": str(p.data_dir),
                    "examples": stats["examples"],
                    "dropped": stats["dropped"],
                    "query_sources": stats["query_sources"],
                },
                indent=1,
            )
        )
        note = query_note(stats["query_sources"])
        if note:
            typer.echo(f"sft build: {note}", err=True)

    @sft.command("train")
    def train_cmd(
        config: str = typer.Option(..., "--config", help=PROFILE_HELP),
        set_: list[str] | None = SetOpt,
        max_steps: int | None = typer.Option(None, "--max-steps", help="override train.max_steps"),
        resume: bool = typer.Option(True, "--resume/--no-resume", help="continue from the last checkpoint"),
    ):
        """Train a profile with TRL's SFTTrainer (builds the data first when missing)."""
        # local import: heavy (sft.data; torch is loaded by train() itself), as in _profile
        from fasbench.sft.data import build
        from fasbench.sft.train import train

        p = _profile(config, set_, max_steps=max_steps)
        if not (p.data_dir / "dataset").exists():
            build(p.build, p.data_dir)
        typer.echo(str(train(p, resume=resume)))

    @sft.command("eval")
    def eval_cmd(
        config: str = typer.Option(..., "--config", help=PROFILE_HELP + " (tool set, limits, eval section)"),
        set_: list[str] | None = SetOpt,
        model: str = typer.Option(..., "--model", help="model name or checkpoint folder"),
        label: str = typer.Option("model", "--label", help="name of this run in the output"),
        out: str | None = typer.Option(None, "--out", help="traces JSONL (resumes)"),
    ):
        """Run a model through the harness on dev tasks; prints the summary as JSON."""
        from fasbench.sft.before_after import (  # local import: heavy (sft.data, evaluate), as in _profile
            dev_tasks,
            evaluate,
            summary,
        )

        p = _profile(config, set_)
        rows = evaluate(model, dev_tasks(p), p, label, out)
        typer.echo(json.dumps(summary(rows), indent=1))

    @sft.command("launch")
    def launch_cmd(
        config: str = typer.Argument(..., help=PROFILE_HELP),
        set_: list[str] | None = SetOpt,
        dry_run: bool = typer.Option(
            False,
            "--dry-run",
            help="check the profile, the data set and the TRL arguments, print them as JSON, train nothing",
        ),
    ):
        """Train a profile; under `accelerate launch -m fasbench.cli sft launch` one process per GPU (never builds the data)."""
        # local import: fasbench.sft.launch imports sft.train and sft.data, heavy, as in _profile
        from fasbench.sft.launch import launch

        launch(config, set_ or (), dry_run)

    app.add_typer(sft, name="sft")
