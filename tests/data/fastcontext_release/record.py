"""Record what Microsoft's released FastContext tools print for the calls of
tests/fastcontext_release_cases.py (see README.md here for how this was run).

    python record.py RELEASE_SRC COMMIT OUT.json

RELEASE_SRC: the ``src`` directory of a checkout of GitHub T0mSIlver/fastcontext at COMMIT (kept
outside this repository). Runs the release's own ReadTool, GlobTool and GrepTool through its ToolSet
(tool.py), with the process in the workspace as the release's CLI runs (cli.py: work_dir =
os.getcwd()); the one change is where ripgrep is (grep.py @5fb8c1d hard-codes /usr/bin/rg).
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

src, commit, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
sys.path.insert(0, src)
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ for the cases

from fastcontext.agent.llm import FunctionCall, Message  # noqa: E402
from fastcontext.agent.tool import grep as grep_mod  # noqa: E402
from fastcontext.agent.tool.glob import GlobTool  # noqa: E402
from fastcontext.agent.tool.grep import GrepTool  # noqa: E402
from fastcontext.agent.tool.read import ReadTool  # noqa: E402
from fastcontext.agent.tool.tool import ToolSet  # noqa: E402
from fastcontext_release_cases import CASES, build  # noqa: E402

rg = shutil.which("rg")
if hasattr(GrepTool, "_rg_path"):
    GrepTool._rg_path = rg
if hasattr(grep_mod, "RG_PATH"):
    grep_mod.RG_PATH = rg

tmp = Path(tempfile.mkdtemp(prefix="fc_release_"))
root = build(tmp / "repo").resolve()
os.chdir(root)
toolset = ToolSet([ReadTool(), GlobTool(), GrepTool()], work_dir=str(root))


def call(tool, args):
    real = json.loads(json.dumps(args).replace('"/repo', json.dumps(str(root))[:-1]))
    msg = Message(
        role="assistant", content="", tool_calls=[FunctionCall(id="c", name=tool, arguments=json.dumps(real))]
    )
    [res] = asyncio.run(toolset.call(msg))
    return res.content.replace(str(root), "/repo")


record = {
    "commit": commit,
    "rg": os.popen(f"{rg} --version").read().split("\n")[0],
    "python": sys.version.split()[0],
    "schemas": [t.schema() for t in (ReadTool(), GlobTool(), GrepTool())],
    "cases": [{"name": n, "tool": t, "arguments": a, "output": call(t, a)} for n, t, a in CASES],
}
out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
shutil.rmtree(tmp)
print(f"{len(record['cases'])} cases -> {out}")
