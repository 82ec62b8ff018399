"""Trajectory files and their resolved labels: which files under a folder are trajectories, what
happened to each (parsed, skipped with a reason, ignored), and the labels stored beside them."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fasbench.trajectories.guard import label_file, not_regular
from fasbench.trajectories.raw import read_text

TRAJ_SUFFIXES = (".traj", ".json", ".jsonl")
LABEL_NAMES = ("resolved.json", "resolved.json.gz")
METADATA = re.compile(
    r"^(?:preds\.json|sb-cli-report\.json|results\.json|SOURCE\.md)(?:\.gz)?$|\.report\.json(?:\.gz)?$"
)


@dataclass
class FileReport:
    """What happened to every file the analysis was given or found."""

    parsed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    partial: list[tuple[str, str]] = field(default_factory=list)  # read, but part was left out
    ignored: list[tuple[str, str]] = field(default_factory=list)  # not trajectory files (labels, docs)
    formats: Counter = field(default_factory=Counter)
    sidechain_lines: int = 0

    def to_dict(self, examples: int = 5) -> dict:
        by_reason = Counter(_reason_kind(r) for _, r in self.skipped)
        ignored = Counter(r for _, r in self.ignored)
        return {
            "parsed": len(self.parsed),
            "skipped": len(self.skipped),
            "skipped_by_reason": dict(by_reason),
            "skipped_files": [{"path": p, "reason": r} for p, r in self.skipped],
            "partial_files": [{"path": p, "reason": r} for p, r in self.partial],
            "ignored": dict(ignored),
            "ignored_examples": {k: [p for p, r in self.ignored if r == k][:examples] for k in ignored},
            "formats": dict(self.formats),
            "sidechain_lines_left_out": self.sidechain_lines,
        }


def _reason_kind(reason: str) -> str:
    return reason.split(" (", 1)[0]


def _is_traj_name(name: str) -> bool:
    base = name[:-3] if name.endswith(".gz") else name
    return base.endswith(TRAJ_SUFFIXES)


def discover(paths: Iterable[str | Path], report: FileReport) -> list[tuple[Path, str]]:
    """(file, data set name) for every trajectory file under ``paths`` (files are taken as given;
    folders are walked, and files that are not trajectories are recorded as ignored)."""
    out = []
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"no such file or folder: {p}")
        if not p.is_dir():
            why = not_regular(p)  # os.stat first: a FIFO must never be opened
            if why:
                report.skipped.append((str(p), why))
            else:
                out.append((p, p.parent.name if p.parent.name != "trajs" else p.parent.parent.name))
            continue
        found = []
        for root, dirs, names in os.walk(p):
            dirs.sort()
            in_reports = "eval_reports" in Path(root).relative_to(p).parts
            for name in sorted(names):
                f = os.path.join(root, name)
                if name in LABEL_NAMES:
                    report.ignored.append((f, "resolved labels"))
                elif name.startswith("agent-") and os.path.basename(root) == "subagents":
                    report.ignored.append((f, "Claude Code subagent transcript (read with its session file)"))
                elif in_reports or METADATA.search(name):
                    report.ignored.append((f, "run metadata (reports, predictions, SOURCE)"))
                elif not _is_traj_name(name):
                    report.ignored.append((f, "not a trajectory file name"))
                elif why := not_regular(f):
                    report.skipped.append((f, why))
                else:
                    found.append(f)
        out.extend((Path(f), p.name) for f in sorted(found))
    return out


def load_labels(path: str | Path) -> dict[str, bool]:
    """Resolved labels near ``path``: ``resolved.json[.gz]`` ({instance_id: bool}), a SWE-bench
    ``eval_reports/`` folder of ``<id>.report.json[.gz]``, or ``sb-cli-report.json``, looked for in
    the folder itself and up to two folders above."""
    p = Path(path)
    start = p if p.is_dir() else p.parent
    for d in [start, *list(start.parents)[:2]]:
        for name in LABEL_NAMES:
            f = d / name
            if label_file(f):
                data = json.loads(read_text(f))  # bounded, gunzipped when gzip (a gzip bomb stops at the cap)
                if not isinstance(data, dict):
                    raise ValueError(f"{f}: expected {{instance_id: bool}}")
                return {str(k): bool(v) for k, v in data.items()}
        reports = d / "eval_reports"
        if reports.is_dir():
            labels = {}
            for f in sorted(reports.glob("*.report.json*")):
                label_file(f)
                iid = f.name.split(".report.json")[0]
                rep = json.loads(read_text(f))
                rep = rep.get(iid, rep)
                labels[iid] = bool(rep.get("resolved"))
            if labels:
                return labels
        sb = d / "sb-cli-report.json"
        if label_file(sb):
            s = json.loads(read_text(sb))
            return {**{i: False for i in s.get("unresolved_ids", [])}, **{i: True for i in s.get("resolved_ids", [])}}
    return {}
