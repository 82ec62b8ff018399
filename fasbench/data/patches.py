"""Gold from a unified diff, and relocation of its hunks onto another tree.

Line-range variants of the files a diff edits (old-file line numbers, 1-based, inclusive):

- ``hunk``: the old-file range of each hunk including its context (FastContext's labels).
- ``changed``: only the old-file lines removed or modified; a pure insertion gives the old line it
  follows (line 1 for an insertion at the top of a file).

Files the diff creates are edited files without line gold (empty ranges). Relocation finds each
hunk's old side in a different version of the file the way GNU ``patch`` does: exact lines, the
match nearest to where the previous hunks' offset predicts, then fuzz (dropping up to two leading
and trailing context lines).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import unidiff

from fasbench.base import contain
from fasbench.records import Ranges

MAX_FUZZ = 2


class PatchError(ValueError):
    """A diff could not be parsed; the message says which."""


@dataclass
class Hunk:
    """One hunk, reduced to what gold and relocation need (old-file view)."""

    source_start: int
    source_length: int
    old_lines: list[str]  # context + removed lines, in order (what must be found in the old file)
    new_lines: list[str]  # context + added lines, in order
    lead: int  # leading context lines
    trail: int  # trailing context lines
    changed: Ranges  # old-file ranges of the changed lines (see module doc)
    ops: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text) in diff order


@dataclass
class FileDiff:
    path: str  # old path (new path for a created file)
    created: bool
    deleted: bool
    hunks: list[Hunk] = field(default_factory=list)


def _merge(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(path: str) -> str:
    """A path as git writes it, unquoted: git puts a name with a control character, a quote, a backslash
    or (core.quotePath) a non-ASCII byte in double quotes with C escapes (``\\n``, ``\\"``, octal
    ``\\303\\251``); any other path is returned as it is."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out += c.encode("utf-8", "surrogateescape")
            i += 1
        elif body[i + 1] in _C_ESCAPES:
            out.append(_C_ESCAPES[body[i + 1]])
            i += 2
        elif len(oct3 := body[i + 1 : i + 4]) == 3 and all(d in "01234567" for d in oct3):
            out.append(int(oct3, 8) & 0xFF)
            i += 4
        else:  # not an escape git writes: kept as written
            out += c.encode()
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip(path: str) -> str:
    path = _unquote(path)
    for p in ("a/", "b/"):
        if path.startswith(p):
            return path[len(p) :]
    return path


def _text(line: unidiff.patch.Line) -> str:
    return line.value.rstrip("\n").rstrip("\r")


def _hunk(h: unidiff.Hunk) -> Hunk:
    kinds = [("-" if ln.is_removed else "+" if ln.is_added else " ") for ln in h]
    old, new, changed = [], [], []
    last_old = h.source_start - 1 if h.source_length else h.source_start
    i = 0
    lines = list(h)
    while i < len(lines):
        ln = lines[i]
        if ln.is_context:
            old.append(_text(ln))
            new.append(_text(ln))
            last_old = ln.source_line_no
            i += 1
            continue
        # a block of removed and/or added lines
        j, removed_nos, block_has_removed = i, [], False
        while j < len(lines) and not lines[j].is_context:
            if lines[j].is_removed:
                old.append(_text(lines[j]))
                removed_nos.append(lines[j].source_line_no)
                block_has_removed = True
            else:
                new.append(_text(lines[j]))
            j += 1
        if block_has_removed:
            changed.extend([n, n] for n in removed_nos)
            last_old = removed_nos[-1]
        else:  # pure insertion: the old line it follows
            at = max(last_old, 1)
            changed.append([at, at])
        i = j
    lead = 0
    while lead < len(kinds) and kinds[lead] == " ":
        lead += 1
    trail = 0
    while trail < len(kinds) - lead and kinds[len(kinds) - 1 - trail] == " ":
        trail += 1
    return Hunk(
        h.source_start,
        h.source_length,
        old,
        new,
        lead,
        trail,
        _merge(changed),
        [(k, _text(ln)) for k, ln in zip(kinds, lines)],
    )


def parse_diff(diff: str) -> list[FileDiff]:
    """Parse a unified (git) diff into file diffs. Binary files are kept without hunks."""
    if not isinstance(diff, str) or not diff.strip():
        raise PatchError("empty diff")
    try:
        ps = unidiff.PatchSet(diff)
    except unidiff.UnidiffParseError as e:
        raise PatchError(f"cannot parse diff: {e}") from e
    out = []
    for pf in ps:
        created = pf.is_added_file
        path = _strip(pf.target_file if created else pf.source_file)
        out.append(FileDiff(path, created, pf.is_removed_file, [_hunk(h) for h in pf]))
    if not out:
        raise PatchError("diff has no files")
    return out


def hunk_range(h: Hunk, offset: int = 0) -> list[int]:
    if h.source_length == 0:
        s = max(h.source_start, 1) + offset
        return [s, s]
    s = h.source_start + offset
    return [s, s + h.source_length - 1]


def gold_variants(files: list[FileDiff]) -> dict[str, dict[str, Ranges]]:
    """``{"hunk": {path: ranges}, "changed": {path: ranges}}``; created files get ``[]``."""
    hunk, changed = {}, {}
    for f in files:
        if f.created:
            hunk[f.path], changed[f.path] = [], []
            continue
        hunk[f.path] = _merge([hunk_range(h) for h in f.hunks])
        changed[f.path] = _merge([r for h in f.hunks for r in h.changed])
    return {"hunk": hunk, "changed": changed}


# ---------------------------------------------------------------- relocation


def _find(lines: list[str], needle: list[str], guess: int) -> int | None:
    """0-based start of ``needle`` in ``lines`` nearest to ``guess`` (ties: earlier), or None."""
    n = len(needle)
    if n == 0:
        return min(max(guess, 0), len(lines))
    last = len(lines) - n
    if last < 0:
        return None
    guess = min(max(guess, 0), last)
    first = needle[0]
    for d in range(0, max(guess, last - guess) + 1):
        for pos in (guess - d, guess + d) if d else (guess,):
            if 0 <= pos <= last and lines[pos] == first and lines[pos : pos + n] == needle:
                return pos
    return None


@dataclass
class HunkPlace:
    offset: int | None  # where the hunk's old side starts minus where the header says; None = not found
    fuzz: int = 0
    applied: bool = False  # the new side is already there (fix already in this tree)


def _read_lines(root: Path, rel: str) -> list[str]:
    """A gold patch's file on the corpus, through :mod:`fasbench.base.contain` (inside the root, bounded)."""
    text = contain.read_bytes(root, rel)[0].decode("utf-8", errors="surrogateescape")
    return [ln.rstrip("\r\n") for ln in text.splitlines(keepends=True)]


def locate_file(f: FileDiff, lines: list[str]) -> list[HunkPlace]:
    """Place every hunk of ``f`` in the file ``lines`` (patch's algorithm: nearest match to the
    expected line given earlier hunks' offset, exact first, then fuzz 1 and 2)."""
    places, carry = [], 0
    for h in f.hunks:
        start0 = (h.source_start - 1 if h.source_length else h.source_start) + carry
        place = HunkPlace(None)
        for fuzz in range(0, MAX_FUZZ + 1):
            top, bot = min(fuzz, h.lead), min(fuzz, h.trail)
            if fuzz and top == 0 and bot == 0:
                continue
            needle = h.old_lines[top : len(h.old_lines) - bot]
            if not needle and h.old_lines:
                break
            pos = _find(lines, needle, start0 + top)
            if pos is not None:
                off = pos - top - (h.source_start - 1 if h.source_length else h.source_start)
                place = HunkPlace(off, fuzz)
                break
        if h.old_lines != h.new_lines:  # is the fix already there? (new side present, exact)
            pure_insertion = len(h.old_lines) == h.lead + h.trail
            if place.offset is None or pure_insertion:
                place.applied = _find(lines, h.new_lines, start0) is not None
        if place.offset is not None:
            carry = place.offset
        places.append(place)
    return places


@dataclass
class Relocation:
    """The result of placing a diff's gold onto a tree."""

    status: str  # "clean" | "offset" | "fuzz" | drop reason ("file-missing", "hunk-not-found", "already-applied")
    variants: dict[str, dict[str, Ranges]]  # relocated hunk/changed ranges (only when located)
    detail: str = ""
    offsets: dict[str, list[int | None]] = field(default_factory=dict)
    max_fuzz: int = 0

    @property
    def located(self) -> bool:
        return self.status in ("clean", "offset", "fuzz")


def relocate(files: list[FileDiff], root: str | Path) -> Relocation:
    """Relocate the gold of ``files`` onto the tree at ``root``.

    Drops (status) with the first reason met: a non-created gold file missing
    (``file-missing``), the fix already present (``already-applied``: every changed hunk's new
    side is there and its old side is not, or every hunk is an insertion already made), a hunk whose
    old side cannot be found with fuzz <= 2 (``hunk-not-found``)."""
    root = Path(root)
    offsets, maxfuzz, any_offset = {}, 0, False
    hunk_v, changed_v = {}, {}
    missing, unfound, n_hunks, n_applied, n_applied_unfound = [], [], 0, 0, 0
    for f in files:
        if f.created:
            hunk_v[f.path], changed_v[f.path] = [], []
            continue
        try:
            lines = _read_lines(root, f.path)
        except contain.PathRefused:  # missing, outside the corpus, not a regular file
            missing.append(f.path)
            continue
        places = locate_file(f, lines)
        offsets[f.path] = [pl.offset for pl in places]
        for h, pl in zip(f.hunks, places):
            n_hunks += 1
            n_applied += pl.applied
            if pl.offset is None:
                if pl.applied:
                    n_applied_unfound += 1
                unfound.append(f"{f.path}@{h.source_start}")
                continue
            maxfuzz = max(maxfuzz, pl.fuzz)
            any_offset |= pl.offset != 0
        if all(pl.offset is not None for pl in places):
            hunk_v[f.path] = _merge([hunk_range(h, pl.offset) for h, pl in zip(f.hunks, places)])
            changed_v[f.path] = _merge(
                [[s + pl.offset, e + pl.offset] for h, pl in zip(f.hunks, places) for s, e in h.changed]
            )
    if missing:
        return Relocation("file-missing", {}, "missing: " + ", ".join(missing), offsets)
    if unfound and n_applied_unfound == len(unfound) or n_hunks and n_applied == n_hunks:
        return Relocation("already-applied", {}, f"{n_applied}/{n_hunks} hunks already applied", offsets)
    if unfound:
        return Relocation(
            "hunk-not-found", {}, f"{len(unfound)}/{n_hunks} hunks not found: " + ", ".join(unfound[:5]), offsets
        )
    status = "fuzz" if maxfuzz else "offset" if any_offset else "clean"
    return Relocation(status, {"hunk": hunk_v, "changed": changed_v}, "", offsets, maxfuzz)
