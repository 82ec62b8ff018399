"""The replay's line overlay: per file, the lines an episode viewed, the lines search showed it, the
lines its report cited and the gold lines, with overlap counts, and the cited lines never shown to
the searcher before its report (``cited_unseen``: the grounding measure of :mod:`fasbench.scoring.process`,
summed over files it is that module's ``cited_lines_unseen``). What each call showed comes from
:func:`fasbench.replay.seen.observe`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fasbench.base.lines import overlap as _inter
from fasbench.base.lines import total as _n
from fasbench.records import Ranges, Task, Trace
from fasbench.replay.linerefs import to_eof
from fasbench.replay.seen import observe
from fasbench.replay.timeline import results_by_call
from fasbench.scoring.process import cited as cited_lines
from fasbench.scoring.process import shown_before_report
from fasbench.stats.metrics import merge_ranges, normalize_path


@dataclass
class FileOverlay:
    """The lines of one file the episode viewed, grep-matched and cited, and its gold lines."""

    path: str
    viewed: Ranges = field(default_factory=list)
    grep: list[int] = field(default_factory=list)
    cited: Ranges = field(default_factory=list)
    gold: Ranges = field(default_factory=list)
    is_cited: bool = False  # the report names the file (possibly without lines)
    is_gold: bool = False  # the gold names the file (possibly without lines)
    first_turn: int | None = None  # first turn that viewed or matched it
    cited_unseen: int = 0  # cited lines no call showed before the report (fasbench.scoring.process)

    def counts(self) -> dict:
        return {
            "path": self.path,
            "viewed": _n(self.viewed),
            "grep": len(self.grep),
            "cited": _n(self.cited),
            "gold": _n(self.gold),
            "gold_viewed": _inter(self.gold, self.viewed),
            "gold_cited": _inter(self.gold, self.cited),
            "cited_viewed": _inter(self.cited, self.viewed),
            "cited_unseen": self.cited_unseen,
            "is_cited": self.is_cited,
            "is_gold": self.is_gold,
        }


def report_turn(trace: Trace) -> int | None:
    """The 0-based turn that delivered the report (the last turn), or None without a report."""
    return len(trace.turns) - 1 if trace.report is not None and trace.turns else None


def file_overlay(
    trace: Trace, task: Task | None = None, upto_turn: int | None = None, root: str | None = None
) -> list[FileOverlay]:
    """Per touched file (viewed, matched, cited or gold): the overlaid line sets. ``upto_turn``
    (0-based, inclusive) limits viewed/matched lines to the turns so far, and the report's cited lines
    appear from the reporting turn on; gold is always shown. A range end of -1 means the end of the
    file. Gold files come first, then files in the order they were touched."""
    root = root or (task.root if task is not None else None)
    files: dict[str, FileOverlay] = {}

    def get(p: str) -> FileOverlay:
        if p not in files:
            files[p] = FileOverlay(p)
        return files[p]

    last = len(trace.turns) - 1 if upto_turn is None else upto_turn
    for t in trace.turns[: last + 1]:
        for c, r in zip(t.calls, results_by_call(t)):
            seen = observe(trace.toolset, c, r, root)
            for p, rs in seen.viewed().items():
                f = get(p)
                f.viewed = merge_ranges(f.viewed + rs)
                f.first_turn = t.index if f.first_turn is None else f.first_turn
            grown: set[str] = set()
            for p, n in seen.grep_lines():
                f = get(p)
                f.grep.append(n)  # sorted once per call below: a sort per hit was quadratic
                grown.add(p)
                f.first_turn = t.index if f.first_turn is None else f.first_turn
            for p in grown:
                files[p].grep = sorted(set(files[p].grep))
    rt = report_turn(trace)
    if rt is not None and last >= rt:
        for p, rs in trace.report.files.items():
            q = normalize_path(p, root)
            f = get(q)
            f.cited, f.is_cited = merge_ranges(f.cited + to_eof(rs, root, q)), True
        before = shown_before_report(trace)
        for q, rs in cited_lines(trace.report, root).items():
            get(q).cited_unseen = _n(rs) - _inter(rs, before.get(q, []))
    if task is not None:
        for p, rs in task.gold.edited.items():
            q = normalize_path(p, root)
            f = get(q)
            f.gold, f.is_gold = merge_ranges(f.gold + to_eof(rs, root, q)), True
    order = {p: i for i, p in enumerate(files)}
    return sorted(
        files.values(),
        key=lambda f: (
            not f.is_gold,
            not f.is_cited,
            f.first_turn if f.first_turn is not None else 1 << 30,
            order[f.path],
        ),
    )


def overlay_totals(rows: Iterable[FileOverlay]) -> dict:
    """Line counts summed over files, with the shares of gold lines viewed and cited."""
    tot = {
        "files": 0,
        "viewed": 0,
        "grep": 0,
        "cited": 0,
        "gold": 0,
        "gold_viewed": 0,
        "gold_cited": 0,
        "cited_viewed": 0,
        "cited_unseen": 0,
    }
    for f in rows:
        c = f.counts()
        tot["files"] += 1
        for k in tot:
            if k != "files":
                tot[k] += c[k]
    tot["gold_viewed_share"] = tot["gold_viewed"] / tot["gold"] if tot["gold"] else float("nan")
    tot["gold_cited_share"] = tot["gold_cited"] / tot["gold"] if tot["gold"] else float("nan")
    return tot
