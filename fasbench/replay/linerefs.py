"""Paths and line ranges as the replay shows them: readable shortened paths for labels, and range
ends of -1 ("to the end of the file", as ``view_file``'s ``view_range`` allows) resolved against the
corpus."""

from __future__ import annotations

from fasbench.base.lines import file_lines


def _line_count(root: str | None, path: str) -> int | None:
    """Lines of ``path`` under ``root`` through :mod:`fasbench.base.contain` (None: no root, refused, too long)."""
    return file_lines(root, path)


def to_eof(ranges, root: str | None, path: str) -> list[list[int]]:
    """Ranges with an end of -1 ("to the end of the file") ended at the
    file's last line; without the file, such a range keeps only its first line."""
    out = []
    for r in ranges:
        a, b = int(r[0]), int(r[1])
        if b < 0:
            n = _line_count(root, path)
            b = max(a, n) if n is not None else a
        out.append([a, b])
    return out


def short_path(path: str, n: int = 40) -> str:
    """A path shortened for a label without losing its ends: the first folder and as many trailing
    parts as fit, the middle as ``…`` (``django/…/models/fields/__init__.py``); a file name longer
    than ``n`` is cut in its middle."""
    if len(path) <= n:
        return path
    parts = path.split("/")
    if len(parts) == 1:
        k = (n - 1) // 2
        return path[:k] + "…" + path[-(n - 1 - k) :]
    tail = [parts[-1]]
    for part in reversed(parts[1:-1]):
        if len(parts[0]) + len("/…/") + len("/".join([part] + tail)) > n:
            break
        tail.insert(0, part)
    out = "/".join([parts[0], "…"] + tail) if len(tail) < len(parts) - 1 else "/".join([parts[0]] + tail)
    return out if len(out) <= n + 8 else short_path(parts[-1], n)
