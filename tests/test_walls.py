"""The walls are fasbench's own (issue 25): nothing a workspace contains widens them. A malicious
repository as the corpus (a ``.git`` file pointing elsewhere, a config naming programs or files
outside, ``commondir``/alternates, submodules) and ``setsid`` children, each with both walls and
with the first wall alone (``FASBENCH_CONFINE=off``, patched the way the off switch acts); real
git, real ripgrep, real processes. Every hostile program writes a marker outside the root."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from git_repo import three_fixes
from procs_fixture import procs_with
from tools_fixture import SECRET, snapshot

from fasbench.tools import ToolLimits, make_toolset
from fasbench.tools.base import Workspace
from fasbench.tools.bash import pipeline as sandbox
from fasbench.tools.bash.confine import status
from fasbench.tools.bash.pipeline import Stage, run_pipeline
from fasbench.tools.rg import rg_argv

ST = status()
WALLS = ["both", "first-alone"]


@pytest.fixture(params=WALLS)
def walls(request, monkeypatch):
    if request.param == "first-alone":
        monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})
    return request.param


def git(cwd, *args) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main",
                           *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout  # fmt: skip


def repo(d: Path, files: dict[str, str]) -> Path:
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "initial")
    return d


@pytest.fixture()
def base(tmp_path):
    """``outside/`` (a secret, another repository holding a secret, a hostile script that leaves
    a marker in ``markers/``) next to the workspaces each test builds."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / "markers").mkdir()
    evil = out / "evil.sh"
    evil.write_text(f'#!/bin/sh\ntouch {tmp_path}/markers/ran-$$\ncat "$@"\n')
    evil.chmod(0o755)
    repo(out / "other", {"secret": SECRET + " in another repository\n", "README": "other\n"})
    return tmp_path


def bash(root: Path, command: str) -> tuple[str, bool]:
    return make_toolset("relace", root, ToolLimits(timeout_s=5)).call("bash", {"command": command})


def harmless(base: Path, out: str):
    assert SECRET not in out, out
    assert os.listdir(base / "markers") == [], "a program named by the repository ran"


# ---------------------------------------------------------------- the second wall: Landlock


@pytest.mark.skipif(not ST["landlock_abi"], reason="Landlock is not available in this kernel")
@pytest.mark.parametrize("gitdir", ["/", "..", "../.."])
def test_a_dot_git_file_does_not_widen_landlock(base, gitdir):
    """The second wall alone: an rg that follows a symlink out (what FastContext Grep with
    ``path='-L'`` ran) reads nothing outside, whatever the workspace's ``.git`` file says."""
    root = base / "ws"
    root.mkdir()
    (root / ".git").write_text(f"gitdir: {gitdir}\n")
    (root / "a.py").write_text("x = 1\n")
    os.symlink(base / "outside" / "secret.txt", root / "link")
    os.symlink(base / "outside", root / "linkdir")
    ws = Workspace(root, ToolLimits(timeout_s=5))
    for argv in (rg_argv("-L", "--no-ignore", SECRET, "."), rg_argv("--follow", "-uuu", SECRET), ["cat", "link"],
                 ["cat", str(base / "outside" / "secret.txt")]):  # fmt: skip
        r = run_pipeline(ws, [Stage(argv)])
        assert SECRET.encode() not in r.stdout, (argv, r.stdout)
    out, _ = make_toolset("fastcontext", root, ToolLimits(timeout_s=5)).call(
        "Grep", {"pattern": SECRET, "path": "-L", "output_mode": "content"}
    )
    assert SECRET not in out


# ---------------------------------------------------------------- a .git that points elsewhere


@pytest.mark.parametrize("pointer", ["abs", "rel", "root", "parent"])
def test_a_dot_git_file_pointing_at_another_repository(base, walls, pointer):
    other = base / "outside" / "other" / ".git"
    gitdir = {"abs": str(other), "rel": "../outside/other/.git", "root": "/", "parent": ".."}[pointer]
    root = base / "ws"
    root.mkdir()
    (root / ".git").write_text(f"gitdir: {gitdir}\n")
    (root / "README").write_text("mine\n")
    for command in ("git show HEAD:secret", "git log -p", f"git grep {SECRET[:9]} HEAD", "git log --stat",
                    "git ls-files", "git ls-tree -r HEAD", "git diff HEAD"):  # fmt: skip
        out, err = bash(root, command)
        assert err and "git is not available here" in out and ".git in this workspace is a file" in out, (command, out)
        harmless(base, out)
    out, err = bash(root, "rg -n mine")  # the workspace itself is still searched
    assert not err and "README:1:mine" in out


def test_a_symlinked_dot_git_is_not_followed(base, walls):
    root = base / "ws"
    root.mkdir()
    os.symlink(base / "outside" / "other" / ".git", root / ".git")
    out, err = bash(root, "git show HEAD:secret")
    assert err and "is a file or a symlink" in out
    harmless(base, out)


# ---------------------------------------------------------------- the repository's own config


def hostile(base: Path, name: str, config: list[tuple[str, str]], files: dict[str, str] | None = None) -> Path:
    """A committed repository ``ws`` (``a.txt`` changed in the work tree since), then ``config``."""
    root = repo(base / "ws", {"a.txt": "one\n", "secret.txt": "tracked, harmless\n", ".mailmap": "",
                              **(files or {})})  # fmt: skip
    (root / "a.txt").write_text("one\ntwo\n")
    for k, v in config:
        git(root, "config", "--local", k, v)
    return root


EVIL = "{base}/outside/evil.sh"
CONFIGS = {
    "clean filter": (
        [("filter.evil.clean", EVIL), ("filter.evil.smudge", EVIL)],
        {".gitattributes": "* filter=evil\n"},
    ),
    "process filter": ([("filter.evil.process", EVIL)], {".gitattributes": "* filter=evil\n"}),
    "textconv": ([("diff.evil.textconv", EVIL)], {".gitattributes": "* diff=evil\n"}),
    "diff driver": ([("diff.evil.command", EVIL)], {".gitattributes": "* diff=evil\n"}),
    "external diff": ([("diff.external", EVIL)], {}),
    "fsmonitor": ([("core.fsmonitor", EVIL)], {}),
    "hooks": ([("core.hooksPath", "{base}/outside")], {}),
    "pager": ([("core.pager", EVIL), ("pager.log", EVIL), ("pager.blame", EVIL)], {}),
    "gpg": ([("log.showSignature", "true"), ("gpg.program", EVIL)], {}),
    "core.worktree": ([("core.worktree", "{base}/outside")], {}),
    "mailmap.file": ([("mailmap.file", "{base}/outside/mailmap")], {}),
    "include.path": ([("include.path", "{base}/outside/evil.cfg")], {".gitattributes": "* diff=evil\n"}),
    "attributesFile": ([("core.attributesFile", "{base}/outside/attrs")], {}),
}
COMMANDS = ["git diff", "git diff HEAD", "git blame a.txt", "git log -p", "git show HEAD", "git grep one",
            f"git grep {SECRET[:9]}", "git log --format=%aN", "git ls-files -m", "git show HEAD:a.txt"]  # fmt: skip


@pytest.mark.parametrize("attack", list(CONFIGS))
def test_repository_config_runs_nothing_and_reads_nothing_outside(base, walls, attack):
    config, files = CONFIGS[attack]
    (base / "outside" / "mailmap").write_text(f"{SECRET} <t@t>\n")
    (base / "outside" / "evil.cfg").write_text(f"[diff \"evil\"]\n\ttextconv = {base}/outside/evil.sh\n"
                                              f"[core]\n\tfsmonitor = {base}/outside/evil.sh\n")  # fmt: skip
    (base / "outside" / "attrs").write_text("* diff=evil filter=evil\n")
    for hook in ("post-index-change", "reference-transaction", "post-checkout"):
        os.symlink(base / "outside" / "evil.sh", base / "outside" / hook)
    root = hostile(base, attack, [(k, v.format(base=base)) for k, v in config], files)
    before = snapshot(base)
    got = {command: bash(root, command) for command in COMMANDS}
    harmless(base, "".join(out for out, _ in got.values()))  # the harm first (what today's code did)
    assert snapshot(base) == before
    for command, (out, err) in got.items():
        assert err and f".git/config sets {config[0][0].lower()}" in out, (command, out)


@pytest.mark.parametrize("layout", ["commondir", "alternates", "objects symlink"])
def test_a_git_dir_borrowing_another_repository(base, walls, layout):
    other = base / "outside" / "other" / ".git"
    sha = git(other.parent, "rev-parse", "HEAD").strip()
    root = repo(base / "ws", {"a.txt": "one\n"})
    gd = root / ".git"
    if layout == "commondir":
        (gd / "commondir").write_text(str(other) + "\n")
    elif layout == "alternates":
        (gd / "objects" / "info" / "alternates").write_text(str(other / "objects") + "\n")
    else:
        subprocess.run(["rm", "-rf", str(gd / "objects")], check=True)
        os.symlink(other / "objects", gd / "objects")
    git(root, "update-ref", "refs/heads/main", sha)
    for command in (f"git show {sha}:secret", "git show HEAD:secret", "git log -p", f"git grep {SECRET[:9]} HEAD"):
        out, err = bash(root, command)
        harmless(base, out)
        assert err and "git is not available here" in out, (command, out)


def test_submodules_are_not_followed(base, walls):
    """A gitlink whose ``.git`` file names another repository: the submodule options are refused
    and the diffs fasbench runs ignore submodules."""
    other = base / "outside" / "other"
    sha = git(other, "rev-parse", "HEAD").strip()
    root = repo(base / "ws", {"a.txt": "one\n", ".gitmodules": '[submodule "sub"]\n\tpath = sub\n\turl = ./x\n'})
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},sub")
    git(root, "commit", "-qm", "sub")
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_text(f"gitdir: {other / '.git'}\n")
    for command in (
        f"git grep --recurse-submodules {SECRET[:9]}",
        "git ls-files --recurse-submodules",
        "git diff --submodule=diff HEAD~1",
        "git log -p --submodule=log",
        "git diff --ignore-sub=none",
    ):
        out, err = bash(root, command)
        assert err and "it reads the submodules' repositories" in out, (command, out)
        harmless(base, out)
    for command in ("git diff", "git diff HEAD~1", "git log -p", "git show HEAD", "git ls-files"):
        out, err = bash(root, command)
        assert not err, (command, out)
        harmless(base, out)


@pytest.mark.parametrize("command", ["git log --show-signature", "git log --show-s -1", "git log --format=%G?",
                                     "git show --pretty=format:%GS HEAD"])  # fmt: skip
def test_gpg_is_never_run(base, walls, command):
    root = three_fixes(base / "ws")
    out, err = bash(root, command)
    assert err and "runs gpg" in out, out


# ---------------------------------------------------------------- the honest path


def test_git_works_on_an_honest_repository(base, walls):
    root = three_fixes(base / "ws")  # its config: core.*, user.email, user.name
    (root / ".gitattributes").write_text("*.py diff=python filter=lfs\n*.txt diff=nodriver\n")
    (root / "mod.py").write_text((root / "mod.py").read_text() + "line 21\n")
    ok = {}
    for command in ("git log --oneline", "git show --stat HEAD", "git grep -n 'line #10'", "git blame -L 3,3 mod.py",
                    "git diff", "git diff HEAD~1 HEAD", "git log -p -1", "git ls-files", "git ls-tree HEAD",
                    "git rev-parse --show-toplevel", "git log --format=%aN -1", "git show HEAD~1:mod.py"):  # fmt: skip
        out, err = bash(root, command)
        assert not err, (command, out)
        ok[command] = out
    assert ok["git log --oneline"].count("Fix line") == 3
    assert "mod.py:10:line #10" in ok["git grep -n 'line #10'"]
    assert "line #3" in ok["git blame -L 3,3 mod.py"]
    assert "+line 21" in ok["git diff"]
    assert ok["git rev-parse --show-toplevel"].strip() == str(root)
    harmless(base, "".join(ok.values()))


def test_a_workspace_without_git_says_so(base, walls):
    root = base / "plain"
    root.mkdir()
    (root / "a.txt").write_text("word\n")
    out, err = bash(root, "git grep word")
    assert err and "this workspace has no git repository" in out and "\n" not in out.strip()


# ---------------------------------------------------------------- processes that outlive the call

PARTS = {"both": None, "first-alone": {"landlock": False, "seccomp": False},
         "landlock, no seccomp": {"landlock": True, "seccomp": False}}  # fmt: skip


@pytest.mark.parametrize("parts", list(PARTS))
@pytest.mark.parametrize("script, timeout", [
    ("setsid sleep {m} & echo started", 5),  # the leader exits at once
    ("setsid sh -c 'sleep {m} & exit' & echo started; sleep 0.2", 5),  # a double fork in a new session
    ("setsid sleep {m} & echo started; sleep 30", 1),  # killed at the deadline
    ("setsid sleep {m} & echo started; cat /dev/zero", 5),  # killed at the output cap
])  # fmt: skip
def test_setsid_children_do_not_outlive_the_call(tmp_path, monkeypatch, reap, parts, script, timeout):
    if PARTS[parts] is not None:
        if PARTS[parts]["landlock"] and not ST["landlock_abi"]:
            pytest.skip("Landlock is not available in this kernel")
        monkeypatch.setattr(sandbox, "confine_parts", lambda: PARTS[parts])
    m = f"{60 + (hash((parts, script)) % 1000) / 1000:.3f}"
    reap.append(f"sleep {m}")
    ws = Workspace(tmp_path, ToolLimits(timeout_s=5))
    t = time.monotonic()
    r = run_pipeline(ws, [Stage(["sh", "-c", script.format(m=m)])], timeout=timeout, max_bytes=1 << 16)
    assert time.monotonic() - t < 15
    if PARTS[parts] is not None:
        assert b"started" in r.stdout, r  # without seccomp the shell forks
    time.sleep(0.3)
    assert procs_with(f"sleep {m}") == []


def test_reaped_commands_keep_their_output_status_and_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})
    ws = Workspace(tmp_path, ToolLimits(timeout_s=5))
    (tmp_path / "f.txt").write_text("b\na\n")
    r = run_pipeline(ws, [Stage(["cat", "f.txt"]), Stage(["sort"])])
    assert r.stdout == b"a\nb\n" and r.returncode == 0
    r = run_pipeline(ws, [Stage(["sh", "-c", "echo err >&2; exit 3"])])
    assert r.returncode == 3 and r.stderr == b"err\n"
    r = run_pipeline(ws, [Stage(["sh", "-c", "kill -TERM $$"])])
    assert r.returncode == -signal.SIGTERM
    with pytest.raises(Exception, match="could not start no-such-program"):
        run_pipeline(ws, [Stage(["no-such-program"])])
