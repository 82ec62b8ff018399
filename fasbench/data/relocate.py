"""Relocate any line ranges given on a task's ``base_commit`` onto its corpus (a general range
relocator; patches.relocate places only the gold patch's own hunks).

A region ``[path, start, end]`` (1-based, inclusive; ``end == -1`` = end of file and ``start < 0``
= counted from the end, as SWE-Explore writes them) is moved by the first rule that applies:

1. ``exact``: the corpus *is* the base commit (online git worktree): kept as is.
2. end-relative regions (``end == -1`` or ``start < 0``): kept; they resolve on the corpus file's
   own length when scored (SWE-Explore resolves them on its snapshot the same way).
3. the file's base-commit text is known (``old_texts``): lines are matched with difflib
   (SequenceMatcher over whole lines); the region maps to the corpus lines its matched lines land
   on, and is dropped when under ``MIN_MATCHED`` of its lines are matched.
4. the gold patch's hunks were located in that file (``offsets`` from patches.relocate, hunk
   old-side spans from the diff): a region inside one hunk's old span moves by that hunk's offset;
   a region between two located hunks (or before the first / after the last) moves by the offset
   on both sides when they agree (nothing else moved there as far as the anchors show). With only
   one bracketing hunk (before the first / after the last) the region moves by its offset only
   when it lies within ``NEAR`` lines of it.
5. otherwise the region is not relocatable (reason ``region-not-anchored``).

A region whose file is not in the corpus is ``file-missing``. Each dropped region comes back with
its reason.

:func:`place_explore` places a whole ``gold.explore`` (SWE-Explore read regions): a whole-file read
is written ``[path, 1, -1]`` by the importer, so it stays the whole file on any corpus version (rule
2); the anchors are the hunks of the gold patch and of the record's test patch; the base texts come
from an online checkout of the base commit when one is cached (data/corpus.py). Core regions that
cannot be placed are dropped with their reasons (in the task's ``meta["explore_relocation"]``); the
task keeps its read-region gold when the placed core regions hold at least ``MIN_CORE_PLACED`` of
the core lines (counted on the record's own line numbers, a whole file at its recorded length), and
is dropped with ``region-not-relocated`` otherwise. ``count_paths`` keeps every path the record's
regions name, so that a file whose optional region was dropped still has its line count when scored
(eval_runner counts the lines of every core and optional region path of the record).
its reason; callers drop the task when a core region cannot be placed.

:func:`place_context` places ContextBench's gold context (data/contextbench_tasks.py): each region by its
annotated ``content`` when it has one (rule 3, the content standing at its own lines and every other
base line unknown), else by the hunk anchors; the gold is kept only when every region is placed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fasbench.base import contain
from fasbench.base.lines import line_set
from fasbench.data.patches import FileDiff

MIN_MATCHED = 0.9  # share of a region's lines difflib must match (rule 3)
MIN_CORE_PLACED = 0.9  # share of the core lines (record's numbers) the placed core regions must hold
NEAR = 50  # lines from a single bracketing hunk within which its offset is trusted (rule 4)


@dataclass
class RegionRelocation:
    regions: list[list]  # relocated [path, start, end], in input order
    dropped: list[dict] = field(default_factory=list)  # {"region": [...], "reason": ..., "detail": ...}
    how: dict[str, int] = field(default_factory=dict)  # rule name -> count

    @property
    def ok(self) -> bool:
        return not self.dropped


def _difflib_map(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    sm = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    m: dict[int, int] = {}
    for a, b, n in sm.get_matching_blocks():
        for i in range(n):
            m[a + i + 1] = b + i + 1
    return m


def hunk_anchors(f: FileDiff, offsets: Sequence[int | None]) -> list[tuple[int, int, int]]:
    """``(old_start, old_end, offset)`` of each located hunk of ``f``, in file order."""
    out = []
    for h, off in zip(f.hunks, offsets):
        if off is None:
            continue
        s = h.source_start if h.source_length else max(h.source_start, 1)
        out.append((s, s + max(h.source_length, 1) - 1, off))
    return sorted(out)


def _by_anchors(s: int, e: int, anchors: list[tuple[int, int, int]]) -> int | None:
    """The offset of region [s, e] when the hunks overlapping it and the nearest hunk on each side
    all moved by the same offset, and each side without a hunk beyond it reaches at most ``NEAR``
    lines past the outermost anchor; else None."""
    over = [x for x in anchors if x[0] <= e and s <= x[1]]
    before = [x for x in anchors if x[1] < s]
    after = [x for x in anchors if x[0] > e]
    lo, hi = (before[-1] if before else None), (after[0] if after else None)
    near = over + [x for x in (lo, hi) if x]
    if not near or len({x[2] for x in near}) != 1:
        return None
    top_gap = 0 if lo else min(x[0] for x in over + ([hi] if hi else [])) - s
    bottom_gap = 0 if hi else e - max(x[1] for x in over + ([lo] if lo else []))
    return near[0][2] if max(top_gap, bottom_gap) <= NEAR else None


def relocate_regions(
    regions: Sequence[Sequence],
    root: str | Path,
    *,
    exact: bool = False,
    old_texts: Mapping[str, str] | None = None,
    anchors: Mapping[str, list[tuple[int, int, int]]] | None = None,
) -> RegionRelocation:
    """Move ``regions`` (``[path, start, end]`` on the base commit) onto the tree at ``root``."""
    root = Path(root)
    res = RegionRelocation([])
    maps: dict[str, dict[int, int]] = {}
    for r in regions:
        path, s, e = str(r[0]), int(r[1]), int(r[2])

        def keep(ns: int, ne: int, how: str, path: str = path) -> None:
            res.regions.append([path, ns, ne])
            res.how[how] = res.how.get(how, 0) + 1

        def drop(reason: str, detail: str = "", region: tuple = (path, s, e)) -> None:
            res.dropped.append({"region": list(region), "reason": reason, "detail": detail})

        if contain.file_key(root, path) is None:  # missing, outside the corpus or not a regular file
            drop("file-missing", path)
        elif exact:
            keep(s, e, "exact")
        elif e == -1 or s < 0:
            keep(s, e, "end-relative")
        elif old_texts and path in old_texts:
            if path not in maps:
                try:
                    new = contain.read_bytes(root, path)[0].decode("utf-8", errors="replace").splitlines()
                except contain.PathRefused:
                    new = []
                maps[path] = _difflib_map(old_texts[path].splitlines(), new)
            n_old = old_texts[path].count("\n") + 1  # the range's lines clipped to the old file's
            hit = [maps[path][i] for i in sorted(line_set([[s, e]], n_old)) if i in maps[path]]
            if len(hit) < MIN_MATCHED * (e - s + 1) or not hit:
                drop("region-changed", f"{len(hit)}/{e - s + 1} lines matched")
            else:
                keep(min(hit), max(hit), "difflib")
        elif anchors and anchors.get(path):
            off = _by_anchors(s, e, anchors[path])
            if off is None:
                drop("region-not-anchored", f"no agreeing gold-patch hunk offsets around {path}:{s}-{e}")
            else:
                keep(s + off, e + off, "hunk-offset")
        else:
            drop(
                "region-not-anchored",
                f"{path}:{s}-{e}: no anchor (file in neither the gold nor the test patch) "
                "and no base-commit text (no online checkout cached)",
            )
    return res


def record_lines(r: Sequence, whole: Mapping[str, int], root: str | Path | None = None) -> int:
    """Lines of a region on the record's own numbers (a whole-file read at its recorded length; an
    end-relative region without one at the length of the file on ``root``, 0 when it is not there)."""
    path, s, e = str(r[0]), int(r[1]), int(r[2])
    if e == -1 and s == 1 and not whole.get(path) and root is not None:
        try:
            data, _ = contain.read_bytes(Path(root), path)
            return len(data.decode("utf-8", errors="ignore").splitlines())
        except contain.PathRefused:
            return 0
    if e == -1:
        return int(whole.get(path) or 0) if s == 1 else (-s if s < 0 else 0)
    return max(e - s + 1, 0)


@dataclass
class ExplorePlacement:
    explore: dict | None  # the placed gold, None when the task cannot keep it
    meta: dict  # for task.meta["explore_relocation"]
    detail: str = ""  # why explore is None


def place_explore(
    ex: Mapping,
    root: str | Path,
    *,
    exact: bool = False,
    old_texts: Mapping[str, str] | None = None,
    anchors: Mapping[str, list[tuple[int, int, int]]] | None = None,
) -> ExplorePlacement:
    """Place the core and optional regions of ``ex`` (``gold.explore``) on ``root`` (module doc)."""
    core = relocate_regions(ex["core_regions"], root, exact=exact, old_texts=old_texts, anchors=anchors)
    opt = relocate_regions(ex.get("optional_regions") or [], root, exact=exact, old_texts=old_texts, anchors=anchors)
    whole = ex.get("whole_files") or {}
    total = sum(record_lines(r, whole, root) for r in ex["core_regions"])
    lost = sum(record_lines(d["region"], whole, root) for d in core.dropped)
    share = 1.0 - lost / total if total else (1.0 if core.ok else 0.0)
    meta = {
        "core": core.how,
        "optional": opt.how,
        "optional_dropped": len(opt.dropped),
        "core_dropped": core.dropped,
        "core_lines_placed": round(share, 6),
    }
    if not core.regions or share < MIN_CORE_PLACED:
        d = core.dropped[0]
        return ExplorePlacement(
            None,
            meta,
            f"{len(core.dropped)}/{len(ex['core_regions'])} core regions, "
            f"{100 * share:.1f}% of the core lines placed (need {100 * MIN_CORE_PLACED:.0f}%): "
            f"{d['reason']} ({d['detail']})",
        )
    paths = {str(r[0]) for r in list(ex["core_regions"]) + list(ex.get("optional_regions") or [])}
    out = dict(
        ex,
        core_regions=core.regions,
        optional_regions=opt.regions,
        count_paths=sorted(paths | set(ex.get("count_paths") or [])),
    )
    return ExplorePlacement(out, meta)


_UNKNOWN = "\x00fasbench: base-commit line {} unknown"  # matches no corpus line


def _content_text(start: int, content: str) -> str:
    """A stand-in for a base-commit file of which only one region's text is known: ``content`` at
    its own lines from ``start``, every other line unknown."""
    return "\n".join([_UNKNOWN.format(i) for i in range(1, start)] + content.splitlines())


def place_context(
    regions: Sequence[Sequence],
    contents: Sequence[str | None],
    root: str | Path,
    *,
    exact: bool,
    anchors: Mapping[str, list[tuple[int, int, int]]] | None = None,
) -> tuple[list | None, dict, str]:
    """(the placed regions, or None when one cannot be placed; ``{"how", "dropped"}``; why None) of
    ContextBench gold regions on ``root``, ``contents[i]`` the annotated text of ``regions[i]``."""
    placed, how, dropped = [], {}, []
    for i, r in enumerate(regions):
        c = contents[i] if i < len(contents) else None
        old = {str(r[0]): _content_text(int(r[1]), c)} if c and not exact else None
        rel = relocate_regions([r], root, exact=exact, old_texts=old, anchors=anchors)
        for k, n in rel.how.items():
            how[k] = how.get(k, 0) + n
        placed += rel.regions
        dropped += rel.dropped
    meta = {"how": how, "dropped": dropped}
    if dropped:
        d = dropped[0]
        return None, meta, f"{len(dropped)}/{len(regions)} gold-context regions: {d['reason']} ({d['detail']})"
    return placed, meta, ""
