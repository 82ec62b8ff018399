"""Line ranges as intervals: end-of-file ends, clipping, merging and overlap without one entry per line.

A range is ``[start, end]``, 1-based and inclusive. ``end == -1`` means "to the end of the file"
(Relace's ``report_back`` schema allows it). Scoring never expands a range into its lines: a report
range ``[1, 2147483647]`` costs as much as ``[1, 2]``. Every range is clipped before it is counted:

- to the file's length when the file is known: ``root`` names an existing workspace directory and
  the (normalised) path is a regular file inside it, by :mod:`fasbench.base.contain`'s rule (symlinks
  are followed only while they stay inside the root; the file is streamed, at most
  ``contain.MAX_READ_BYTES`` of it, and its count is cached by size and modification time);
- otherwise (no root, a file missing from the root, outside it, or not a regular file) to
  :data:`LINE_CAP`: ``[s, -1]`` then counts as ``[s, LINE_CAP]`` and ``[s, 10**9]`` as
  ``[s, LINE_CAP]``. :func:`capped_ranges` counts the ranges this touched so that a score can say so.

``LINE_CAP`` (100,000 lines) is far above the length of ordinary source files, so a real range is
practically never cut by it; a range that reaches it is either an "end of file" with no file to
measure or a bogus number, and both then count as many cited lines (a low line precision), never as
an unbounded amount of work. Pass the workspace root to score exactly.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from fasbench.base.contain import PathRefused, count_lines, file_key

END = -1  # a range end meaning "the last line of the file"
LINE_CAP = 100_000  # ranges of files of unknown length are clipped here (see the module docstring)


def merge_ranges(ranges: Iterable[Sequence[int]], n_lines: int | None = None) -> list[list[int]]:
    """Sorted, merged, clipped ranges. ``[s, -1]`` ends at the file's last line; other reversed
    ranges are put right; starts below 1 are raised to 1; ends are clipped to ``n_lines`` (or to
    :data:`LINE_CAP` when the length is unknown); ranges left empty are dropped."""
    limit = LINE_CAP if n_lines is None else max(0, int(n_lines))
    rs = []
    for a, b in ranges:
        a, b = int(a), int(b)
        if b == END and a != END:
            b = limit
        elif b < a:
            a, b = b, a
        a, b = max(1, a), min(b, limit)
        if a <= b:
            rs.append((a, b))
    rs.sort()
    out: list[list[int]] = []
    for a, b in rs:
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def clamp(a: int, b: int, n_lines: int | None = None) -> tuple[int, int] | None:
    """One range ``[a, b]`` clipped to lines ``1 … n_lines`` (:data:`LINE_CAP` when the length is
    unknown); None when nothing of it is left. Unlike :func:`merge_ranges` a reversed range or an
    ``[s, -1]`` is empty here: this is the bound for code that walks a range line by line."""
    limit = LINE_CAP if n_lines is None else max(0, int(n_lines))
    a, b = max(1, int(a)), min(int(b), limit)
    return (a, b) if a <= b else None


def line_set(ranges: Iterable[Sequence[int]], n_lines: int | None = None) -> set[int]:
    """The line numbers ``range(a, b + 1)`` of each range covers, clipped by :func:`clamp`: the one
    place a range from data (a record, a trace, a report) becomes a set of lines, so a range
    ``[1, 10**10]`` costs at most ``n_lines`` (or :data:`LINE_CAP`) entries, however many ranges."""
    kept = [r for a, b in ranges if (r := clamp(a, b, n_lines)) is not None]
    return {n for a, b in merge_ranges(kept, n_lines) for n in range(a, b + 1)}


def total(merged: Sequence[Sequence[int]]) -> int:
    """Number of lines covered by merged ranges."""
    return sum(b - a + 1 for a, b in merged)


def overlap(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> int:
    """Number of lines two merged (sorted, disjoint) range lists share: one linear sweep."""
    i = j = n = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            n += hi - lo + 1
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return n


@lru_cache(maxsize=65536)
def _count(root: str, real: str, size: int, mtime_ns: int) -> int | None:
    """Lines of a regular file inside the root (a last line without a newline counts), read through
    :func:`fasbench.base.contain.count_lines` (None past its byte cap)."""
    return count_lines(root, real)


def file_lines(root: str | os.PathLike | None, rel: str) -> int | None:
    """Line count of workspace-relative ``rel`` under ``root``; None when it cannot be known (no
    root, missing file, a path that leaves the root, not a regular file, unreadable, longer than
    :data:`fasbench.base.contain.MAX_READ_BYTES`)."""
    if not root or not rel:
        return None
    try:
        if not stat.S_ISREG(os.stat(os.path.join(root, rel)).st_mode):
            return None  # a missing file costs one stat, a FIFO or device is never opened
    except (OSError, ValueError):
        return None
    key = file_key(root, rel)  # the one containment rule: real path inside the root, a regular file
    if key is None:
        return None
    try:
        return _count(os.fspath(root), *key)
    except PathRefused:
        return None


def capped_ranges(
    files: Mapping[str, Sequence[Sequence[int]]], root: str | os.PathLike | None, normalize=lambda p: p
) -> int:
    """How many ranges reach past :data:`LINE_CAP` or end at ``-1`` in files whose length is
    unknown (so were counted up to the cap)."""
    n = 0
    for p, rs in files.items():
        big = [r for r in rs or () if len(r) == 2 and (r[1] == END or max(r) > LINE_CAP)]
        if big and file_lines(root, normalize(p)) is None:
            n += len(big)
    return n
