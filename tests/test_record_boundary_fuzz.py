"""Property test of the record boundary (issue 36 item 9): generated hostile values thrown at every
field of every importer's records and of Task JSONL records.

For each example one field of a valid record (top level or nested: regions, maps, entities, ids,
repository, commit, clone URL) is replaced by a hostile value (another JSON type, an option, a
transport, a path out, a shell substitution, a huge or negative number, control characters), and
the file is imported beside a good record. Whatever the value: no exception leaves the importer
(a whole-file error is a named one-line error), every record is either a task that passes the
boundary or one skip line, the good record is imported, the online checkout of what was imported
runs nothing (a marker file) and writes nothing outside its cache."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import pytest
from git_repo import three_fixes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fasbench.data.contextbench_tasks as contextbench_mod
import fasbench.data.importers as importers_mod
from fasbench.data import swebench_tasks
from fasbench.data.corpus import try_materialize
from fasbench.records import RecordError, Task, fields, read_tasks

MARK = "/tmp/fasbench-boundary-pwned"
HOSTILE = (
    f"--upload-pack=touch {MARK};", f"-u touch {MARK}", f"ext::sh -c touch% {MARK}", f"localhost:{MARK}",
    "/../../../..", "../../..", "..", ".", "/", "", " ", "-", "--", "a:b", f"$(touch {MARK})", f"`touch {MARK}`",
    "x\ny", "\x1b[31mred", "\0", "o/r/s", "o/..", "HEAD", "HEAD~1", "0" * 40, "g" * 40, "f" * 65,
    f"file:///{MARK}", "https://github.com/o/r.git", "https://-x/--upload-pack=y", "http://example.com/o/r",
    "<script>alert(1)</script>", "x" * 5000, "mod.py", "mod.py:f", ":", "path:",
)  # fmt: skip
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=6,
)
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from([10**10, -1, 0, 2**31 - 1, True, None, 1.5, [], {}, [1, 2], {"a": 1}]),
    st.text(max_size=30),
    JSONISH,
)


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    base = tmp_path_factory.mktemp("boundary")
    r = three_fixes(base / "src")
    run = functools.partial(subprocess.run, capture_output=True, text=True, check=True)
    sha = run(["git", "-C", str(r), "rev-parse", "HEAD~1"]).stdout.strip()
    patch = run(["git", "-C", str(r), "diff", "HEAD~1", "HEAD"]).stdout
    return base, r, sha, patch


def _records(fmt: str, r: Path, sha: str, patch: str) -> tuple[dict, list[tuple]]:
    """A valid record of ``fmt`` and the paths of its fields (keys, list indexes)."""
    common = {"problem_statement": "where is line 10", "repo": "o/r", "base_commit": sha}
    if fmt == "swe-explore":
        rec = {
            "instance_id": "o__r-1",
            **common,
            "clone_url": f"file://{r}",
            "test_patch": patch,
            "ground_truth": {
                "read_core_regions": [{"path": "mod.py", "start": 2, "end": 9}],
                "read_core_files": ["mod.py"],
                "modified_core_files": ["mod.py"],
                "read_optional_regions_map": {"m": [{"path": "mod.py", "start": 1, "end": -1}]},
                "read_optional_files_map": {"m": ["mod.py"]},
                "main_files": ["mod.py"],
            },
            "read_step_info": {"mod.py": [{"start": 1, "end": -1}]},
            "meta": {"gold_kind": "k"},
        }
        paths = [("ground_truth", "read_core_regions", 0, k) for k in ("path", "start", "end")] + [
            ("ground_truth", "read_core_regions", 0),
            ("ground_truth", "read_core_regions"),
            ("ground_truth", "read_optional_regions_map"),
            ("ground_truth", "read_optional_regions_map", "m"),
            ("ground_truth", "read_optional_regions_map", "m", 0, "end"),
            ("ground_truth", "read_optional_files_map"),
            ("ground_truth", "read_optional_files_map", "m"),
            ("ground_truth", "modified_core_files"),
            ("ground_truth", "modified_core_files", 0),
            ("ground_truth", "read_core_files"),
            ("ground_truth", "main_files"),
            ("ground_truth",),
            ("read_step_info",),
            ("read_step_info", "mod.py"),
            ("meta",),
            ("test_patch",),
        ]
    elif fmt == "locbench":
        rec = {
            "instance_id": "o__r-1",
            **common,
            "clone_url": f"file://{r}",
            "edit_functions": ["mod.py:f"],
            "file_changes": [
                {"file": "mod.py", "changes": {"edited_entities": ["mod.py:f"], "edited_modules": ["mod.py:f"]}}
            ],
        }
        paths = [
            ("edit_functions",),
            ("edit_functions", 0),
            ("file_changes",),
            ("file_changes", 0),
            ("file_changes", 0, "file"),
            ("file_changes", 0, "changes"),
            ("file_changes", 0, "changes", "edited_entities"),
            ("file_changes", 0, "changes", "edited_entities", 0),
            ("file_changes", 0, "changes", "edited_modules"),
        ]
    elif fmt == "contextbench":
        rec = {
            "original_inst_id": "o__r-1",
            "instance_id": "cb-1",
            **common,
            "repo_url": f"file://{r}",
            "patch": patch,
            "gold_context": [{"file": "mod.py", "start_line": 2, "end_line": 4, "content": "x"}],
        }
        paths = [
            ("original_inst_id",),
            ("repo_url",),
            ("patch",),
            ("gold_context",),
            ("gold_context", 0),
            *[("gold_context", 0, k) for k in ("file", "start_line", "end_line", "content")],
        ]
    else:  # swebench-pro
        rec = {
            "instance_id": "instance_o__r-1",
            **common,
            "patch": patch,
            "clone_url": f"file://{r}",
            "fail_to_pass": "[]",
            "requirements": "r",
            "repo_language": "python",
        }
        paths = [("patch",), ("fail_to_pass",), ("requirements",), ("repo_language",)]
    keys = [k for k in rec if k not in ("ground_truth", "file_changes", "gold_context", "read_step_info", "meta")]
    return rec, paths + [(k,) for k in keys]


def _set(rec, path: tuple, value):
    d = rec
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


@functools.cache
def _known() -> dict:
    return swebench_tasks()


def _snapshot(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*") if "cache" not in p.relative_to(d).parts}


@pytest.mark.parametrize("fmt", ["swe-explore", "locbench", "contextbench", "swebench-pro"])
def test_hostile_values_in_every_importer_field(src, fmt, monkeypatch, tmp_path_factory):
    base, r, sha, patch = src
    good, paths = _records(fmt, r, sha, patch)
    monkeypatch.setattr(importers_mod, "swebench_tasks", _known)
    monkeypatch.setattr(contextbench_mod, "swebench_tasks", _known)
    work = tmp_path_factory.mktemp(f"fuzz-{fmt}")
    monkeypatch.setenv("FASBENCH_CACHE", str(work / "cache"))
    monkeypatch.setenv("FASBENCH_GIT_URL", f"file://{work}/missing/{{repo}}")  # never the network
    before = _snapshot(base)
    seen = {"n": 0, "imported": 0}

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(st.sampled_from(paths), VALUES)
    def run(path, value):
        bad = json.loads(json.dumps(good))
        idk = "original_inst_id" if fmt == "contextbench" else "instance_id"
        bad[idk] = bad[idk].replace("1", "2")
        try:
            _set(bad, path, value)
        except (TypeError, KeyError, IndexError):
            return
        f = work / "in.jsonl"
        try:
            f.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
        except (ValueError, UnicodeEncodeError):  # not JSON (NaN is written; a lone surrogate is not)
            return
        try:
            tasks, dropped = importers_mod.import_gold(fmt, f)
        except (importers_mod.InputFileError, contextbench_mod.ContextBenchError) as e:  # the file as a whole
            assert "\n" not in str(e) and "appears twice" in str(e), e
            return
        seen["n"] += 1
        assert len(tasks) + len(dropped) == 2, (tasks, dropped)
        assert any(t.id.endswith("-1") for t in tasks), dropped  # the good record is not stopped by the bad one
        for d in dropped:
            assert isinstance(d["reason"], str) and "\n" not in json.dumps(d.get("detail", "")).replace("\\n", "")
            assert "\n" not in d.get("detail", ""), d
        for t in tasks:
            fields.check_task(t)
            if t.id.endswith("-2"):
                seen["imported"] += 1
                url = t.meta.get("clone_url") or ""
                if url.startswith(("file://", "/")):
                    try_materialize(t, mode="online")
        assert not os.path.exists(MARK), (path, value)

    run()
    assert seen["n"] >= 30 and seen["imported"] >= 5, seen
    assert _snapshot(base) == before, "a file changed outside the cache"


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.sampled_from(
        [
            "id",
            "query",
            "repo",
            "base_commit",
            "version",
            "split",
            "root",
            "meta",
            "gold",
            ("gold", "edited"),
            ("gold", "variants"),
            ("gold", "explore"),
            ("gold", "context"),
            ("gold", "entities"),
            ("gold", "viewed"),
            ("meta", "clone_url"),
            ("gold", "edited", "a.py"),
            ("gold", "explore", "core_regions"),
            ("gold", "context", "regions"),
        ]
    ),
    VALUES,
)
def test_hostile_values_in_task_records(field, value):
    """``Task.from_dict`` (every Task JSONL file) gives a checked Task or one-line RecordError, nothing else."""
    d = Task("ok", "q", "o/r", fields_gold(), "a" * 40, meta={"clone_url": "https://github.com/o/r.git"}).to_dict()
    d["gold"]["explore"] = {"core_regions": [["a.py", 1, 2]]}
    d["gold"]["context"] = {"regions": [["a.py", 1, 2]]}
    path = field if isinstance(field, tuple) else (field,)
    _set(d, path, value)
    try:
        t = Task.from_dict(d)
    except RecordError as e:
        assert "\n" not in str(e) and len(str(e)) < 1000, e
        return
    fields.check_task(t)
    assert fields.REPO_RE.fullmatch(t.repo) and fields.ID_RE.fullmatch(t.id)
    assert t.base_commit is None or fields.COMMIT_RE.fullmatch(t.base_commit)


def fields_gold():
    from fasbench.records import Gold

    return Gold({"a.py": [[1, 2]]}, variants={"hunk": {"a.py": [[1, 2]]}})


def test_tasks_file_with_hostile_records_reads_the_rest(tmp_path):
    """``read_tasks`` with a skip list: each hostile record one line, the good one read."""
    good = Task("ok", "q", "o/r", fields_gold(), "a" * 40).to_dict()
    rows = [{**good, "id": v} for v in HOSTILE[:12]] + [{**good, "base_commit": v} for v in HOSTILE[:12]] + [good]
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in rows))
    skipped: list[dict] = []
    ok = read_tasks(f, skipped)
    assert [t.id for t in ok] == ["ok"] and len(skipped) == 24
    assert all("\n" not in s["reason"] for s in skipped)
