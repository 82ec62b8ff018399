"""What one command costs in the sandbox of untrusted code (``fasbench.base.untrusted``), side by side with
the same command run plainly (``bash -c``, mini-swe-agent's local environment in effect).

The sandbox's own per-command work is measured apart: counting the sandbox user's tasks (its process
limit) and stripping set-uid/set-gid bits from the copy after the command (a walk of the copy: here a
tree of ``--files`` small files, about a SWE-bench corpus). Commands are interleaved, medians of
``--repeat`` runs. Last line: ``sandboxed/plain=X strip_ms=Y tasks_ms=Z files=N``.

    PYTHONPATH=. .venv/bin/python benchmarks/sandbox_command.py [--repeat 20] [--files 3000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fasbench.base.untrusted import (
    _tasks_of,
    check_sandbox,
    execute_sandboxed,
    give_to_sandbox,
    sandbox_env,
    sandbox_ids,
    strip_setid,
)


def _tree(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"pkg{i // 100}"
        d.mkdir(exist_ok=True)
        (d / f"m{i}.py").write_text(f"x = {i}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--files", type=int, default=3000)
    args = ap.parse_args()
    exe = check_sandbox()
    with tempfile.TemporaryDirectory(prefix="fasbench-bench-") as d:
        root = Path(d) / "copy"
        root.mkdir()
        _tree(root, args.files)
        give_to_sandbox(root)
        env = sandbox_env()
        res: dict[str, list[float]] = {"plain": [], "sandboxed": [], "strip": [], "tasks": []}
        uid = (sandbox_ids() or (os.getuid(), 0))[0]
        for _ in range(args.repeat):
            for cmd in ("true", "/usr/bin/python3 -c pass"):
                t = time.perf_counter()
                subprocess.run(["/bin/bash", "-c", cmd], cwd=root, env=env, stdin=subprocess.DEVNULL, check=True)
                res["plain"].append(time.perf_counter() - t)
                t = time.perf_counter()
                r = execute_sandboxed(exe, root, cmd, env, 30)
                res["sandboxed"].append(time.perf_counter() - t)
                assert r["returncode"] == 0, r
            t = time.perf_counter()
            strip_setid(root)
            res["strip"].append(time.perf_counter() - t)
            t = time.perf_counter()
            _tasks_of(uid)
            res["tasks"].append(time.perf_counter() - t)
    med = {k: statistics.median(v) * 1000 for k, v in res.items()}
    print(
        f"median ms over {args.repeat} x 2 commands (load {os.getloadavg()[0]:.1f}): plain {med['plain']:.1f}, "
        f"sandboxed {med['sandboxed']:.1f} (of which set-id strip {med['strip']:.1f}, task count {med['tasks']:.1f})"
    )
    print(
        f"sandboxed/plain={med['sandboxed'] / med['plain']:.2f} strip_ms={med['strip']:.1f} "
        f"tasks_ms={med['tasks']:.1f} files={args.files}"
    )


if __name__ == "__main__":
    main()
