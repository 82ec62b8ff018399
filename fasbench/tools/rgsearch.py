"""Searches with ripgrep through the sandbox: deterministic, path-sorted output (:func:`run_rg`).

Layering: :mod:`fasbench.tools.rg` names the binary and its flags and imports nothing that runs
processes; :mod:`fasbench.tools.bash.pipeline` (which runs every tool subprocess) imports it for the
binary's directory; this module builds on both.
"""

from __future__ import annotations

import re

from fasbench.tools.base import ToolError
from fasbench.tools.bash.pipeline import Stage, decode, run_pipeline
from fasbench.tools.rg import ignore_flags, rg_argv

#: Output lines the first, parallel pass may produce before it gives up and reruns sorted:
#: PARALLEL_FACTOR times the lines wanted, at least PARALLEL_MIN. Once the output is known to be
#: cut, the sorted pass that stops after the lines wanted is the cheaper way to the same answer:
#: letting the parallel pass run on (the old factor 20) doubled the CPU time of a whole-tree grep
#: with a few thousand matches (benchmarks/harness_concurrency.py: 0.44 s -> 0.23 s), and CPU is
#: what the concurrent calls of a turn compete for.
PARALLEL_FACTOR = 1
PARALLEL_MIN = 0


def _key(path: str) -> list[str]:
    return path.split("/")  # component-wise: the order of ``rg --sort path``


def _strip(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _arrange(text: str, paths_only: bool, heading=None) -> list[str]:
    """rg output sorted by path (component-wise), paths without a leading ``./``. Search output
    must come from ``--null`` (path NUL rest); a file's lines keep their order, files are joined
    by ``--`` when rg used context separators. ``heading`` (a function of the path): the layout of
    ``rg --heading`` instead, each file's ``heading(path)`` on its own line above its lines, a blank
    line between files."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if paths_only:
        return sorted((_strip(ln) for ln in lines if ln), key=_key)
    groups: dict[str, list[str | None]] = {}
    cur, seps = None, False
    for ln in lines:
        if "\x00" in ln:
            cur, rest = ln.split("\x00", 1)
            groups.setdefault(cur, []).append(rest)
        elif ln == "--" and cur is not None:
            seps = True
            groups[cur].append(None)
    out: list[str] = []
    for i, p in enumerate(sorted(groups, key=_key)):
        g = groups[p]
        while g and g[0] is None:
            g.pop(0)
        while g and g[-1] is None:
            g.pop()
        name = _strip(p)
        if heading is not None:
            if i:
                out.append("")
            out.append(heading(name))
            out.extend("--" if rest is None else rest for rest in g)
            continue
        if i and seps:
            out.append("--")
        for rest in g:
            if rest is None:
                out.append("--")
                continue
            m = re.match(r"\d+([:-])", rest)
            out.append(f"{name}{m.group(1) if m else ':'}{rest}")
    return out


def run_rg(
    ws, args: list[str], max_lines: int | None = None, cwd=None, paths_only: bool = False, heading=None
) -> tuple[list[str], bool]:
    """Run ``rg args`` in the workspace root (or ``cwd``); returns (lines, cut): the output
    sorted by path, at most ``max_lines`` lines, ``cut`` when there were more. ``paths_only``:
    the output is one path a line (``--files``, ``--files-with-matches``); otherwise the
    harness adds ``--null`` to split paths from line numbers reliably. ``heading``: see
    :func:`_arrange` (``max_lines`` then counts the lines without the headings).

    Deterministic and fast: a parallel (unsorted) pass collects the whole output when it has at
    most ``max(PARALLEL_FACTOR * max_lines, PARALLEL_MIN)`` lines (no limit when ``max_lines`` is
    None) and sorts it here; a bigger output is rerun with ``--sort path`` (single-threaded, but stopped after ``max_lines`` lines), which gives the
    same first lines. No match gives ([], False); an rg error raises ToolError."""
    null = [] if paths_only else ["--null"]
    ignore = ignore_flags(ws.root)

    def run(extra: list[str], limit: int | None):
        r = run_pipeline(
            ws, [Stage(rg_argv(*ignore, *extra, *null, *args))], max_lines=limit, max_bytes=16 * 2**20, cwd=cwd
        )
        if r.timed_out:
            raise ToolError(f"search timed out after {ws.limits.timeout_s:g}s; narrow the pattern or the path")
        if not r.cut and r.returncode not in (0, 1):
            raise ToolError(decode(r.stderr).strip() or f"ripgrep failed with exit status {r.returncode}")
        return r

    if max_lines is None:
        r = run([], None)
    else:
        r = run([], max(PARALLEL_FACTOR * max_lines, PARALLEL_MIN))
    if r.cut:  # more lines (or bytes) than wanted: the sorted pass gives the first ones
        r = run(["--sort", "path"], max_lines)
        text = decode(r.stdout)
        if r.cut:
            text = text[: text.rfind("\n") + 1]  # drop a partial last line
    else:
        text = decode(r.stdout)
    lines = _arrange(text, paths_only, heading)
    cut = r.cut
    if max_lines is not None and len(lines) > max_lines:
        lines, cut = lines[:max_lines], True
    return lines, cut
