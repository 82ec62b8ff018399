"""The attacks of issue 14 on the read-only ``bash`` tool, each reproduced: every one must be
refused (an error observation) without leaking the secret outside the root, without writing
anything anywhere, and without leaving a process behind. Each of these ran, leaked or wrote on
the checker that matched long options exactly and split short clusters only past the first
letter."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from tools_fixture import SECRET, make_repo, snapshot

from fasbench.tools import make_toolset


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("attacks")
    root = make_repo(b)
    (root / "cmds.txt").write_text(f"touch {b}/pwned-by-sort\n")  # lines a compress program would run
    plain = b / "plain"  # a workspace that is not a git repository (git grep --no-index)
    plain.mkdir()
    (plain / "a.txt").write_text("word\n")
    return b


@pytest.fixture(scope="module")
def relace(base):
    return make_toolset("relace", base / "repo")


def _octal(path: str) -> str:
    """``path`` as echo -e escapes, so that no argument spells it."""
    return "".join(f"\\x{b:02x}" for b in path.encode())


def attacks(base) -> list[str]:
    out = base / "outside"
    secret, s2 = out / "secret.txt", out / "dir" / "s2.txt"
    pw = base / "pwned"
    return [
        # arbitrary command execution
        f"git grep --open-files-in-pag='touch {pw}' Login",
        f"git grep --open-files-in-pager='touch {pw}' Login",
        f"git grep -iO'touch {pw}' Login",
        f"git grep -O'touch {pw}' Login",
        f"git grep -nO 'touch {pw}' Login",
        f"git grep --op='touch {pw}' Login",
        f"git grep --no-index -iO'touch {pw}' word",
        "git grep -iO'setsid sleep 913' Login",
        "sort -S 64K --compress-prog=sh cmds.txt",
        "sort -S 64K --compress-program=sh cmds.txt",
        "sort -S64K --compress-p sh cmds.txt",
        # reading any file
        f"echo -ne '{_octal(str(secret))}\\x00' | sort --files0-from=-",
        f"echo -ne '{_octal(str(secret))}\\x00' | sort --files0=-",
        f"echo -ne '{_octal(str(secret))}\\x00' | wc --files0-from=-",
        f"echo -ne '{_octal(str(secret))}\\x00' | wc --files0=-",
        f"echo -ne '{_octal(str(secret))}\\x00' | du --files0-from=-",
        f"echo -ne '{_octal(str(secret))}\\x00' | du --files0=-",
        f"echo -ne '{_octal(str(secret))}\\x00' | find -files0-from -",
        f"echo -ne '{_octal(str(secret))}\\x00' | find . -files0-from -",
        f"echo -e '{_octal(str(secret))}' | file -f -",
        f"echo -e '{_octal(str(secret))}' | file --files-from -",
        f"echo -e '{_octal(str(secret))}' | file --files-f=-",
        f"file -zm{secret} README.md",
        f"file -m{secret} README.md",
        f"file -m {secret} README.md",
        f"file --magic-f={secret} README.md",
        "grep --der -n TOPSECRET .",
        "grep --dereference -n TOPSECRET .",
        "grep --dereference-recursive TOPSECRET .",
        "grep -rR TOPSECRET .",
        f"grep -cif{secret} README.md",
        f"grep -cif {secret} README.md",
        f"grep -cf{s2} README.md",
        f"grep --fil={secret} README.md",
        f"grep --file {secret} README.md",
        "grep -f link_out_file README.md",
        f"grep -e x -f{secret} README.md",
        f"rg -f{secret} README.md",
        f"rg --file={secret} README.md",
        "rg --follow TOPSECRET",
        "ls --deref link_out_dir",
        "du --deref -a link_out_dir",
        "du -L -a .",
        "stat --deref link_out_file",
        f"cat {secret}",
        f"cat -- {secret}",
        f"head -n1 -- {s2}",
        f"sed -n p {secret}",
        f"sed -n p -- {secret}",
        f"git log --no-index -p -- {secret}",
        f"git diff --no-index {secret} README.md",
        f"git diff --no-i {secret} README.md",
        f"git blame --contents {secret} README.md",
        f"git blame --cont={secret} README.md",
        # writing files
        f"sort --o={pw} README.md",
        f"sort --ou={pw} README.md",
        f"sort --output={pw} README.md",
        f"sort -o{pw} README.md",
        f"sort -uo{pw} README.md",
        f"sort -ro {pw} README.md",
        "sort --outp=pwned.txt README.md",
        "sort --o=pwned.txt README.md",
        f"sort -T {base} --o=pwned.txt README.md",
        "uniq -- README.md -pwned.txt",
        "uniq README.md -- -pwned.txt",
        "uniq -c README.md pwned.txt",
        f"uniq README.md {pw}",
        "tree --fromf README.md",
        "tree -o pwned.txt",
        "sed --in-pl s/Demo/x/ README.md",
        "sed -ni s/Demo/x/ README.md",
        "sed -n -i.bak s/Demo/x/ README.md",
        "sed --in-place=.bak s/Demo/x/ README.md",
        "git diff --out=pwned.txt HEAD",
        "git log -p --outp=pwned.txt",
        f"git log -p --output={pw}",
        "file -C -m README.md",
        "file --comp -m README.md",
        "find . -fprint0 pwned.txt",
        "find . -fprintf pwned.txt %p",
        # executing through options of allowed commands
        "rg --pr=touch Login",
        "rg --pre touch Login",
        "rg -z Login",
        "rg --search-zip Login",
        "find . -exec touch pwned.txt ;",
        "find . -okdir touch pwned.txt ;",
        "sed -n 1e\\ touch\\ pwned.txt README.md",
        "tail --foll README.md",
        "tail -fn1 README.md",
    ]


def test_every_attack_is_refused_and_harmless(base, relace):
    before = snapshot(base)
    failures = []
    for command in attacks(base):
        out, err = relace.call("bash", {"command": command})
        if not err or not out.startswith("Error: ") or SECRET in out:
            failures.append((command, out[:300]))
    assert not failures, "\n".join(f"{c!r} -> {o!r}" for c, o in failures)
    assert snapshot(base) == before, "the file tree changed"
    assert not (base / "pwned").exists() and not (base / "pwned-by-sort").exists()
    time.sleep(0.2)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 913" not in ps


@pytest.mark.parametrize(
    "command",
    [
        "git grep -iO'touch {pw}' word",
        "git grep --no-index --open-files-in-pag='touch {pw}' word",
    ],
)
def test_git_grep_pager_outside_a_repository(base, command):
    ts = make_toolset("relace", base / "plain")
    before = snapshot(base)
    out, err = ts.call("bash", {"command": command.format(pw=base / "pwned")})
    assert err and "not allowed" in out, out
    assert snapshot(base) == before


@pytest.mark.parametrize(
    "command, reason",
    [
        ("sort --outp=x README.md", "sort --output is not allowed (it writes files)"),
        ("sort --o=/tmp/x README.md", "sort --output is not allowed (it writes files)"),
        ("git grep --open-files-in-pag=x y", "git grep --open-files-in-pager is not allowed (it runs another program)"),
        ("git grep -iO'x' y", "git grep -O is not allowed (it runs another program)"),
        ("file -zm/x README.md", "file -z is not allowed (it runs another program)"),
        ("grep --der -n x .", "grep --dereference-recursive is not allowed (it follows symlinks"),
        ("sort --files0-from=- ", "sort --files0-from is not allowed (it reads file names"),
        ("find -files0-from -", "find -files0-from is not allowed (it reads file names"),
        ("grep -cif/etc/passwd README.md", "outside the workspace"),
        ("uniq -- README.md -OUT", "OUTPUT file operand is not allowed"),
        ("grep --co x README.md", "grep --co is ambiguous (--color, --colour, --context, --count)"),
        ("sort -S 64K --compress-prog=sh x", "sort --compress-program is not allowed (it runs another program)"),
        ("grep -f - README.md", "may not read standard input"),
        ("cat /nonexistent/abs", "outside the workspace"),
    ],
)
def test_refusals_name_the_option_as_the_program_reads_it(relace, command, reason):
    out, err = relace.call("bash", {"command": command})
    assert err and reason in out, out


def test_abbreviations_and_clusters_still_work_for_allowed_options(relace):
    def ok(command):
        out, err = relace.call("bash", {"command": command})
        assert not err, (command, out)
        return out

    assert ok("grep --line-n --ignore-c login README.md") == "3:A demo repository for login checks.\n"
    assert ok("grep -inm1 LOGIN README.md") == "3:A demo repository for login checks.\n"
    assert ok("grep -ce login README.md").strip() == "1"
    assert ok("head -n2 README.md") == ok("head --lin=2 README.md") == ok("head -2 README.md") == "# Demo\n\n"
    assert ok("sort -rn src/long.txt | head -1") == ok("sort --rev --numeric src/long.txt | head -1")
    assert ok("cut -d' ' -f2 src/long.txt | tail -n1") == "300\n"
    assert ok("git log --one -1").endswith("initial\n")
    assert ok("git log --oneline -n1 -- README.md").endswith("initial\n")
    assert ok("wc -lc README.md") == ok("wc --li --by README.md")
    assert ok("sed -ne 1p README.md") == "# Demo\n"
    assert ok("uniq -c README.md").strip().startswith("1 # Demo")
    assert ok("ls -- src") == "long.txt\npkg\n"
    assert ok("grep -- -x README.md 2>/dev/null || echo none") == "none\n"  # a pattern after --


def test_options_of_a_cluster_after_the_first_letter_are_checked(relace):
    for command in [
        "ls -aL link_out_dir",
        "du -aL .",
        "grep -nR TOPSECRET .",
        "rg -nL TOPSECRET",
        "sort -ruo x README.md",
    ]:
        out, err = relace.call("bash", {"command": command})
        assert err and "not allowed" in out and SECRET not in out, (command, out)


def test_not_yet_existing_absolute_paths_are_refused(base, relace):
    for p in [base / "newfile", "/tmp/fasbench-new-file-x", base / "outside" / "new"]:
        for command in [f"cat {p}", f"grep -f {p} README.md", f"ls {p}", f"find {p}"]:
            out, err = relace.call("bash", {"command": command})
            assert err and "outside the workspace" in out, (command, out)
    assert not os.path.exists("/tmp/fasbench-new-file-x")
