"""The first edit of a submitted file: which files a submission changes, and whether one action edits
them (see ``fasbench.trajectories.analysis`` for the definition)."""

from __future__ import annotations

import re
from typing import Iterable

from fasbench.trajectories.classify import Action, code_writes

_DIFF_GIT = re.compile(r"^diff --git a/(.+?) b/(.+?)$", re.M)
_PLUS = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.M)


def submission_files(diff: str | None) -> list[str]:
    """Files a unified diff modifies (pre-existing files); its added files if it modifies none."""
    if not diff:
        return []
    heads = list(_DIFF_GIT.finditer(diff))
    if not heads:
        return [p for p in dict.fromkeys(_PLUS.findall(diff)) if p != "/dev/null"]
    modified, added = [], []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(diff)
        header = diff[m.end(): diff.find("@@", m.end(), end) if "@@" in diff[m.end():end] else end]
        (added if "new file mode" in header else modified).append(m.group(2))
    return list(dict.fromkeys(modified or added))


def _norm(p: str) -> str:
    p = p.strip().strip("'\"")
    if p.startswith("/testbed/"):
        p = p[len("/testbed/"):]
    while p.startswith("./"):
        p = p[2:]
    return p


def _hits(paths: Iterable[str], subs: list[str]) -> bool:
    for p in paths:
        q = _norm(p)
        if not q:
            continue
        for s in subs:
            if q == s or q.endswith("/" + s) or s.endswith("/" + q):
                return True
    return False


def _mentions(text: str, subs: list[str]) -> bool:
    return any(s in text or s.rsplit("/", 1)[-1] in text for s in subs)


def _temp_only(targets: tuple[str, ...]) -> bool:
    return bool(targets) and all(_norm(t).startswith(("/tmp/", "/dev/", "/var/tmp/")) for t in targets)


def edits_submission(a: Action, call_text: str, subs: list[str], scripts: set[str]) -> bool:
    for path, body in a.created:  # a script that writes a submitted file, for running later
        if (not subs or _mentions(body, subs)) and code_writes(body):
            scripts.add(path.rsplit("/", 1)[-1])
    if a.category != "edit":
        return bool(a.runs and scripts and any(r.rsplit("/", 1)[-1] in scripts for r in a.runs))
    if a.runs and scripts and any(r.rsplit("/", 1)[-1] in scripts for r in a.runs):
        return True
    if not subs:
        return not _temp_only(a.targets)
    if a.targets and _hits(a.targets, subs):
        return True
    if a.code_writes or not a.targets:
        return _mentions(call_text, subs)
    return False
