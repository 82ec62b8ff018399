"""What a main agent looked at: the files and line ranges each of its shell calls read or searched.

One ``Look`` per file a call showed the agent:

- ``display``: a file operand of cat/head/tail/nl/less/more/sed/awk/bat (``fasbench.shell``,
  following ``cd``). Lines are known for ``sed -n 'A,Bp' F``, ``head -n N F``
  (1..N; 10 without ``-n``), ``awk 'NR>=A && NR<=B' F`` and for a pipe from a whole-file display into
  ``sed -n 'A,Bp'`` / ``head -n N`` (``nl -ba F | sed -n '10,40p'``, ``cat -n F | head -50``); otherwise
  the look is file-level (``lines=None``: ``cat F``, ``tail F``).
- ``search-hit``: a ``path:LINE:`` (or ``path-LINE-`` context) line in the output of grep/rg/git grep
  with line numbers, or ``LINE:`` lines of a grep on one file: those lines of that file.
- ``search-file``: a file named in the output of grep/rg/find/ls/git ls-files/fd/tree without a line
  number (the paths ``fasbench.trajectories.viewed.search_paths`` extracts; an output naming more than
  ``MAX_SEARCH_PATHS`` files is a dump, not a search result, and gives no looks).

Paths go through ``fasbench.trajectories.agent_paths.agent_path`` (repository-relative, must look like
files). The calls and their turn numbering are ``fasbench.trajectories.raw.shell_calls`` (the
trajectory parser's: turn k is the k-th assistant message, and a mini-swe-agent v1 turn has a call
only when it holds exactly one bash block).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from fasbench import shell
from fasbench.shell import Simple, operands
from fasbench.trajectories.agent_paths import ROOT, agent_path
from fasbench.trajectories.raw import output_text
from fasbench.trajectories.viewed import DISPLAY, MAX_SEARCH_PATHS, is_search, search_paths


@dataclass(frozen=True)
class Look:
    path: str  # repository-relative
    lines: tuple[tuple[int, int], ...] | None  # None: the whole file / file-level
    how: str  # display | search-hit | search-file


# ---------------------------------------------------------------- line ranges of one display

_SED_RANGE = re.compile(r"^\s*(\d+)\s*(?:,\s*(\d+)\s*)?p\s*;?\s*$")
_AWK_RANGE = re.compile(r"NR\s*>=?\s*(\d+)\s*&&\s*NR\s*<=?\s*(\d+)")
_HEAD_N = re.compile(r"^-n?(\d+)$")


def _sed_range(words: list[str]) -> tuple[int, int] | None:
    if "-n" not in words and not any(w.startswith("-n") for w in words[1:]):
        return None
    for w in words[1:]:
        m = _SED_RANGE.match(w)
        if m:
            a = int(m.group(1))
            return a, int(m.group(2) or a)
    return None


def _head_range(words: list[str]) -> tuple[int, int]:
    for i, w in enumerate(words[1:], 1):
        if w == "-n" and i + 1 < len(words) and words[i + 1].isdigit():
            return 1, int(words[i + 1])
        m = _HEAD_N.match(w)
        if m:
            return 1, int(m.group(1))
    return 1, 10


def _range_of(s: Simple) -> tuple[int, int] | None | bool:
    """The line range a display command restricts its input to; ``False`` when it shows it all."""
    name = posixpath.basename(s.words[0])
    if name == "sed":
        return _sed_range(s.words) or False
    if name == "head":
        return _head_range(s.words)
    if name == "awk":
        m = _AWK_RANGE.search(" ".join(s.words[1:]))
        return (int(m.group(1)), int(m.group(2))) if m else False
    return False


_HIT = re.compile(r"^([^\s:]+?)[:-](\d+)[:-]")
_ONE_FILE_HIT = re.compile(r"^(\d+)[:-]")


def _shell_grep_lines(s: Simple, output: str, cwd: str) -> dict[str, set[int]]:
    name = posixpath.basename(s.words[0])
    if name not in ("grep", "egrep", "rg", "git"):
        return {}
    if name == "git" and (len(s.words) < 2 or s.words[1] != "grep"):
        return {}
    hits: dict[str, set[int]] = {}
    ops = operands(s.words) if name != "git" else []
    single = agent_path(ops[0], cwd) if len(ops) == 1 and "-r" not in s.words and "-R" not in s.words else None
    for line in output_text(output).splitlines():
        m = _HIT.match(line)
        if m:
            p = agent_path(m.group(1), cwd)
            if p:
                hits.setdefault(p, set()).add(int(m.group(2)))
                continue
        if single:
            m = _ONE_FILE_HIT.match(line)
            if m:
                hits.setdefault(single, set()).add(int(m.group(1)))
    return hits


def _ranges(lines: set[int]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for i in sorted(lines):
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return tuple((a, b) for a, b in out)


def call_looks(command: str, output: str, cwd: str = ROOT) -> list[Look]:
    """The files (and lines) one shell call showed the agent (see the module doc)."""
    looks: list[Look] = []
    prev_files: list[str] = []  # files of the previous display in a pipe, for a later line filter
    for s, here in shell.walk(command, cwd):  # here: the working directory after any cd
        name = s.name
        files = [p for p in (agent_path(o, here) for o in operands(s.words)) if p] if name in DISPLAY else []
        rng = _range_of(s) if name in DISPLAY else False
        if files and name not in ("grep", "egrep", "rg", "wc"):
            for p in files:
                looks.append(Look(p, ((rng[0], rng[1]),) if rng else None, "display"))
            prev_files = [] if rng else files
        elif not files and prev_files and rng:  # `nl -ba F | sed -n 'A,Bp'`: narrow the previous look
            for p in prev_files:
                looks = [lk for lk in looks if not (lk.path == p and lk.lines is None and lk.how == "display")]
                looks.append(Look(p, ((rng[0], rng[1]),), "display"))
            prev_files = []
        if not files and len(prev_files) == 1 and name in ("grep", "egrep", "rg") and "-n" in " ".join(s.words):
            shown = {int(m.group(1)) for m in map(_ONE_FILE_HIT.match, output_text(output).splitlines()) if m}
            if shown:  # `cat F | grep -n x -A 30`: only the matched (and context) lines of F were shown
                p = prev_files[0]
                looks = [lk for lk in looks if not (lk.path == p and lk.lines is None and lk.how == "display")]
                looks.append(Look(p, _ranges(shown), "search-hit"))
                prev_files = []
        hits = _shell_grep_lines(s, output, here)
        for p, ls in hits.items():
            looks.append(Look(p, _ranges(ls), "search-hit"))
        if files and name in ("grep", "egrep", "rg") and not hits and output_text(output).strip():
            looks.extend(Look(p, None, "search-file") for p in files)  # matches without line numbers
        if is_search(s):
            found = search_paths(s, output, here)
            if len(found) <= MAX_SEARCH_PATHS:
                looks.extend(Look(p, None, "search-file") for p in sorted(found) if p not in hits)
    # each redirect target in its own command's working directory (not the last command's)
    written, here = set(), cwd
    for s in shell.simple_commands(command):
        written |= {agent_path(t, here) for op, t in s.redirects if op in (">", ">>")}
        if s.name == "cd" and len(s.words) > 1:
            here = posixpath.normpath(posixpath.join(here, s.words[1]))
    seen, out = set(), []
    for lk in looks:
        if lk.path in written or lk in seen:
            continue
        seen.add(lk)
        out.append(lk)
    return out
