"""Checks that keep one bad file from stopping a trajectory analysis.

The analysis reads files written by other programs (and, in shared data sets, by anyone). A file is
skipped, with its reason recorded, when it is not a regular file (a FIFO named ``x.traj.json`` would
block the reader forever, so the kind is checked with ``os.stat`` before anything opens it), when
its JSON cannot be loaded (nesting deeper than the interpreter's recursion limit), when its layout
has values of the wrong type (``{"messages": ["hello", 3]}``), or when its numbers are out of any
plausible range (a token count of 10^30 does not fit the table's integer columns and would stop the
whole run when the table is built, long after the file was read).
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

from fasbench.trajectories.parsers import ParsedFile, TrajectoryError
from fasbench.trajectories.trajectory import subagents

# A model call's tokens above this are not a real count (context windows are ~10^6 tokens).
MAX_TOKENS = 10**9
_TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "obs_tokens")
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
}


def not_regular(path: str | os.PathLike) -> str | None:
    """None for a regular file (symlinks followed); otherwise why it must not be opened."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    if stat.S_ISREG(st.st_mode):
        return None
    return f"not a regular file ({_KINDS.get(stat.S_IFMT(st.st_mode), 'special file')})"


def check_parsed(parsed: ParsedFile) -> ParsedFile:
    """The parsed file, or TrajectoryError when a token count is not a plausible number (the main
    agents' turns and every nested subagent's)."""
    every = list(parsed.trajectories)
    every += [sub for tr in parsed.trajectories for *_, sub in subagents(tr)]
    for tr in every:
        for turn in tr.turns:
            for name in _TOKEN_FIELDS:
                v = getattr(turn, name)
                if v is None:
                    continue
                ok = (
                    isinstance(v, (int, float))
                    and not isinstance(v, bool)
                    and math.isfinite(v)
                    and 0 <= v <= MAX_TOKENS
                )
                if not ok:
                    shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
                    raise TrajectoryError(
                        f"implausible token count ({tr.trajectory_id} turn {turn.index}: "
                        f"{name}={shown}; expected a number in [0, {MAX_TOKENS:.0e}])"
                    )
    return parsed


def unparsable(e: BaseException) -> str:
    """The skip reason for an error a parser did not anticipate."""
    if isinstance(e, RecursionError):
        return "unparsable (JSON nested too deeply)"
    msg = str(e).replace("\n", " ")
    return f"unparsable ({type(e).__name__}: {msg[:200]})"


def label_file(path: Path) -> Path | None:
    """``path`` when it is an existing label file that may be opened; None when absent; raises
    ValueError for one that exists but is not a regular file."""
    if not os.path.lexists(path):
        return None
    why = not_regular(path)
    if why:
        raise ValueError(f"{path}: {why}")
    return path
