"""Sandbox attacks: every case must be an error observation that leaks nothing from outside the
workspace and leaves the whole file tree (inside and outside the root) unchanged."""

from __future__ import annotations

import pytest
from tools_fixture import SECRET, make_repo, snapshot

from fasbench.tools import TOOLSETS, make_toolset
from fasbench.tools.base import Workspace
from fasbench.tools.bash.pipeline import resolve


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("sandbox")
    make_repo(b)
    return b


@pytest.fixture(scope="module")
def toolsets(base):
    return {name: make_toolset(name, base / "repo") for name in TOOLSETS}


PATH_ATTACKS = [
    ("relace", "view_file", {"path": "../outside/secret.txt"}),
    ("relace", "view_file", {"path": "src/../../outside/secret.txt"}),
    ("relace", "view_file", {"path": "/repo/../outside/secret.txt"}),
    ("relace", "view_file", {"path": "link_out_file"}),
    ("relace", "view_file", {"path": "link_out_dir/s2.txt"}),
    ("relace", "view_file", {"path": "/etc/passwd"}),
    ("relace", "view_file", {"path": "src/pkg/auth.py\x00"}),
    ("relace", "view_directory", {"path": ".."}),
    ("relace", "view_directory", {"path": "link_out_dir"}),
    ("relace", "view_directory", {"path": "../outside"}),
    ("fastcontext", "Read", {"path": "../outside/secret.txt"}),
    ("fastcontext", "Read", {"path": "link_out_file"}),
    ("fastcontext", "Read", {"path": "./link_out_dir/s2.txt"}),
    ("fastcontext", "Glob", {"pattern": "*", "directory": ".."}),
    ("fastcontext", "Glob", {"pattern": "*.txt", "directory": "link_out_dir"}),
    ("fastcontext", "Grep", {"pattern": "TOPSECRET", "path": "../outside"}),
    ("fastcontext", "Grep", {"pattern": "TOPSECRET", "path": "link_out_dir"}),
    ("fastcontext", "Grep", {"pattern": "TOPSECRET", "path": "link_out_file", "output_mode": "content"}),
    ("fastcontext", "Read", {"path": "/etc/passwd"}),
    ("fastcontext", "Grep", {"pattern": "root", "path": "/etc/passwd"}),
]
PATH_ATTACKS += [("fastcontext-fork", n, a) for t, n, a in PATH_ATTACKS if t == "fastcontext"]

BASH_ATTACKS = [
    # reading outside the root
    "cat ../outside/secret.txt",
    "cat /etc/passwd",
    "cat link_out_file",
    "ls link_out_dir/",
    "head -n 1 link_out_dir/s2.txt",
    "cat < ../outside/secret.txt",
    "cat src/*/../../../outside/secret.txt",
    "grep -r TOPSECRET ..",
    "grep -R TOPSECRET .",
    "grep -f ../outside/secret.txt README.md",
    "grep --file=../outside/secret.txt README.md",
    "rg -L TOPSECRET",
    "rg --follow TOPSECRET",
    "find .. -name secret.txt",
    "find -L . -name s2.txt",
    "ls ~",
    "cat $HOME/.bashrc",
    "git -C .. log",
    "git --git-dir=../outside log",
    "ls -RL .",
    # writing
    "echo hi > pwned.txt",
    "echo hi >> README.md",
    "echo hi 1>pwned.txt",
    "echo hi >| pwned.txt",
    "ls 3>pwned.txt",
    "ls 2>pwned.txt",
    "ls | tee pwned.txt",
    "sed -i s/Demo/Pwned/ README.md",
    "sed -n 'w pwned.txt' README.md",
    "sed -n 's/Demo/x/w pwned.txt' README.md",
    "sed -n '1e touch pwned.txt' README.md",
    "sed -f ../outside/secret.txt README.md",
    "sort -o pwned.txt README.md",
    "sort --output=pwned.txt README.md",
    "sort --compress-program=touch README.md",
    "uniq README.md pwned.txt",
    "find . -exec touch pwned.txt ;",
    "find . -execdir rm {} +",
    "find . -delete",
    "find . -fprint pwned.txt",
    "find . -fls pwned.txt",
    "tree -o pwned.txt",
    "file -C -m README.md",
    "git diff --output=pwned.txt",
    "git log -p --ext-diff",
    "git grep -O touch Login",
    "cat <<EOF > pwned.txt\nx\nEOF",
    # executing
    "rg --pre touch Login",
    "rg --pre=touch Login",
    "echo $(touch pwned.txt)",
    "echo `touch pwned.txt`",
    "cat <(touch pwned.txt)",
    "diff <(ls) >(touch pwned.txt)",
    "(touch pwned.txt)",
    "{ touch pwned.txt; }",
    "ls && rm README.md",
    "ls; rm README.md",
    "ls || rm -rf .",
    "ls & touch pwned.txt",
    "X=1 ls",
    "PATH=. ls",
    "ls | xargs rm",
    "rm -rf .",
    "/bin/rm README.md",
    "./README.md",
    "bash -c 'touch pwned.txt'",
    "sh -c 'touch pwned.txt'",
    "env touch pwned.txt",
    "exec cat README.md",
    'python -c \'open("pwned.txt", "w")\'',
    "python3 -c 'print(1)'",
    "awk 'BEGIN{system(\"touch pwned.txt\")}'",
    "perl -e 'print 1'",
    "for f in *; do rm $f; done",
    "if true; then touch pwned.txt; fi",
    "f() { touch pwned.txt; }; f",
    "tail -f README.md",
    "echo $((1+2))",
    # network
    "curl http://example.com",
    "wget http://example.com",
    "nc -l 1234",
    "git fetch origin",
    "git clone https://example.com/x.git",
    # git state
    "git -c core.pager=touch log",
    "git config user.name x",
    "git commit --allow-empty -m x",
    "git checkout -- README.md",
    "git stash",
    "git status",
    # parse failures
    "",
    "ls \\",
    "echo 'unterminated",
]


def _check_no_harm(base, before, out):
    assert SECRET not in out
    assert snapshot(base) == before, "the file tree changed"


@pytest.mark.parametrize("toolset, name, args", PATH_ATTACKS, ids=[f"{t}-{n}-{a}" for t, n, a in PATH_ATTACKS])
def test_path_attacks(base, toolsets, toolset, name, args):
    before = snapshot(base)
    out, err = toolsets[toolset].call(name, args)
    assert err, out
    # the release's own refusal (glob.py / grep.py @5fb8c1d) for the fastcontext tool set
    assert out.startswith("Error: ") or (toolset == "fastcontext" and out.startswith("Permission error: `")), out
    _check_no_harm(base, before, out)


@pytest.mark.parametrize("command", BASH_ATTACKS)
def test_bash_attacks(base, toolsets, command):
    before = snapshot(base)
    out, err = toolsets["relace"].call("bash", {"command": command})
    assert err, out
    assert out.startswith("Error: "), out
    _check_no_harm(base, before, out)
    assert not (base / "repo" / "pwned.txt").exists()


@pytest.mark.parametrize(
    "command, reason",
    [
        ("echo hi > pwned.txt", "redirection"),
        ("sed -i s/a/b/ README.md", "sed -i"),
        ("find . -delete", "find -delete"),
        ("rg --pre touch x", "--pre"),
        ("echo $(ls)", "command substitution"),
        ("cat <(ls)", "process substitution"),
        ("(ls)", "subshells"),
        ("X=1 ls", "environment assignments"),
        ("curl http://x", "not an allowed command"),
        ("git commit -m x", "git commit is not allowed"),
        ("git -c a=b log", "git option -c"),
        ("ls &", "background"),
        ("cat ../outside/secret.txt", "outside the workspace"),
        ("echo $HOME", "variables"),
        ("cat <<EOF\nx\nEOF", "here-documents"),
        ("echo $((1+2))", "could not parse"),
    ],
)
def test_refusals_say_why(toolsets, command, reason):
    out, err = toolsets["relace"].call("bash", {"command": command})
    assert err and reason in out, out


def test_searches_do_not_follow_symlinks_out(base, toolsets):
    before = snapshot(base)
    for ts, name, args in [
        ("relace", "grep_search", {"query": "TOPSECRET"}),
        ("relace", "grep_search", {"query": "TOPSECRET", "include_pattern": "../outside/*"}),
        ("relace", "bash", {"command": "grep -rn TOPSECRET ."}),
        ("relace", "bash", {"command": "rg TOPSECRET"}),
        ("relace", "bash", {"command": "find . -name s2.txt"}),
        ("relace", "bash", {"command": "ls -R"}),
        ("relace", "view_directory", {"path": ".", "include_hidden": True}),
        ("fastcontext", "Grep", {"pattern": "TOPSECRET", "output_mode": "content"}),
        ("fastcontext", "Glob", {"pattern": "**/s2.txt"}),
        ("fastcontext", "Glob", {"pattern": "../outside/*"}),
    ]:
        out, _ = toolsets[ts].call(name, args)
        assert SECRET not in out and "dir/s2.txt" not in out, (name, args, out)
    assert snapshot(base) == before


def test_allowed_spellings_resolve_inside(base):
    root = base / "repo"
    ws = Workspace(root)
    for spelling in [
        "README.md",
        "/README.md",
        "./README.md",
        "/repo/README.md",
        str(root / "README.md"),
        "src/../README.md",
        "src/pkg/../../README.md",
    ]:
        assert resolve(ws, spelling) == root / "README.md"
    assert resolve(ws, "/") == root and resolve(ws, str(root)) == root and resolve(ws, "/repo") == root
    assert resolve(ws, "link_in") == root / "src" / "pkg" / "auth.py"  # a symlink inside is fine


def test_git_cannot_see_a_repository_above_the_root(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("x\n")
    out, err = make_toolset("relace", sub).call("bash", {"command": "git log"})
    assert err and "this workspace has no git repository" in out
