"""Search tasks mined from a git repository's history (for a user's own repository).

Each non-merge commit with a parent becomes a task: query = the commit message, gold = the files it
changed with old-file ``hunk``/``changed`` ranges (as for PR gold), ``base_commit`` = its parent.
Skipped, with a reason: merges, root commits, commits touching no code file (``non-code``), huge
commits (more than ``max_files`` files or ``max_lines`` changed lines), and empty or unparseable
diffs. ``meta["clone_url"]`` points at the repository so ``corpus.materialize`` can check out the
parent commit. git runs through the one wall (``fasbench.base.gitsafe``): the repository's own ``.git``
folder (a ``.git`` file is not followed), no system or global config, and no program its config or
attributes name (textconv, external diff, fsmonitor, pager, hooks) ever runs.
"""

from __future__ import annotations

from pathlib import Path

from fasbench.base import gitsafe
from fasbench.data.patches import PatchError, gold_variants, parse_diff
from fasbench.records import Gold, RecordError, Task, fields

CODE_SUFFIXES = {
    ".py",
    ".pyx",
    ".pxd",
    ".pyi",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".cxx",
    ".cu",
    ".rs",
    ".go",
    ".java",
    ".kt",
    ".scala",
    ".js",
    ".jsx",
    ".ts",
    ".tsx",
    ".mjs",
    ".rb",
    ".php",
    ".cs",
    ".swift",
    ".m",
    ".mm",
    ".sh",
    ".bash",
    ".lua",
    ".pl",
    ".r",
    ".jl",
    ".hs",
    ".ml",
    ".ex",
    ".exs",
    ".erl",
    ".clj",
    ".dart",
    ".vue",
    ".sql",
}


class GitRepoError(ValueError):
    """git could not read the repository or revision given to mine (bad input: exit 2 on the CLI).
    Not e2e's ``SandboxGitError``: that is fasbench's own hardened git failing on a sandbox copy."""


def _git(repo: Path, gd: Path, cmd: str, *options: str, revs: tuple = ()) -> str:
    """git on the repository being mined through the one wall (fasbench.base.gitsafe): its git directory
    fixed, no system/global config, no hooks, fsmonitor, textconv or external diff of its own."""
    try:
        return gitsafe.run(cmd, *options, revs=revs, git_dir=gd, work_tree=repo if gd != repo else None)
    except gitsafe.GitError as e:
        raise GitRepoError(f"{e} (in {repo})") from None


def is_code(path: str) -> bool:
    return Path(path).suffix.lower() in CODE_SUFFIXES


def mine(
    repo_path: str | Path,
    rev: str = "HEAD",
    max_commits: int | None = None,
    max_files: int = 20,
    max_lines: int = 1000,
    name: str | None = None,
) -> tuple[list[Task], list[dict]]:
    """Tasks from the history of ``rev`` (newest first) and the skipped commits ``[{sha, reason}]``."""
    repo = Path(repo_path).resolve()
    if not repo.is_dir():
        raise GitRepoError(f"{repo_path} is not a directory")
    try:
        gd = gitsafe.repository(repo)
        name = fields.repo_name(name or repo.name, "the mined repository's name (its folder's name, or name=)")
        fields.clone_url(str(repo), f"repository path {str(repo)!r}")
    except (gitsafe.GitError, RecordError) as e:
        raise GitRepoError(str(e)) from None
    if rev.startswith("-"):
        raise GitRepoError(f"revision {rev!r} may not start with '-'")
    tasks, skipped = [], []
    for line in _git(repo, gd, "rev-list", "--parents", revs=(rev,)).splitlines():
        if max_commits is not None and len(tasks) >= max_commits:
            break
        sha, *parents = line.split()
        if len(parents) > 1:
            skipped.append({"sha": sha, "reason": "merge"})
            continue
        if not parents:
            skipped.append({"sha": sha, "reason": "root-commit"})
            continue
        numstat = [
            ln.split("\t")
            for ln in _git(repo, gd, "diff", "--numstat", "--no-renames", revs=(parents[0], sha)).splitlines()
        ]
        paths = [n[2] for n in numstat if len(n) == 3]
        if not paths:
            skipped.append({"sha": sha, "reason": "empty"})
            continue
        if not any(is_code(p) for p in paths):
            skipped.append({"sha": sha, "reason": "non-code"})
            continue
        n_lines = sum(int(a) + int(d) for a, d, _ in (n for n in numstat if len(n) == 3) if a != "-")
        if len(paths) > max_files or n_lines > max_lines:
            skipped.append({"sha": sha, "reason": "huge"})
            continue
        diff = _git(repo, gd, "diff", "--no-color", "--no-renames", "-U3", revs=(parents[0], sha))
        try:
            var = gold_variants(parse_diff(diff))
        except PatchError:
            skipped.append({"sha": sha, "reason": "unparseable"})
            continue
        msg = _git(repo, gd, "log", "-1", "--format=%B", revs=(sha,)).strip()
        date = _git(repo, gd, "log", "-1", "--format=%aI", revs=(sha,)).strip()
        gold = Gold(edited={p: [list(r) for r in rs] for p, rs in var["hunk"].items()}, source="git", variants=var)
        tasks.append(
            Task(
                id=f"{name}@{sha[:12]}",
                query=msg,
                repo=name,
                gold=gold,
                base_commit=parents[0],
                meta={
                    "instance_id": f"{name}@{sha}",
                    "commit": sha,
                    "date": date,
                    "patch": diff,
                    "clone_url": str(repo),
                },
            )
        )
    return tasks, skipped
