"""Attacks on fasbench's git and its record boundary (issue 36 items 1, 2 and their attacks of item 9).

Real git repositories built in tmp dirs; every attack tries to run a command that creates a marker
file, or to reach a folder outside the cache, through fasbench's public entry points (``data
import``, ``fasbench eval``, ``data mine-git`` / ``git:PATH`` task sets, the corpus materialiser).
Each test failed on main at 23d8001 (the command ran, the folder was used or deleted, or the batch
stopped on one record)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from git_repo import three_fixes
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.data.corpus import try_materialize
from fasbench.data.gitmine import mine
from fasbench.data.importers import import_gold
from fasbench.data.tasksets import load_task_set
from fasbench.records import Gold, Task, read_tasks


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    r = three_fixes(tmp_path / "src")
    return r, git(r, "rev-parse", "HEAD~1"), git(r, "diff", "HEAD~1", "HEAD")


def pro_record(iid, repo, base, patch, **kw) -> dict:
    return {"instance_id": iid, "repo": repo, "base_commit": base, "patch": patch, "problem_statement": "fix it", **kw}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


HOSTILE_URLS = (
    "--upload-pack=touch {m};",
    "-u touch {m};",
    "ext::sh -c touch% {m}",
    "evil.example:{m}",
    "file:///../../{m}",
    "https://github.com/o/r\n--upload-pack=touch {m}",
)


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_hostile_clone_url_through_import_runs_nothing(repo, tmp_path, monkeypatch, url):
    """An imported record's clone_url of ``--upload-pack=CMD`` (with a repository name holding ``:``,
    which made git take the clone folder for a remote), a transport or an ssh spec: the record is
    refused at the boundary with one line naming clone_url; the good record beside it is imported
    and checked out; nothing runs."""
    r, base, patch = repo
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "PWNED"
    ssh = tmp_path / "ssh.sh"  # a user's own GIT_SSH_COMMAND: an ssh spec would start it
    ssh.write_text(f"#!/bin/sh\ntouch {marker}\n")
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    f = write_jsonl(
        tmp_path / "pro.jsonl",
        [
            pro_record("instance_o__r-bad", "o/r:x", base, patch, clone_url=url.format(m=marker)),
            pro_record("instance_o__r-good", "o/r", base, patch, clone_url=f"file://{r}"),
        ],
    )
    tasks, dropped = import_gold("swebench-pro", f)
    for t in tasks:
        for _ in range(2):
            try_materialize(t, mode="online")
    assert not marker.exists(), f"a command ran from clone_url {url!r}"
    assert [t.id for t in tasks] == ["instance_o__r-good"]
    assert [d["id"] for d in dropped] == ["instance_o__r-bad"] and dropped[0]["reason"] == "bad-field"
    assert "\n" not in dropped[0]["detail"] and ("clone_url" in dropped[0]["detail"] or "repo" in dropped[0]["detail"])
    good, why = try_materialize(tasks[0], mode="online")
    assert why is None and git(good.root, "rev-parse", "HEAD") == base


def test_hostile_clone_url_through_eval_runs_nothing(repo, tmp_path, monkeypatch):
    """The same attack as a Task JSONL given to ``fasbench eval --corpus online``: the hostile task is
    skipped with one line, the good one runs, nothing runs from the URL."""
    r, base, patch = repo
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "PWNED"
    gold = Gold({"mod.py": [[7, 13]]})
    bad = Task("evil", "where is line 10", "o/r:x", gold, base, meta={"clone_url": f"--upload-pack=touch {marker};"})
    good = Task("good", "where is line 10", "o/r", gold, base, meta={"clone_url": f"file://{r}"})
    f = write_jsonl(tmp_path / "tasks.jsonl", [bad.to_dict(), good.to_dict()])
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(f),
            "--policy",
            "heuristic:turns=1",
            "--corpus",
            "online",
            "--out",
            str(tmp_path / "run"),
            "--workers",
            "1",
            "--backend",
            "serial",
        ],
    )
    assert not marker.exists(), "clone_url ran a command through fasbench eval"
    assert "record 1 skipped" in res.output and "Traceback" not in res.output, res.output
    traces = (tmp_path / "run" / "traces.jsonl").read_text().splitlines()
    assert [json.loads(t)["task_id"] for t in traces] == ["good"], res.output


@pytest.mark.parametrize("base", ["/../../../..", "../../../../..", "--orphan=x", "HEAD", "abc", "0" * 41])
def test_base_commit_is_a_commit_never_a_path(repo, tmp_path, monkeypatch, base):
    """A base_commit of ``/../../../..`` made the cache's parent (here a project folder holding the
    cache) a task's corpus, or deleted it on the next run: it is refused before any path or git sees
    it; the project folder is untouched."""
    r, _, _ = repo
    project = tmp_path / "project"
    (project / ".cache").mkdir(parents=True)
    (project / "precious.txt").write_text("keep me\n")
    monkeypatch.setenv("FASBENCH_CACHE", str(project / ".cache"))
    t = Task("t1", "q", "o/r", Gold({"mod.py": [[1, 2]]}), base, meta={"clone_url": f"file://{r}"})
    for _ in range(3):
        got, why = try_materialize(t, mode="online")
        assert got is None and why["reason"] == "bad-task" and "base_commit" in why["detail"]
    assert (project / "precious.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in project.iterdir()) == [".cache", "precious.txt"]
    with pytest.raises(ValueError, match="base_commit"):
        Task.from_dict(t.to_dict())


def _hostile_repository(tmp_path: Path, marker: Path) -> Path:
    """A repository whose own config and attributes name programs: a textconv and an external diff
    for every .py file, an fsmonitor hook, a pager."""
    r = three_fixes(tmp_path / "hostile")
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1" 2>/dev/null\n')
    script.chmod(0o755)
    (r / ".gitattributes").write_text("*.py diff=evil filter=evil\n")
    git(r, "add", ".gitattributes")
    git(r, "commit", "-qm", "attributes")
    (r / "mod.py").write_text((r / "mod.py").read_text().replace("line 5\n", "line #5\n"))
    git(r, "commit", "-qam", "Fix line 5")
    for k, v in (
        ("diff.evil.textconv", str(script)),
        ("diff.evil.command", str(script)),
        ("diff.external", str(script)),
        ("filter.evil.clean", str(script)),
        ("filter.evil.smudge", str(script)),
        ("core.fsmonitor", str(script)),
        ("core.pager", str(script)),
    ):
        git(r, "config", k, v)
    return r


def test_mine_git_runs_no_program_of_the_repository(tmp_path, monkeypatch):
    """``data mine-git`` and ``eval --tasks git:PATH`` on a repository whose config names a textconv (and
    diff, filter, fsmonitor and pager programs): the tasks are mined, the programs never run; its
    tasks' corpora check out without running them either."""
    marker = tmp_path / "PWNED"
    r = _hostile_repository(tmp_path, marker)
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    tasks, _ = mine(r)
    assert not marker.exists(), "mining ran the repository's own program"
    assert any(t.query == "Fix line 5" and t.gold.edited == {"mod.py": [[2, 8]]} for t in tasks)
    assert len(load_task_set(f"git:{r}")) == len(tasks)
    res = CliRunner().invoke(app, ["data", "mine-git", str(r), "--out", str(tmp_path / "m.jsonl")])
    assert res.exit_code == 0, res.output
    for t in read_tasks(tmp_path / "m.jsonl")[:2]:
        got, why = try_materialize(t, mode="online")
        assert why is None, why
    assert not marker.exists(), "mine-git, git:PATH or the checkout ran the repository's own program"


def test_mined_repository_given_by_a_gitfile_is_refused(tmp_path):
    """A ``.git`` file pointing elsewhere (another repository) is not followed: one line, no task."""
    other = three_fixes(tmp_path / "other")
    r = tmp_path / "pointer"
    r.mkdir()
    (r / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with pytest.raises(ValueError, match="not followed|file or a symlink"):
        mine(r)


# ---- the record boundary: fields of the wrong type stop nothing


def test_wrongly_typed_fields_are_one_line_skips(tmp_path, repo):
    """An integer ``base_commit``, a SWE-Explore optional map given as a list, an integer Loc-Bench
    entity, a region of strings or 10^10: each record is one skip line; the good records go on."""
    _, base, _ = repo
    region = {"path": "mod.py", "start": 1, "end": 5}
    gt = {"read_core_regions": [region], "modified_core_files": ["mod.py"]}
    explore = [
        {"instance_id": "o__r-1", "problem_statement": "q", "repo": "o/r", "base_commit": 1234567, "ground_truth": gt},
        {
            "instance_id": "o__r-2",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": base,
            "ground_truth": {**gt, "read_optional_regions_map": [region]},
        },
        {
            "instance_id": "o__r-3",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": base,
            "ground_truth": {**gt, "read_core_regions": [{"path": "mod.py", "start": "1", "end": 10**10}]},
        },
        {"instance_id": "o__r-4", "problem_statement": "q", "repo": "o/r", "base_commit": base, "ground_truth": gt},
        ["not", "an", "object"],
    ]
    tasks, dropped = import_gold("swe-explore", write_jsonl(tmp_path / "e.jsonl", explore))
    assert [t.id for t in tasks] == ["o__r-4"]
    assert {d["id"] for d in dropped} == {"o__r-1", "o__r-2", "o__r-3", "record 5"}
    assert all("\n" not in json.dumps(d) for d in dropped)
    loc = [
        {"instance_id": "o__r-5", "problem_statement": "q", "repo": "o/r", "base_commit": base, "edit_functions": [7]},
        {
            "instance_id": "o__r-6",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": base,
            "edit_functions": ["mod.py:f"],
            "file_changes": "mod.py",
        },
        {
            "instance_id": "o__r-7",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": base,
            "edit_functions": ["mod.py:f"],
        },
    ]
    tasks, dropped = import_gold("locbench", write_jsonl(tmp_path / "l.jsonl", loc))
    assert [t.id for t in tasks] == ["o__r-7"] and {d["id"] for d in dropped} == {"o__r-5", "o__r-6"}
    cb = [
        {
            "original_inst_id": "o__r-8",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": 12345678,
            "gold_context": [{"file": "mod.py", "start_line": 1, "end_line": 2}],
        },
        {
            "original_inst_id": "o__r-9",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": base,
            "repo_url": "-u touch x",
            "gold_context": [{"file": "mod.py", "start_line": 1, "end_line": 2}],
        },
        {
            "original_inst_id": "o__r-10",
            "problem_statement": "q",
            "repo": "o/r",
            "base_commit": base,
            "gold_context": [{"file": "mod.py", "start_line": 1, "end_line": 2}],
        },
    ]
    tasks, dropped = import_gold("contextbench", write_jsonl(tmp_path / "c.jsonl", cb))
    assert [t.id for t in tasks] == ["o__r-10"] and {d["id"] for d in dropped} == {"o__r-8", "o__r-9"}


def test_tasks_file_bad_record_is_skipped_not_fatal(tmp_path, capsys):
    """A Task JSONL with an integer base_commit, a ``../`` id and a list-typed gold beside a good task:
    the good task loads, each bad record is one line on standard error."""
    good = Task("ok", "q", "o/r", Gold({"a.py": [[1, 2]]}), "a" * 40).to_dict()
    rows = [
        {**good, "id": "b1", "base_commit": 1234567},
        {**good, "id": "../../etc"},
        {**good, "id": "b3", "gold": {"edited": {}, "variants": ["x"]}},
        {**good, "id": "b4", "repo": "-o/r"},
        good,
    ]
    f = write_jsonl(tmp_path / "t.jsonl", rows)
    assert [t.id for t in load_task_set(str(f))] == ["ok"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all("skipped" in x for x in err), err
    assert os.listdir(tmp_path) == ["t.jsonl"]


def test_online_checkout_fetches_a_commit_newer_than_the_clone(repo, tmp_path, monkeypatch):
    """A task at a commit the cached clone does not hold yet: the wall's fetch (https/file transports of
    the URL the clone checked) brings it; the fetch is not refused by the wall's no-transport default."""
    r, base, _ = repo
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    first = Task("t1", "q", "o/r", Gold({"mod.py": [[1, 2]]}), base, meta={"clone_url": f"file://{r}"})
    assert try_materialize(first, mode="online")[1] is None
    (r / "mod.py").write_text((r / "mod.py").read_text().replace("line 1\n", "line #1\n"))
    git(r, "commit", "-qam", "later")
    later = Task(
        "t2", "q", "o/r", Gold({"mod.py": [[1, 2]]}), git(r, "rev-parse", "HEAD"), meta={"clone_url": f"file://{r}"}
    )
    got, why = try_materialize(later, mode="online")
    assert why is None and (Path(got.root) / "mod.py").read_text().startswith("line #1")


def test_the_wall_refuses_options_as_operands_and_ignores_the_callers_git_environment(repo, tmp_path, monkeypatch):
    """Operands that start with '-' are refused (even after --end-of-options); a caller's GIT_DIR,
    GIT_CONFIG_* or a secret never reach git: mining ``r`` with GIT_DIR pointing at another repository
    mines ``r``."""
    r, base, _ = repo
    other = three_fixes(tmp_path / "other")
    (other / "mod.py").write_text("changed\n")
    git(other, "commit", "-qam", "Only in the other repository")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.pager")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"touch {tmp_path / 'PWNED'}")
    monkeypatch.setenv("FASBENCH_TEST_SECRET", "s3cret")
    tasks, _ = mine(r)
    assert {t.query for t in tasks} == {"Fix line 3", "Fix line 10", "Fix line 17"}
    from fasbench.base import gitsafe  # (after the attack: the module is new)

    env = gitsafe.environ(r / ".git", r)
    assert "s3cret" not in json.dumps(env) and env["GIT_DIR"] == str(r / ".git")
    for bad in ("--output=/tmp/x", "-p", ""):
        with pytest.raises(gitsafe.GitError, match="operand"):
            gitsafe.run("log", revs=(bad,), git_dir=r / ".git", work_tree=r)
    with pytest.raises(gitsafe.GitError, match="only on a repository"):
        gitsafe.run("log")
    assert not (tmp_path / "PWNED").exists()


def test_a_borrowing_repository_lends_nothing_to_the_corpus(tmp_path, monkeypatch):
    """A mined repository that borrows its objects (``objects/info/alternates``, ``clone --shared``):
    the cached clone and the checkout copy the objects and borrow nothing, so the tools' git (which
    refuses a borrowing ``.git``) runs in the corpus."""
    from fasbench.tools.base import Workspace
    from fasbench.tools.bash.gitwall import refusal

    a = three_fixes(tmp_path / "a")
    subprocess.run(["git", "clone", "-q", "--shared", str(a), str(tmp_path / "b")], check=True, capture_output=True)
    b = tmp_path / "b"
    assert (b / ".git" / "objects" / "info" / "alternates").exists()
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    t = mine(b)[0][0]
    got, why = try_materialize(t, mode="online")
    assert why is None, why
    clones = list((tmp_path / "cache" / "corpora" / "git").iterdir())
    assert [c for c in clones if (c / ".git" / "objects" / "info" / "alternates").exists()] == []
    assert not (Path(got.root) / ".git" / "objects" / "info" / "alternates").exists()
    assert refusal(Workspace(Path(got.root))) is None
