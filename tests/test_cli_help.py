"""Every command's --help keeps what its help strings say, brackets included (issue 27: rich markup
took `[[s, -1]]` and `[s, e]` for tags and dropped them from `fasbench score --help`)."""

import re

import typer
import typer.main
from typer.testing import CliRunner

from fasbench.cli import app

runner = CliRunner()


def _commands(cmd, path: tuple[str, ...] = ()):
    yield path, cmd
    if getattr(cmd, "commands", None):  # a group (typer's own click: no public Group class to test)
        for name, sub in sorted(cmd.commands.items()):
            yield from _commands(sub, path + (name,))


def _bracketed(text: str) -> list[str]:
    """The outermost [...] segments of a help string."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start : i + 1])
    return out


def _flat(s: str) -> str:
    return re.sub(r"\s+", "", s)  # help is re-wrapped (also at hyphens); compare without whitespace


def test_every_help_keeps_its_brackets():
    root = typer.main.get_command(app)
    checked = 0
    for path, cmd in _commands(root):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        want = [b for t in texts for b in _bracketed(t)]
        if not want:
            continue
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0, (path, res.output)
        shown = _flat(res.stdout)
        for b in want:
            assert _flat(b) in shown, f"fasbench {' '.join(path)} --help lost {b!r}"
            checked += 1
    assert checked >= 5  # score's --gold/--report/--root, eval's, trajectories analyze's … at least


def test_score_help_shows_the_range_syntax():
    out = _flat(runner.invoke(app, ["score", "--help"]).stdout)
    assert _flat("[[s, e], ...]") in out and _flat("[s, -1] ends at the file's last line") in out


def test_cli_start_up_loads_no_heavy_module():
    """A regression guard for the commands added here: `fasbench --help` must not import the replay
    package (plotly, widgets) nor the trajectory parsers (the tokenizer via fasbench.models)."""
    import subprocess
    import sys

    heavy = [
        "plotly",
        "ipywidgets",
        "fasbench.replay",
        "fasbench.models",
        "fasbench.trajectories.parsers",
        "jsonschema",
    ]
    code = "import sys, fasbench.cli; print(' '.join(m for m in %r if m in sys.modules))" % heavy
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == []


def test_eval_help_lists_one_policy_family_a_line():
    """The policies epilog is not re-wrapped into one paragraph (a new user found it unreadable):
    each family's example spec starts a line of its own."""
    from fasbench.policies import POLICIES

    lines = [ln.strip() for ln in runner.invoke(app, ["eval", "--help"], terminal_width=200).stdout.splitlines()]
    for fam in POLICIES.values():
        assert any(ln.startswith(fam.example + " ") for ln in lines), fam.example


def test_profile_help_lists_every_shipped_profile():
    from fasbench.training import profile_help
    from fasbench.training.profiles import CONFIGS_DIR

    for prefix in ("sft", "rl"):
        names = {p.stem[len(prefix) + 1 :] for p in CONFIGS_DIR.glob(f"{prefix}_*.yaml")}
        text = profile_help(prefix)
        inner = text[len("a profile (") : text.rindex(") or a YAML config file")]
        listed = {part.split(" = ", 1)[0] for part in inner.split("; ")}
        assert names and listed == names
        assert all(" = " in part for part in inner.split("; ")), text  # each with what it is for (its YAML's head)
