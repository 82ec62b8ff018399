"""The first edit of a submitted file: which files a submission changes, and whether one action edits
them. Two definitions live here, each the one a shipped result was made with:

- ``edits_submission`` (the trajectory analysis, ``fasbench trajectories analyze`` and notebook 01;
  see ``fasbench.trajectories.analysis``): on the classifier's ``Action`` of a call of any format;
  an edit-category action whose targets match a submitted file by path suffix, or code that writes
  and mentions one, or a run of a script that does.
- ``edits_files`` (the agent-trace tasks' ``meta.first_edit_action`` and ``gold.viewed``,
  ``fasbench.trajectories.viewed``): on the shell text of a mini-swe-agent call: ``sed -i``/``perl -i``
  anywhere, ``git apply``/``patch``, a redirection or ``tee`` into an edited file (exact
  repository path), or python (a snippet or a script the agent wrote) that mentions one and writes.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from fasbench.shell import simple_commands
from fasbench.trajectories.agent_paths import ROOT, agent_path
from fasbench.trajectories.classify import Action, code_writes
from fasbench.trajectories.raw import ShellCall

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
        header = diff[m.end() : diff.find("@@", m.end(), end) if "@@" in diff[m.end() : end] else end]
        (added if "new file mode" in header else modified).append(m.group(2))
    return list(dict.fromkeys(modified or added))


def _hits(paths: Iterable[str], subs: list[str]) -> bool:
    for p in paths:
        q = agent_path(p, kind="text")
        if not q:
            continue
        for s in subs:
            if q == s or q.endswith("/" + s) or s.endswith("/" + q):
                return True
    return False


def _mentions(text: str, subs: list[str]) -> bool:
    return any(s in text or s.rsplit("/", 1)[-1] in text for s in subs)


def _temp_only(targets: tuple[str, ...]) -> bool:
    return bool(targets) and all(
        agent_path(t, kind="text").startswith(("/tmp/", "/dev/", "/var/tmp/")) for t in targets
    )


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


_WRITES = re.compile(r"open\([^)]*['\"][wa]\+?['\"]|\.write\(|write_text\(|fileinput|\.replace\(")


def edits_files(a: ShellCall, edited: set[str], scripts: dict[str, str], cwd: str = ROOT) -> bool:
    """Whether a shell call edits one of the ``edited`` repository files (the agent-trace rule, module
    doc); ``scripts`` maps the files the agent wrote so far to their text."""
    cmd = a.command
    mentions = any(e in cmd for e in edited)
    if re.search(r"\b(sed|perl)\s+(-\w*\s+)*-i", cmd) or re.search(r"\bsed\s+-i", cmd):
        return True
    if re.search(r"\bgit\s+apply\b|\bpatch\s+(-p|<)", cmd):
        return True
    for s in simple_commands(cmd):
        for op, target in s.redirects:
            if op in (">", ">>") and agent_path(target, cwd) in edited:
                return True
        if (
            s.words
            and posixpath.basename(s.words[0]) == "tee"
            and any(agent_path(w, cwd) in edited for w in s.words[1:])
        ):
            return True
        if s.words and posixpath.basename(s.words[0]).startswith("python"):
            for w in s.words[1:]:
                if w in scripts and any(e in scripts[w] for e in edited) and _WRITES.search(scripts[w]):
                    return True
    return bool(mentions and "python" in cmd and _WRITES.search(cmd))
