"""mine-git on a real repository made in the test, and the online corpus path (clone + worktree)."""

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.data.corpus import CorpusError, materialize
from fasbench.data.gitmine import GitRepoError, mine
from fasbench.records import read_tasks


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    r = tmp_path / "proj"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "T")
    (r / "pkg").mkdir()
    (r / "pkg/mod.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (r / "README.md").write_text("hello\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "initial")
    # a code commit: change line 10 of mod.py
    text = (r / "pkg/mod.py").read_text().replace("line 10\n", "line ten\n")
    (r / "pkg/mod.py").write_text(text)
    git(r, "commit", "-qam", "Fix line ten\n\nThe tenth line was wrong.")
    base = git(r, "rev-parse", "HEAD~1")
    # a docs-only commit
    (r / "README.md").write_text("hello world\n")
    git(r, "commit", "-qam", "docs")
    # a branch and a merge
    git(r, "checkout", "-q", "-b", "side")
    (r / "pkg/other.py").write_text("x = 1\n")
    git(r, "add", ".")
    git(r, "commit", "-qm", "add other")
    git(r, "checkout", "-q", "main")
    (r / "pkg/mod.py").write_text("line 0\n" + (r / "pkg/mod.py").read_text())
    git(r, "commit", "-qam", "prepend a line")
    git(r, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    return r, base


def test_mine_git(repo):
    r, base = repo
    tasks, skipped = mine(r)
    reasons = {s["reason"] for s in skipped}
    assert reasons == {"merge", "non-code", "root-commit"}
    by_q = {t.query.splitlines()[0]: t for t in tasks}
    assert set(by_q) == {"Fix line ten", "prepend a line", "add other"}
    fix = by_q["Fix line ten"]
    assert fix.base_commit == base and fix.query.endswith("The tenth line was wrong.")
    # @@ -7,7 +7,7 @@: context 7-9, line 10 changed, context 11-13
    assert fix.gold.edited == {"pkg/mod.py": [[7, 13]]}
    assert fix.gold.variants["changed"] == {"pkg/mod.py": [[10, 10]]}
    assert by_q["prepend a line"].gold.variants["changed"] == {"pkg/mod.py": [[1, 1]]}
    assert by_q["add other"].gold.edited == {"pkg/other.py": []}  # created file: no line gold


def test_mine_git_limits_and_errors(repo, tmp_path):
    r, _ = repo
    tasks, skipped = mine(r, max_lines=1)
    assert "huge" in {s["reason"] for s in skipped}
    with pytest.raises(GitRepoError):
        mine(tmp_path)  # not a repository


def test_online_checkout_at_commit(repo, tmp_path, monkeypatch):
    r, base = repo
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    tasks, _ = mine(r)
    fix = next(t for t in tasks if t.query.startswith("Fix line ten"))
    fix.meta["clone_url"] = f"file://{r}"
    t = materialize(fix, mode="online")
    root = Path(t.root)
    assert git(root, "rev-parse", "HEAD") == base
    assert (root / "pkg/mod.py").read_text().splitlines()[9] == "line 10"  # the old text, before the fix
    assert t.gold.edited == fix.gold.edited and t.meta["corpus"]["status"] == "exact"
    # the clone URL template is configurable; a bad one is a clear drop reason
    bad = fix.__class__.from_dict(fix.to_dict())
    bad.meta.pop("clone_url")
    bad.repo = "nobody/nothing"
    monkeypatch.setenv("FASBENCH_GIT_URL", f"file://{tmp_path}/missing/{{repo}}")
    with pytest.raises(CorpusError) as e:
        materialize(bad, mode="online")
    assert e.value.reason == "clone-failed"


def test_cli_mine_git_and_corpus(repo, tmp_path, monkeypatch):
    r, base = repo
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "t.jsonl"
    res = CliRunner().invoke(app, ["data", "mine-git", str(r), "--out", str(out)])
    assert res.exit_code == 0, res.output
    ts = read_tasks(out)
    assert len(ts) == 3 and all(t.split in ("train", "dev", "test") for t in ts)
    fix = next(t for t in ts if t.query.startswith("Fix line ten"))
    res = CliRunner().invoke(app, ["data", "corpus", "--tasks", str(out), "--ids", fix.id, "--mode", "online"])
    assert res.exit_code == 0, res.output
    assert f"{fix.id}\tlocated\texact\t" in res.output
    res = CliRunner().invoke(app, ["data", "corpus", "--tasks", str(out), "--ids", "nope"])
    assert res.exit_code == 2 and "nope" in res.output
