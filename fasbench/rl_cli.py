"""``fasbench rl``: GRPO training over the harness (see fasbench/rl.py). Heavy imports stay in
the commands so that the ``fasbench`` command starts fast."""

from __future__ import annotations

import json
from typing import List, Optional

import typer


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _overrides(pairs: list[str]) -> dict:
    """``key=value`` pairs; values are parsed as YAML (numbers, booleans, lists, null)."""
    import yaml

    out = {}
    for p in pairs or []:
        k, eq, v = p.partition("=")
        if not eq or not k.strip():
            _fail(f"--set expects key=value, got {p!r}")
        out[k.strip()] = yaml.safe_load(v)
    return out


def register(app: typer.Typer) -> None:
    rl = typer.Typer(no_args_is_help=True, help="GRPO fine-tuning of a search policy over the harness")

    @rl.command("train")
    def train_cmd(
        config: str = typer.Option(..., "--config", help="profile (tiny | cpu | gpu) or a YAML config file"),
        set_: Optional[List[str]] = typer.Option(None, "--set", help="override a config field: key=value (repeatable)"),
        max_steps: Optional[int] = typer.Option(None, "--max-steps", help="override max_steps"),
        output_dir: Optional[str] = typer.Option(None, "--output-dir", help="override output_dir"),
    ):
        """Train with GRPO; resumes from the last checkpoint in the output dir. Prints the summary."""
        from fasbench.rl import load_config, train

        try:
            cfg = load_config(config, max_steps=max_steps, output_dir=output_dir, **_overrides(set_))
        except (FileNotFoundError, ValueError, TypeError) as e:
            _fail(str(e))
        summary = train(cfg)
        summary.pop("config", None)
        typer.echo(json.dumps(summary, indent=1, default=str))

    @rl.command("config")
    def config_cmd(
        config: str = typer.Argument(..., help="profile (tiny | cpu | gpu) or a YAML config file"),
        set_: Optional[List[str]] = typer.Option(None, "--set", help="override a config field: key=value"),
    ):
        """Print the resolved config (and the model it would start from) as JSON."""
        from fasbench.rl import load_config, resolve_model_spec

        try:
            cfg = load_config(config, **_overrides(set_))
        except (FileNotFoundError, ValueError, TypeError) as e:
            _fail(str(e))
        typer.echo(json.dumps({**cfg.to_dict(), "resolved_model": resolve_model_spec(cfg),
                               "resolved_output_dir": str(cfg.out)}, indent=1))

    @rl.command("log")
    def log_cmd(run: str = typer.Argument(..., help="output dir of a run")):
        """Print the per-step log of a run: step, loss, reward mean±std, turns, calls per turn."""
        from fasbench.rl import read_log

        rows = [r for r in read_log(run) if r.get("kind") == "step"]
        if not rows:
            _fail(f"no step log in {run}")
        for r in rows:
            typer.echo(f"step {r['step']:>4}  loss {r.get('loss', float('nan')):+.4f}  "
                       f"reward {r.get('episode/reward/mean', float('nan')):.3f}±{r.get('episode/reward/std', float('nan')):.3f}  "
                       f"turns {r.get('episode/turns/mean', float('nan')):.2f}  "
                       f"calls/turn {r.get('episode/calls_per_turn/mean', float('nan')):.2f}")

    app.add_typer(rl, name="rl")
