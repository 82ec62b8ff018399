"""The files a mini-swe-agent run displayed or found by search before its first edit (the agent-trace
tasks' ``gold.viewed``, ``fasbench.data.agent_traces``):

- displayed: file operands of cat/head/tail/nl/less/more/sed (not -i)/awk/grep/rg/wc (``fasbench.shell``,
  following ``cd``);
- searched: paths in the output of grep/rg/find/ls/git grep|ls-files/fd/tree (grep ``path:`` prefixes,
  find lines, ls entries joined with the listed folder); an output naming more than
  ``MAX_SEARCH_PATHS`` paths (``ls -R``, ``find .``) is a dump, not a search result, and is left out.

Paths go through ``agent_path`` (kind ``file``), and files the agent itself wrote are removed (by
redirection, also inside a shell script it wrote with a heredoc). The first edit is
``first_edit.edits_files``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from fasbench import shell
from fasbench.shell import Simple, operands
from fasbench.trajectories.agent_paths import ROOT, agent_path
from fasbench.trajectories.first_edit import edits_files
from fasbench.trajectories.raw import ShellCall, output_text

DISPLAY = {"cat", "head", "tail", "nl", "less", "more", "sed", "awk", "grep", "egrep", "rg", "wc", "view", "bat"}
SEARCH = {"grep", "egrep", "rg", "find", "ls", "git", "fd", "tree", "ag"}
MAX_SEARCH_PATHS = 50  # a single output listing more paths is a dump (ls -R, find .), not a search result


def is_search(s: Simple) -> bool:
    """Whether a simple command's output lists paths (``search_paths`` reads them)."""
    name = s.name
    return name in SEARCH and (name != "git" or (len(s.words) > 1 and s.words[1] in ("grep", "ls-files")))


def search_paths(s: Simple, output: str, cwd: str) -> set[str]:
    """The repository files named in the output of one search command run in ``cwd``."""
    name = posixpath.basename(s.words[0]) if s.words else ""
    found: set[str] = set()
    lines = output_text(output).splitlines()
    if name == "ls":
        ops = operands(["cat", *s.words[1:]])
        base = ops[0] if len(ops) == 1 else "."
        cur = base
        for line in lines:
            line = line.rstrip()
            if not line:
                continue
            if line.endswith(":") and " " not in line:  # ls -R header
                cur = line[:-1]
                continue
            tok = line.split()[-1]
            for cand in (tok,) if "/" in tok else (posixpath.join(cur, tok), tok):
                p = agent_path(cand, cwd)
                if p:
                    found.add(p)
                    break
        return found
    for line in lines:
        line = line.strip()
        if not line:
            continue
        m = re.match(r"^([^\s:]+?)(?::\d+)?[:-]", line)
        for cand in ([line] if " " not in line else []) + ([m.group(1)] if m else []):
            p = agent_path(cand, cwd)
            if p:
                found.add(p)
                break
    return found


@dataclass
class Viewing:
    displayed: set[str] = field(default_factory=set)
    searched: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)  # files the agent wrote (scratch scripts etc.)
    first_edit: int | None = None  # index of the first editing action
    n_actions: int = 0
    dumps_skipped: int = 0  # search outputs with more than MAX_SEARCH_PATHS paths, left out


_SHEBANG_SH = re.compile(r"#!\s*\S*/(?:env\s+)?(?:ba|z|da)?sh\b")


def _is_shell_script(path: str, text: str) -> bool:
    return path.endswith(".sh") or bool(_SHEBANG_SH.match(text))


def _script_writes(script: str, cwd: str) -> set[str]:
    """Files a shell script the agent wrote (``cat <<EOF > x.sh``) writes by redirection when run
    from ``cwd``: files the agent made, not files it found."""
    return {
        p
        for s, d in shell.walk(script, cwd)
        for op, t in s.redirects
        if op in (">", ">>")
        for p in (agent_path(t, d),)
        if p
    }


def viewing(actions: list[ShellCall], edited: set[str]) -> Viewing:
    """Files displayed / seen in search output before the first edit of an ``edited`` file."""
    v = Viewing(n_actions=len(actions))
    scripts: dict[str, str] = {}
    for i, a in enumerate(actions):
        if edits_files(a, edited, scripts, ROOT):
            v.first_edit = i
            break
        for s, here in shell.walk(a.command, ROOT):  # here: the working directory after any cd
            name = s.name
            for op, target in s.redirects:
                if op in (">", ">>"):
                    p = agent_path(target, here)
                    if p:
                        v.written.add(p)
                    scripts[target] = s.heredoc or a.command
                    if s.heredoc and _is_shell_script(target, s.heredoc):
                        v.written |= _script_writes(s.heredoc, here)
            if name in DISPLAY:
                for o in operands(s.words):
                    p = agent_path(o, here)
                    if p:
                        v.displayed.add(p)
            if is_search(s):
                found = search_paths(s, a.output, here)
                if len(found) > MAX_SEARCH_PATHS:
                    v.dumps_skipped += 1
                else:
                    v.searched |= found
    v.displayed -= v.written
    v.searched -= v.written
    return v
