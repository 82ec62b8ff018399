"""``fasbench rl train | config | log``: GRPO training over the harness (see fasbench/rl/).

Config errors (unknown profile or field, a value of the wrong type, a bad ``--set``) are one-line
errors with exit status 2 (``fasbench.base.errors.CliGroup``)."""

from __future__ import annotations

import json

import typer

from fasbench.base.errors import UserError
from fasbench.training import profile_help
from fasbench.training.log import read_log

PROFILE_HELP = profile_help("rl")
SET_HELP = "override a config field: key=value, the value read as the field's type (repeatable)"


def register(app: typer.Typer) -> None:
    rl = typer.Typer(no_args_is_help=True, help="GRPO fine-tuning of a search policy over the harness")

    @rl.command("train")
    def train_cmd(
        config: str = typer.Option(..., "--config", help=PROFILE_HELP),
        set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
        max_steps: int | None = typer.Option(None, "--max-steps", help="override max_steps"),
        output_dir: str | None = typer.Option(None, "--output-dir", help="override output_dir"),
    ):
        """Train with GRPO; resumes from the last checkpoint in the output dir. Prints the summary."""
        # local import: fasbench.rl.config and .train import the harness and tools (heavy),
        # which every other `fasbench` command would pay at start-up
        from fasbench.rl.config import load_config
        from fasbench.rl.train import train  # local import: as above

        given = {k: v for k, v in {"max_steps": max_steps, "output_dir": output_dir}.items() if v is not None}
        summary = train(load_config(config, given, set_ or ()))
        summary.pop("config", None)
        typer.echo(json.dumps(summary, indent=1, default=str))

    @rl.command("config")
    def config_cmd(
        config: str = typer.Argument(..., help=PROFILE_HELP),
        set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    ):
        """Print the resolved config (the model it would start from, and the tokens of a first turn
        under its prompt with that model's tokenizer) as JSON."""
        # local import: fasbench.rl.config imports the harness and tools (heavy)
        from fasbench.models import load_tokenizer  # local import: as above
        from fasbench.rl.config import load_config, resolve_model_spec
        from fasbench.rl.protocol import first_turn_tokens  # local import: as above

        cfg = load_config(config, sets=set_ or ())
        model = resolve_model_spec(cfg)
        try:
            n = first_turn_tokens(load_tokenizer(model), cfg.toolset, cfg.limits)
        except (OSError, ValueError, RuntimeError) as e:  # no tokenizer here (a hub id offline): say why
            n = f"not counted: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        typer.echo(
            json.dumps(
                {**cfg.to_dict(), "resolved_model": model, "resolved_output_dir": str(cfg.out), "first_turn_tokens": n},
                indent=1,
            )
        )

    @rl.command("log")
    def log_cmd(run: str = typer.Argument(..., help="output dir of a run")):
        """Print the per-step log of a run: step, loss, reward mean±std, turns, calls per turn."""
        # local import: fasbench.rl.config imports the harness and tools (heavy)
        from fasbench.rl.config import LOG_FILE

        rows = [r for r in read_log(run, LOG_FILE) if r.get("kind") == "step"]
        if not rows:
            raise UserError(f"no step log in {run}")
        for r in rows:
            typer.echo(
                f"step {r['step']:>4}  loss {r.get('loss', float('nan')):+.4f}  "
                f"reward {r.get('episode/reward/mean', float('nan')):.3f}±{r.get('episode/reward/std', float('nan')):.3f}  "
                f"turns {r.get('episode/turns/mean', float('nan')):.2f}  "
                f"calls/turn {r.get('episode/calls_per_turn/mean', float('nan')):.2f}"
            )

    app.add_typer(rl, name="rl")
