"""The ``fasbench`` command. Each package adds its subcommands through a ``register(app)``
function listed in ``PLUGINS``; heavy imports stay inside the commands so that
``fasbench tool`` starts fast."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Optional

import typer

from fasbench.errors import CliGroup, UserError

# CliGroup turns what escapes a command into a one-line error and a non-zero exit (fasbench/errors.py)
app = typer.Typer(cls=CliGroup, add_completion=False, no_args_is_help=True,
                  help="fasbench: fast agentic code search workbench")

# Modules exposing ``register(app: typer.Typer)``; one line per package.
PLUGINS: list[str] = [
    "fasbench.data.cli",
    "fasbench.bon.cli",
    "fasbench.rl_cli",
    "fasbench.eval_cli",
    "fasbench.trajectories.cli",
    "fasbench.sft.cli",
]


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _load_json_arg(value: str, what: str):
    """A JSON argument given inline or as a path to a JSON file."""
    text = value
    if not value.lstrip().startswith(("{", "[")):
        p = Path(value)
        if not p.exists():
            _fail(f"{what}: {value!r} is neither inline JSON nor an existing file")
        if not p.is_file():
            _fail(f"{what}: {value} is not a regular file")
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"{what}: {value} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        _fail(f"{what} is not valid JSON: {e}")
    except RecursionError:
        _fail(f"{what}: JSON nested too deeply")


@app.command()
def tool(
    call_json: str = typer.Argument(..., help='{"name": ..., "arguments": {...}}'),
    root: Path = typer.Option(..., "--root", help="workspace root the tool is sandboxed to"),
    toolset: str = typer.Option("relace", "--toolset", help="relace | fastcontext"),
):
    """Run one tool call in a workspace and print {"output", "is_error"} as JSON."""
    from fasbench.tools import TOOLSETS, make_toolset

    if toolset not in TOOLSETS:
        _fail(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    if not root.is_dir():
        _fail(f"--root {root} is not a directory")
    call = _load_json_arg(call_json, "CALL_JSON")
    if not isinstance(call, dict) or "name" not in call:
        _fail('CALL_JSON must be an object {"name": ..., "arguments": {...}}')
    ts = make_toolset(toolset, root)
    out, err = ts.call(str(call["name"]), call.get("arguments", {}))
    typer.echo(json.dumps({"output": out, "is_error": err}, ensure_ascii=False))


@app.command()
def score(
    gold: str = typer.Option(..., "--gold", help='{"edited": {path: [[s, e], ...]}, "viewed": [...] | null} or a file'),
    report: str = typer.Option(..., "--report", help='{"files": {path: [[s, e], ...]}, "explanation": str} or a file'),
    turns: Optional[int] = typer.Option(None, "--turns", help="turns used (for the turn penalty)"),
    reward: str = typer.Option("relace-f2", "--reward", help="relace-f2 | relace-hybrid | fastcontext | …"),
    root: Optional[Path] = typer.Option(None, "--root", help="workspace the report cites: paths are resolved in it, "
                                        "[s, -1] ends at the file's last line, ranges are clipped to file lengths "
                                        "(without it, to lines.LINE_CAP)"),
):
    """Score a report against gold; prints the score and its parts as JSON."""
    from fasbench.records import Gold, RecordError, Report
    from fasbench.reward import REWARDS, score_report

    if reward not in REWARDS:
        _fail(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
    try:
        g = Gold.from_dict(_load_json_arg(gold, "--gold"))
        r = Report.from_dict(_load_json_arg(report, "--report"))
    except RecordError as e:
        _fail(str(e))
    if turns is not None and turns < 0:
        _fail("--turns must be >= 0")
    if root is not None and not root.is_dir():
        _fail(f"--root {root} is not a directory")
    s = score_report(reward, g, r, turns=turns, root=str(root.resolve()) if root is not None else None)
    typer.echo(json.dumps(s.to_dict()))


for _mod in PLUGINS:
    importlib.import_module(_mod).register(app)


def main() -> None:  # pragma: no cover
    app(prog_name="fasbench")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
