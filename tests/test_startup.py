"""The tool path stays lean (issue #28 item 7): one ``fasbench tool`` call and ``import
fasbench.harness`` load none of the heavy modules (jsonschema and its rfc3987 grammar, bashlex's
parser tables, polars, tqdm, the HTTP clients, the data and evaluation packages). Checked on the
modules a fresh interpreter holds afterwards, not on time (benchmarks/startup.py measures the CPU)."""

from __future__ import annotations

import json
import subprocess
import sys

# modules that cost start-up CPU (python -X importtime) and that a tool call does not need
HEAVY = [
    "jsonschema",
    "rfc3987_syntax",
    "bashlex",
    "polars",
    "tqdm",
    "pandas",
    "numpy",
    "httpx",
    "torch",
    "transformers",
    "fasbench.data",
    "fasbench.evaluation.evaluate",
    "fasbench.evaluation.cli",
    "fasbench.policies",
]

PROBE = """
import json, sys
{body}
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def loaded_after(body: str) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body, heavy=HEAVY)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def tool_call(tmp_path, call: dict) -> str:
    """A probe body running one `fasbench tool` call through the CLI's own entry (the root group)."""
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    args = ["tool", "--root", str(tmp_path), json.dumps(call)]
    return (
        "from fasbench.cli import app\n"
        f"try:\n    app(args={args!r}, prog_name='fasbench')\nexcept SystemExit as e:\n    assert not e.code, e.code"
    )


def test_one_tool_call_loads_no_heavy_module(tmp_path):
    body = tool_call(tmp_path, {"name": "view_file", "arguments": {"path": "/repo/a.py", "view_range": [1, 2]}})
    assert loaded_after(body) == []


def test_a_refused_tool_call_loads_no_heavy_module(tmp_path):
    """The schema check (a bad argument) and a path outside the root answer without jsonschema."""
    for args in ({"path": "/repo/a.py", "view_range": ["x"]}, {"path": "/etc/passwd"}):
        body = tool_call(tmp_path, {"name": "view_file", "arguments": args})
        assert loaded_after(body) == []


def test_harness_import_loads_no_heavy_module():
    assert loaded_after("import fasbench.harness") == []


def test_the_probe_sees_a_heavy_module(tmp_path):
    """The probe can fail: a bash call parses its command line with bashlex, loaded then."""
    body = tool_call(tmp_path, {"name": "bash", "arguments": {"command": "ls"}})
    assert loaded_after(body) == ["bashlex"]
