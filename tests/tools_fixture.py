"""A real git repository in a temporary directory, with a secret next to it, for the tool tests."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

SECRET = "TOPSECRET-7f3a"

AUTH = """import os


def Login(user, password):
    \"\"\"Check a user's password.\"\"\"
    return check(user, password)


def check(user, password):
    return password == os.environ.get("PW")


class Auth:
    TOKEN_TTL = 3600
"""


def make_repo(base: Path) -> Path:
    """``base/repo`` (a committed git repository) and ``base/outside`` (a secret it must not reach)."""
    out = base / "outside"
    (out / "dir").mkdir(parents=True)
    (out / "secret.txt").write_text(SECRET + "\n")
    (out / "dir" / "s2.txt").write_text(SECRET + " in dir\n")
    root = base / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / ".hidden").mkdir()
    (root / "README.md").write_text("# Demo\n\nA demo repository for login checks.\n")
    (root / "src" / "pkg" / "__init__.py").write_text("from .auth import Login\n")
    (root / "src" / "pkg" / "auth.py").write_text(AUTH)
    (root / "src" / "pkg" / "models.py").write_text("class User:\n    name = 'login'\n    LOGIN_MAX = 3\n")
    (root / "src" / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 301)))
    (root / "tests" / "test_auth.py").write_text(
        "from pkg.auth import Login\n\n\ndef test_login():\n    assert Login\n"
    )
    (root / ".hidden" / "h.txt").write_text("hidden login note\n")
    (root / "bin.dat").write_bytes(b"\x7fELF\x00\x01\x02login\x00")
    (root / "latin.txt").write_bytes("café login\nplain\n".encode("latin-1"))
    (root / "empty.txt").write_text("")
    os.symlink(out / "secret.txt", root / "link_out_file")
    os.symlink(out / "dir", root / "link_out_dir")
    os.symlink("src/pkg/auth.py", root / "link_in")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "initial"], cwd=root, check=True)
    return root


def snapshot(base: Path) -> dict:
    """Every path under ``base`` with its type and content hash (file tree unchanged <=> equal)."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(base))
            if p.is_symlink():
                snap[rel] = ("link", os.readlink(p))
            elif p.is_file():
                snap[rel] = ("file", hashlib.sha1(p.read_bytes()).hexdigest())
            elif p.is_dir():
                snap[rel] = ("dir",)
            else:
                snap[rel] = ("other",)
    return snap
