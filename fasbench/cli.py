"""The ``fasbench`` command. Each package adds its subcommands through a ``register(app)``
function listed in ``PLUGINS``. Imports that cost start-up time stay inside the commands, each with a
``# local import:`` comment saying why in words (the measured costs are in ``benchmarks/README.md``,
``benchmarks/import_costs.py``; ``tests/test_cli_help.py`` checks what ``--help`` imports), so that
``fasbench --help`` and every command's argument errors come back fast."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import typer
import typer.main
from typer._click.exceptions import ClickException

from fasbench.base.errors import CliGroup, UserError
from fasbench.records import Gold, Report

# Modules exposing ``register(app: typer.Typer)``; one line per package.
PLUGINS: list[str] = [
    "fasbench.data.cli",
    "fasbench.bon.cli",
    "fasbench.rl.cli",
    "fasbench.evaluation.cli",
    "fasbench.trajectories.cli",
    "fasbench.sft.cli",
    "fasbench.e2e.cli",
    "fasbench.replay.cli",  # beside the package: importing fasbench.replay loads its widgets (plotly)
    "fasbench.mainjob.cli",
]


class RootGroup(CliGroup):
    """The root group, whose plugins' commands are loaded when first asked for: ``fasbench tool`` and
    ``fasbench score`` (defined here) run without importing the plugins' modules (the data, eval and
    trajectory machinery; benchmarks/startup.py measures it). Any other command, the help
    and every reader of ``.commands`` load them all first, so the group looks the same from outside."""

    def __init__(self, *args, **kwargs):
        self._loaded = False
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> dict:
        if not self._loaded:
            self._loaded = True
            plugins = typer.Typer(rich_markup_mode=None)
            for mod in PLUGINS:
                importlib.import_module(mod).register(plugins)
            for name, cmd in typer.main.get_group(plugins).commands.items():
                self._commands.setdefault(name, cmd)
        return self._commands

    @commands.setter
    def commands(self, value: dict) -> None:
        self._commands = value

    def get_command(self, ctx, cmd_name: str):
        return self._commands.get(cmd_name) or self.commands.get(cmd_name)


# RootGroup (a CliGroup) turns what escapes a command into a one-line error and a non-zero exit
# (fasbench/base/errors.py). rich_markup_mode=None (for every subcommand: typer passes it down): help texts
# are printed as written; rich markup would take `[s, -1]` or `[[s, e], ...]` for tags and drop them.
app = typer.Typer(
    cls=RootGroup,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="fasbench: fast agentic code search workbench",
)


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
    call_json: str | None = typer.Argument(None, help='{"name": ..., "arguments": {...}}'),
    root: Path | None = typer.Option(None, "--root", help="workspace root the tool is sandboxed to"),
    toolset: str = typer.Option(
        "relace", "--toolset", help="a registered tool set (fasbench.tools.TOOLSETS; `fasbench eval --help` lists them)"
    ),
    schemas: bool = typer.Option(False, "--schemas", help="print the tool schemas the model sees (JSON) and exit"),
):
    """Run one tool call in a workspace and print {"output", "is_error"} as JSON; or, with
    --schemas, print the tool set's schemas exactly as they are sent to the model."""
    # local import: fasbench.tools is heavy to import, which `fasbench --help` need not pay
    from fasbench.tools import TOOLSETS, make_toolset

    if toolset not in TOOLSETS:
        _fail(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    if schemas:  # the schemas do not depend on the workspace
        typer.echo(json.dumps(make_toolset(toolset, root or Path.cwd()).schemas, indent=2, ensure_ascii=False))
        return
    if root is None:
        _fail("--root is required to run a tool call")
    if call_json is None:
        _fail("CALL_JSON is required to run a tool call (or pass --schemas)")
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
    turns: int | None = typer.Option(None, "--turns", help="turns used (for the turn penalty)"),
    reward: str = typer.Option(
        "relace-f2",
        "--reward",
        help="a name of fasbench.scoring.reward.REWARDS: relace-f2 | relace-hybrid | fastcontext | …",
    ),
    judge: str | None = typer.Option(None, "--judge", help="fastcontext: LLM judge, openai:model=NAME,base_url=URL"),
    query: str | None = typer.Option(None, "--query", help="fastcontext: the task's query (the judge reads it)"),
    finish: str = typer.Option(
        "stop", "--finish", help="fastcontext: how the episode ended: stop | length | abort | error"
    ),
    root: Path | None = typer.Option(
        None,
        "--root",
        help="workspace the report cites: paths are resolved in it, "
        "[s, -1] ends at the file's last line, ranges are clipped to file lengths "
        "(without it, to lines.LINE_CAP)",
    ),
):
    """Score a report against gold; prints the score and its parts as JSON."""
    # local import: fasbench.scoring.reward is heavy to import, a large share of `fasbench --help`
    from fasbench.scoring.reward import judged_rewards, reward_named, score_report

    judged = reward_named(reward).judged  # an unknown name: a ValueError naming the choices (one line, exit 2)
    g = Gold.from_dict(_load_json_arg(gold, "--gold"))
    r = Report.from_dict(_load_json_arg(report, "--report"))
    for what, files in (("--gold edited", g.edited), ("--report files", r.files)):
        for path, ranges in files.items():
            for s, e in ranges:  # [s, -1]: to the file's last line
                if s < 1 or (e != -1 and e < s):
                    _fail(
                        f"{what}: {path!r} has the range [{s}, {e}]: lines are 1-based and a range's end is >= its start (or -1)"
                    )
    if turns is not None and turns < 0:
        _fail("--turns must be >= 0")
    if root is not None and not root.is_dir():
        _fail(f"--root {root} is not a directory")
    kw: dict = {"query": query, "finish_reason": finish}  # the facts of the episode; each reward takes what it needs
    if judged:
        # local import: the judge's HTTP client (httpx) is heavy to import
        from fasbench.scoring.judge import make_judge

        if judge is not None and not query:
            _fail("--judge needs --query (the judge scores the cited lines against the query)")
        kw["judge"] = make_judge(judge, strict=True) if judge else None
    elif judge is not None:
        _fail(f"--judge only applies to a judged reward ({', '.join(judged_rewards())}), not {reward!r}")
    s = score_report(reward, g, r, turns=turns, root=str(root.resolve()) if root is not None else None, **kw)
    typer.echo(json.dumps(s.to_dict()))


@app.command("scripted-server")
def scripted_server(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port", help="0: a free port (printed in the `ready PORT` line)"),
    delay_s: float = typer.Option(0.25, "--delay-s", help="seconds each answer takes"),
    max_concurrent: int = typer.Option(32, "--max-concurrent", help="requests served at once; the rest wait"),
    turns: int = typer.Option(3, "--turns", help="turns per episode, the last one reports"),
    report_path: str = typer.Option("requests/sessions.py", "--report-path", help="the path the last turn reports"),
    tool_format: str = typer.Option(
        "structured",
        "--tool-format",
        help="how the calls are written: structured (tool_calls), hermes_json or "
        "qwen3_coder_xml (<tool_call> text in the content), prose (no calls)",
    ),
):
    """A local OpenAI-compatible server answering scripted tool calls after a fixed delay (benchmarks,
    failure tests); prints `ready PORT` once it listens, serves until interrupted."""
    for name, ok, want in (
        ("--port", 0 <= port <= 65535, "0-65535"),
        ("--delay-s", delay_s >= 0, ">= 0"),
        ("--max-concurrent", max_concurrent >= 1, ">= 1"),
        ("--turns", turns >= 1, ">= 1"),
    ):
        if not ok:
            raise typer.BadParameter(f"must be {want}", param_hint=name)
    # local import: the server loads the tool sets, which no other command of this module needs
    from fasbench.policies.scripted_server import serve

    serve(host, port, delay_s, max_concurrent, turns, report_path, tool_format)


def run_command(args: list[str]) -> int:
    """Run ``fasbench ARGS`` in this process and return its exit status, errors printed as the command
    prints them: what the module alias ``python -m fasbench.mainjob.report`` calls (and tests)."""
    try:
        rv = typer.main.get_command(app).main(args=list(args), prog_name="fasbench", standalone_mode=False)
    except ClickException as e:  # a usage error: the message and status click gives it
        e.show()
        return e.exit_code
    except typer.Abort:
        return 1
    return rv if isinstance(rv, int) else 0


def main() -> None:  # pragma: no cover
    app(prog_name="fasbench")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
