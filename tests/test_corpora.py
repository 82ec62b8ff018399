"""One helper that gives many tasks their corpora (fasbench/data/corpora.py): real git worktrees of
a repository made in the test; a task whose corpus cannot be built is skipped with its reason,
recorded once in the skipped file however often it is retried, and dropped from it once it works;
a limit stops at the first N usable tasks; the shipped manifest skips known failures offline."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
from git_repo import three_fixes

from fasbench.data import load_tasks, offline_manifest
from fasbench.data.corpora import with_corpora
from fasbench.data.corpus import CorpusError, pick_for
from fasbench.data.gitmine import mine
from fasbench.records import iter_jsonl


@pytest.fixture()
def tasks(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    r = three_fixes(tmp_path / "proj")
    ts, _ = mine(r, name="me/proj")
    for t in ts:
        t.meta["clone_url"] = f"file://{r}"
    broken = copy.deepcopy(ts[0])
    broken.id, broken.repo = "broken", "me/gone"  # its own clone, from a URL that does not exist
    broken.meta["clone_url"] = f"file://{tmp_path}/gone"
    return [broken, *ts], r, tmp_path


def test_failing_task_skipped_with_reason_and_resume(tasks):
    ts, repo, tmp = tasks
    skipped = tmp / "run" / "skipped.jsonl"
    got = with_corpora(ts, mode="online", skipped=skipped, progress=False)
    assert [t.id for t in got.tasks] == [t.id for t in ts[1:]]  # input order, the broken one left out
    assert all(Path(t.root).is_dir() for t in got.tasks)
    assert [(r["task_id"], r["reason"]) for r in got.skipped] == [("broken", "clone-failed")]
    assert "git clone" in got.skipped[0]["detail"] and got.reasons() == {"clone-failed": 1}
    assert [r["task_id"] for r in iter_jsonl(skipped)] == ["broken"]
    # rerun: same corpora (cached worktrees), the failure recorded once
    again = with_corpora(ts, mode="online", skipped=skipped, progress=False)
    assert [t.root for t in again.tasks] == [t.root for t in got.tasks]
    assert [r["task_id"] for r in iter_jsonl(skipped)] == ["broken"]
    # tasks that already have a corpus pass as they are
    assert with_corpora(got.tasks, mode="online", progress=False).tasks == got.tasks
    # the failure goes away (the clone URL now exists): the skipped file no longer lists it
    subprocess.run(["git", "clone", "-q", str(repo), str(tmp / "gone")], check=True)
    fixed = with_corpora(ts, mode="online", skipped=skipped, progress=False)
    assert len(fixed.tasks) == 4 and not fixed.skipped
    assert list(iter_jsonl(skipped)) == []


def test_limit_and_strict(tasks):
    ts, _, _ = tasks
    got = with_corpora(ts, mode="online", limit=2, progress=False)
    assert [t.id for t in got.tasks] == [t.id for t in ts[1:3]] and len(got.skipped) == 1
    with pytest.raises(CorpusError, match="task broken"):
        with_corpora(ts, mode="online", strict=True, progress=False)
    with pytest.raises(ValueError, match="unknown corpus mode"):
        with_corpora(ts, mode="sideways", progress=False)


def test_shipped_manifest_skips_known_failures_without_download(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    man = offline_manifest()
    bad = [
        t
        for t in load_tasks("swebench-lite")
        if not man.get(t.id, {"located": True})["located"] and pick_for(t) is not None
    ][:3]
    assert bad, "the shipped manifest lists tasks that cannot be located offline"
    got = with_corpora(bad, progress=False)
    assert not got.tasks and [r["reason"] for r in got.skipped] == [man[t.id]["reason"] for t in bad]
    assert not (tmp_path / "cache" / "corpora" / "downloads").exists()  # nothing fetched


def test_online_corpus_has_its_own_git_dir_and_the_tools_run_git_there(tasks):
    """An online corpus is a checkout with a .git directory of its own, not a `git worktree` (whose
    .git file the tool sandbox refuses to follow): the bash tool's git commands work on it."""
    from fasbench.tools import make_toolset

    ts, _, _ = tasks
    got = with_corpora(ts[1:2], mode="online", progress=False)
    root = Path(got.tasks[0].root)
    assert (root / ".git").is_dir() and not (root / ".git" / "commondir").exists()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    assert head == ts[1].base_commit
    out, error = make_toolset("relace", root).call("bash", {"command": "git log --oneline -1"})
    assert not error and head[:7] in out, out
