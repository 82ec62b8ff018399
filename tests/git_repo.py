"""A small real git repository for tests: one file, an initial commit and three one-line fixes."""

import subprocess
from pathlib import Path


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def three_fixes(r: Path) -> Path:
    """Make ``r`` a repository whose ``mod.py`` (20 lines) gets three commits "Fix line N"."""
    r.mkdir(parents=True, exist_ok=True)
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "T")
    (r / "mod.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "initial")
    for i in (3, 10, 17):
        (r / "mod.py").write_text((r / "mod.py").read_text().replace(f"line {i}\n", f"line #{i}\n"))
        git(r, "commit", "-qam", f"Fix line {i}")
    return r
