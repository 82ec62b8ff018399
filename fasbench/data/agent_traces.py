"""Agent-trace-derived search tasks (Relace's data set (1)) from real mini-swe-agent trajectories.

For each trajectory: query = the SWE-bench problem statement; ``gold.edited`` = files changed by the
submitted diff (with ``hunk``/``changed`` ranges like PR gold; files the diff *creates* are left out,
since a searcher cannot find them, and listed in ``meta["created_files"]``); ``gold.viewed`` = files
the agent displayed or that appeared in its search output before its first edit:

- displayed: file operands of cat/head/tail/nl/less/more/sed (not -i)/awk/grep/rg/wc (``fasbench.shell``,
  following ``cd``);
- searched: paths in the output of grep/rg/find/ls/git grep|ls-files/fd/tree (grep ``path:`` prefixes,
  find lines, ls entries joined with the listed folder); an output naming more than
  ``MAX_SEARCH_PATHS`` paths (``ls -R``, ``find .``) is a dump, not a search result, and is left out.

Paths are made repository-relative (``/testbed/`` and ``./`` stripped), must look like a file
(a suffix or a known name), and files the agent itself wrote are removed (by redirection, also
inside a shell script it wrote with a heredoc). The first edit is the first
action that runs ``sed -i``/``perl -i``, redirects into a file the submission changes, or runs
``git apply``/``patch``/a python snippet or script that mentions such a file. Tasks with an empty
submission (or one that only creates files) are dropped with a reason (``dropped()``).
"""

from __future__ import annotations

import gzip
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from fasbench import shell
from fasbench.data import swebench
from fasbench.data.files import find_data
from fasbench.data.patches import PatchError, gold_variants, parse_diff
from fasbench.records import Gold, Task
from fasbench.shell import Simple, operands, simple_commands

RUNS = {  # name -> (folder under data/trajectories or shared data, SWE-bench set)
    "gemini-3-pro": ("mini-swe-agent_gemini-3-pro_swebench-verified", "verified"),
    "deepseek-chat": ("mini-swe-agent-v2_deepseek-chat_swebench-lite-first100", "lite"),
}
DISPLAY = {"cat", "head", "tail", "nl", "less", "more", "sed", "awk", "grep", "egrep", "rg", "wc", "view", "bat"}
SEARCH = {"grep", "egrep", "rg", "find", "ls", "git", "fd", "tree", "ag"}
MAX_SEARCH_PATHS = 50  # a single output listing more paths is a dump (ls -R, find .), not a search result
KNOWN_NAMES = {"Makefile", "Dockerfile", "LICENSE", "README", "AUTHORS", "CHANGES", "setup.cfg", "tox.ini"}
_PATHLIKE = re.compile(r"^[\w.+@/-]+$")


def _trajectory_dir(folder: str) -> Path:
    return find_data(f"trajectories/{folder}", folder)


# ---------------------------------------------------------------- reading trajectories


@dataclass
class Action:
    command: str
    output: str


def read_actions(traj: dict) -> list[Action]:
    """(command, observation) pairs of a mini-swe-agent v1 (```bash``` block) or v2 (tool call)
    trajectory, in order."""
    msgs = traj.get("messages") or []
    out: list[Action] = []
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        cmds = []
        acts = (m.get("extra") or {}).get("actions")
        if acts:
            cmds = [a.get("command", "") for a in acts]
        elif m.get("tool_calls"):
            for c in m["tool_calls"]:
                try:
                    cmds.append(json.loads(c["function"]["arguments"]).get("command", ""))
                except (KeyError, TypeError, json.JSONDecodeError):
                    pass
        else:
            content = m.get("content") if isinstance(m.get("content"), str) else ""
            cmds = re.findall(r"```bash\s*\n(.*?)\n```", content, re.S)[:1]
        obs = []
        for n in msgs[i + 1:]:
            if n.get("role") == "assistant":
                break
            if n.get("role") in ("user", "tool") and isinstance(n.get("content"), str):
                obs.append(n["content"])
        for k, c in enumerate(cmds):
            out.append(Action(c, obs[k] if k < len(obs) else (obs[-1] if obs else "")))
    return out


def _output_text(obs: str) -> str:
    m = re.search(r"<output>\n?(.*?)</output>", obs, re.S)
    if m:
        return m.group(1)
    parts = re.findall(r"<output_(?:head|tail)>\n?(.*?)</output_(?:head|tail)>", obs, re.S)
    return "\n".join(parts) if parts else obs


# ---------------------------------------------------------------- commands


def _norm(path: str, cwd: str) -> str | None:
    path = path.strip().strip("'\"`,;")
    if not path or not _PATHLIKE.match(path) or path.endswith("/"):
        return None
    full = posixpath.normpath(posixpath.join(cwd, path))
    if not (full == "/testbed" or full.startswith("/testbed/")):
        return None
    rel = full[len("/testbed/"):]
    if not rel or rel.startswith(".") and not rel.startswith(".github"):
        return None
    base = posixpath.basename(rel)
    if "." not in base.strip(".") and base not in KNOWN_NAMES:
        return None
    return rel


def _search_paths(s: Simple, output: str, cwd: str) -> set[str]:
    name = posixpath.basename(s.words[0]) if s.words else ""
    found: set[str] = set()
    lines = _output_text(output).splitlines()
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
            for cand in ((tok,) if "/" in tok else (posixpath.join(cur, tok), tok)):
                p = _norm(cand, cwd)
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
            p = _norm(cand, cwd)
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


_WRITES = re.compile(r"open\([^)]*['\"][wa]\+?['\"]|\.write\(|write_text\(|fileinput|\.replace\(")


def _is_edit(a: Action, edited: set[str], scripts: dict[str, str], cwd: str) -> bool:
    cmd = a.command
    mentions = any(e in cmd for e in edited)
    if re.search(r"\b(sed|perl)\s+(-\w*\s+)*-i", cmd) or re.search(r"\bsed\s+-i", cmd):
        return True
    if re.search(r"\bgit\s+apply\b|\bpatch\s+(-p|<)", cmd):
        return True
    for s in simple_commands(cmd):
        for op, target in s.redirects:
            if op in (">", ">>") and _norm(target, cwd) in edited:
                return True
        if s.words and posixpath.basename(s.words[0]) == "tee" and any(_norm(w, cwd) in edited for w in s.words[1:]):
            return True
        if s.words and posixpath.basename(s.words[0]).startswith("python"):
            for w in s.words[1:]:
                if w in scripts and any(e in scripts[w] for e in edited) and _WRITES.search(scripts[w]):
                    return True
    return bool(mentions and "python" in cmd and _WRITES.search(cmd))


_SHEBANG_SH = re.compile(r"#!\s*\S*/(?:env\s+)?(?:ba|z|da)?sh\b")


def _is_shell_script(path: str, text: str) -> bool:
    return path.endswith(".sh") or bool(_SHEBANG_SH.match(text))


def _script_writes(script: str, cwd: str) -> set[str]:
    """Files a shell script the agent wrote (``cat <<EOF > x.sh``) writes by redirection when run
    from ``cwd``: files the agent made, not files it found."""
    return {p for s, d in shell.walk(script, cwd) for op, t in s.redirects if op in (">", ">>")
            for p in (_norm(t, d),) if p}


def viewing(actions: list[Action], edited: set[str]) -> Viewing:
    """Files displayed / seen in search output before the first edit of an ``edited`` file."""
    v = Viewing(n_actions=len(actions))
    scripts: dict[str, str] = {}
    for i, a in enumerate(actions):
        cwd = "/testbed"
        if _is_edit(a, edited, scripts, cwd):
            v.first_edit = i
            break
        for s, cwd in shell.walk(a.command, cwd):
            name = s.name
            for op, target in s.redirects:
                if op in (">", ">>"):
                    p = _norm(target, cwd)
                    if p:
                        v.written.add(p)
                    scripts[target] = s.heredoc or a.command
                    if s.heredoc and _is_shell_script(target, s.heredoc):
                        v.written |= _script_writes(s.heredoc, cwd)
            if name in DISPLAY:
                for o in operands(s.words):
                    p = _norm(o, cwd)
                    if p:
                        v.displayed.add(p)
            if name in SEARCH and (name != "git" or (len(s.words) > 1 and s.words[1] in ("grep", "ls-files"))):
                found = _search_paths(s, a.output, cwd)
                if len(found) > MAX_SEARCH_PATHS:
                    v.dumps_skipped += 1
                else:
                    v.searched |= found
    v.displayed -= v.written
    v.searched -= v.written
    return v


# ---------------------------------------------------------------- tasks


def _swebench_index() -> dict[str, Task]:
    idx = {t.id: t for t in swebench.tasks("swebench-verified")}
    idx.update({t.id: t for t in swebench.tasks("swebench-lite")})
    return idx


def _build(run: str, traj: dict, ref: Task | None) -> tuple[Task | None, str]:
    iid = traj.get("instance_id")
    if ref is None:
        return None, "not-in-swebench"
    sub = (traj.get("info") or {}).get("submission") or ""
    if not sub.strip():
        return None, "empty-submission"
    try:
        files = parse_diff(sub)
    except PatchError:
        return None, "unparseable-submission"
    created = sorted(f.path for f in files if f.created)
    kept = [f for f in files if not f.created]
    if not kept:
        return None, "submission-only-creates-files"
    var = gold_variants(kept)
    actions = read_actions(traj)
    v = viewing(actions, set(var["hunk"]))
    viewed = v.displayed | v.searched
    if not viewed:
        return None, "nothing-viewed-before-first-edit"
    gold = Gold(edited={p: [list(r) for r in rs] for p, rs in var["hunk"].items()}, viewed=viewed,
                source="agent-trace", variants=var)
    meta = {"instance_id": iid, "agent_run": run, "patch": sub, "created_files": created,
            "viewed_displayed": sorted(v.displayed), "viewed_searched": sorted(v.searched),
            "first_edit_action": v.first_edit, "n_actions": v.n_actions, "search_dumps_skipped": v.dumps_skipped,
            "exit_status": (traj.get("info") or {}).get("exit_status"), "sets": ref.meta.get("sets", [])}
    return Task(id=f"{iid}@{run}", query=ref.query, repo=ref.repo, gold=gold, base_commit=ref.base_commit,
                version=ref.version, meta=meta), ""


def build(runs: tuple[str, ...] = tuple(RUNS), progress: bool = False,
          instances: set[str] | None = None) -> tuple[list[Task], list[dict]]:
    """Agent-trace tasks of the given runs (only ``instances`` when given) and the dropped ones
    ``[{id, run, reason}]``."""
    idx = _swebench_index()
    tasks, dropped = [], []
    for run in runs:
        if run not in RUNS:
            raise ValueError(f"unknown agent run {run!r}; choose from {', '.join(RUNS)}")
        d = _trajectory_dir(RUNS[run][0]) / "trajs"
        files = sorted(d.glob("*.traj.json*"))
        if instances is not None:
            files = [f for f in files if f.name.split(".traj.json")[0] in instances]
        if not files:
            raise FileNotFoundError(f"no trajectories in {d}")
        for fn in tqdm(files, desc=run, disable=not progress):
            opener = gzip.open if fn.suffix == ".gz" else open
            with opener(fn, "rt", encoding="utf-8") as f:
                traj = json.load(f)
            t, why = _build(run, traj, idx.get(traj.get("instance_id")))
            if t is None:
                dropped.append({"id": traj.get("instance_id"), "run": run, "reason": why})
            else:
                tasks.append(t)
    return tasks, dropped
