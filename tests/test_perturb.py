"""Perturbed corpora (fasbench.data.perturb, perturb_gold; `fasbench data perturb`, `eval --perturb`).

On a real package (the toy corpus: the installed requests' source and a test file), through the
real CLI: renamed modules, packages and private names with imports rewritten by rope, reordered
functions; every relocated gold line holds the same code (read back through the renames), the
touched modules still import and the tests still collect, the task text names the new paths, and
the same spec rebuilds the same tree from its record. A cached SWE-bench corpus is used too where
this machine has one."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import read_tasks, write_tasks

SPEC = "perturb:seed=3,modules=2,dirs=1,private=4,reorder=3"


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    root = make_corpus(tmp_path / "toy")
    tasks = toy_tasks(root)
    path = tmp_path / "tasks.jsonl"
    write_tasks(path, tasks)
    return tmp_path, path, tasks


def _perturb(tasks_file: Path, out: Path, spec: str = SPEC, check: bool = True):
    args = ["data", "perturb", "--tasks", str(tasks_file), "--spec", spec, "--out", str(out)] + (
        ["--check"] if check else []
    )
    return CliRunner().invoke(app, args)


@pytest.mark.slow
def test_perturb_command_relocates_gold_exactly_and_keeps_imports(toy):
    tmp, _, tasks = toy
    tasks = tasks[:3]
    write_tasks(tmp / "three.jsonl", tasks)
    r = _perturb(tmp / "three.jsonl", tmp / "perturbed.jsonl")
    assert r.exit_code == 0, r.output
    got = {t.id: t for t in read_tasks(tmp / "perturbed.jsonl")}
    assert set(got) == {t.id for t in tasks}
    from fasbench.data.perturb_gold import gold_line_mismatches, verify_corpus

    moved = 0
    for t in tasks:
        p = got[t.id]
        rec = json.loads(Path(p.meta["perturb"]["record"]).read_text())
        assert rec["seed"] == 3 and rec["spec"] == SPEC
        kinds = {x["kind"] for x in rec["renames"]}
        assert {"module", "private"} <= kinds, rec["renames"]  # the toy's requests has no subpackage
        assert rec["reorders"], "no function was reordered"
        assert gold_line_mismatches(t, p) == []
        for path in t.gold.edited:  # the gold function's def line is still its def line
            new_path = rec["moves"].get(path, path)
            assert new_path in p.gold.edited and (Path(p.root) / new_path).is_file()
            moved += new_path != path
            first = min(s for s, _ in p.gold.edited[new_path])
            assert "def " in (Path(p.root) / new_path).read_text().split("\n")[first - 1]
        for r_ in rec["renames"]:  # the text names no renamed path, module or private name any more
            if r_["kind"] == "private":
                assert r_["old"] not in p.query.replace(r_["new"], "")
            else:
                assert r_["old"].replace(".", "/") + ".py" not in p.query
        v = verify_corpus(t.root, p.root, rec)
        assert v["ok"], v
        assert v["import_original"] > 0 and v["import_perturbed"] == v["import_original"], v
    assert moved >= 1  # a gold file moved (gold modules are renamed first)


@pytest.mark.slow
def test_task_text_follows_a_renamed_gold_path(toy):
    tmp, tasks_file, tasks = toy
    t = tasks[2]  # the redirect loop: its traceback names requests/sessions.py
    assert "requests/sessions.py" in t.query
    write_tasks(tmp / "one.jsonl", [t])
    r = _perturb(
        tmp / "one.jsonl", tmp / "p.jsonl", spec="perturb:seed=0,modules=1,dirs=0,private=0,reorder=0", check=False
    )
    assert r.exit_code == 0, r.output
    p = read_tasks(tmp / "p.jsonl")[0]
    rec = json.loads(Path(p.meta["perturb"]["record"]).read_text())
    assert rec["moves"] == {"requests/sessions.py": rec["moves"]["requests/sessions.py"]}
    new = rec["moves"]["requests/sessions.py"]
    assert "requests/sessions.py" not in p.query and new in p.query
    assert list(p.gold.edited) == [new] and p.gold.edited[new] == t.gold.edited["requests/sessions.py"]
    text = (Path(p.root) / "tests" / "test_sessions.py").read_text()
    assert f"from requests.{Path(new).stem} import Session" in text  # rope rewrote the import
    from fasbench.data.perturb_gold import verify_corpus

    v = verify_corpus(t.root, p.root, rec)  # the toy's own test file still collects, the modules still import
    assert v["ok"] and v["test_files"] == 1 and v["tests_original"] == v["tests_perturbed"] == 1, v
    assert v["import_original"] == v["import_perturbed"] > 0, v


@pytest.mark.slow
def test_same_spec_rebuilds_the_same_tree_and_source_is_untouched(toy, tmp_path, monkeypatch):
    tmp, _, tasks = toy
    tasks = tasks[:1]
    tasks_file = tmp / "one.jsonl"
    write_tasks(tasks_file, tasks)
    before = {p: p.read_bytes() for p in Path(tasks[0].root).rglob("*.py")}
    assert _perturb(tasks_file, tmp / "a.jsonl", check=False).exit_code == 0
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache2"))  # a fresh cache: built again from the spec
    assert _perturb(tasks_file, tmp / "b.jsonl", check=False).exit_code == 0
    a, b = read_tasks(tmp / "a.jsonl"), read_tasks(tmp / "b.jsonl")
    for x, y in zip(a, b):
        assert x.root != y.root and x.gold.to_dict() == y.gold.to_dict() and x.query == y.query
        ra = json.loads(Path(x.meta["perturb"]["record"]).read_text())
        rb = json.loads(Path(y.meta["perturb"]["record"]).read_text())
        assert ra == rb
        cmp = filecmp.dircmp(x.root, y.root)
        assert not cmp.left_only and not cmp.right_only and not cmp.diff_files
    assert {p: p.read_bytes() for p in Path(tasks[0].root).rglob("*.py")} == before  # hard links never written
    c = _perturb(tasks_file, tmp / "c.jsonl", spec="perturb:seed=4,modules=2,dirs=1,private=4,reorder=3", check=False)
    other = json.loads(Path(read_tasks(tmp / "c.jsonl")[0].meta["perturb"]["record"]).read_text())
    assert c.exit_code == 0 and other != ra  # another seed, another perturbation


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("shuffle:seed=1", "must start with 'perturb'"),
        ("perturb:seed=x", "not a valid int"),
        ("perturb:colour=2", "colour"),
        ("perturb:modules=-1", ">= 0"),
    ],
)
def test_bad_spec_is_one_line(toy, spec, needle):
    tmp, tasks_file, _ = toy
    r = _perturb(tasks_file, tmp / "x.jsonl", spec=spec, check=False)
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(
        app, ["eval", "--tasks", str(tasks_file), "--policy", "bm25", "--perturb", spec, "--out", str(tmp / "run")]
    )
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output


@pytest.mark.slow
def test_eval_perturb_runs_on_the_perturbed_corpus(toy):
    tmp, tasks_file, tasks = toy
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(tasks_file),
            "--policy",
            "bm25",
            "--perturb",
            SPEC,
            "--limit",
            "2",
            "--workers",
            "1",
            "--out",
            str(tmp / "run"),
        ],
    )
    assert r.exit_code == 0, r.output
    run = json.loads((tmp / "run" / "run.json").read_text())
    assert SPEC in json.dumps(run)  # the run says it ran perturbed
    traces = (tmp / "run" / "traces.jsonl").read_text()
    from fasbench.data.perturb_gold import perturb_task

    p = perturb_task(tasks[0], SPEC)  # the same perturbation, built once already by the run
    rec = json.loads(Path(p.meta["perturb"]["record"]).read_text())
    new_paths = set(rec["moves"].values())
    assert any(n in traces for n in new_paths), "the episodes saw no renamed path"
    import re

    seen = [o for o in rec["moves"] if re.search(rf"(?<![\w/.]){re.escape(o)}(?!\w)", traces)]
    assert not seen, f"the episodes saw original paths {seen}"


@pytest.mark.slow
def test_package_rename_rewrites_imports_and_tests_still_collect(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "corpus"
    files = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from .mod import area\n",
        "pkg/sub/mod.py": "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n",
        "pkg/user.py": "from pkg.sub.mod import area\nfrom .sub import mod\nimport pkg.sub.mod\n\n\n"
        "def room(w, h):\n    return area(w, h) + mod.perimeter(w, h) + pkg.sub.mod.area(1, 1)\n",
        "tests/test_user.py": "from pkg.user import room\nfrom pkg.sub.mod import perimeter\n\n\n"
        "def test_room():\n    assert room(2, 3) == 17\n\n\ndef test_perimeter():\n"
        "    assert perimeter(1, 1) == 4\n",
    }
    for p, text in files.items():
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text(text)
    from fasbench.data.perturb import perturb_corpus
    from fasbench.data.perturb_gold import verify_corpus

    new, rec = perturb_corpus(root, "perturb:seed=1,modules=1,dirs=1,private=0,reorder=0", ["pkg/sub/mod.py"])
    assert [r["kind"] for r in rec["renames"]] == ["module", "package"], rec["renames"]
    assert rec["moves"]["pkg/sub/mod.py"].startswith("pkg/sub_") and rec["moves"]["pkg/sub/mod.py"].endswith(".py")
    assert not (new / "pkg" / "sub").exists()
    v = verify_corpus(root, new, rec)
    assert v["ok"] and v["import_original"] == v["import_perturbed"] == v["modules"] > 0, v
    assert v["tests_original"] == v["tests_perturbed"] == 2, v
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=new,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout + run.stderr
