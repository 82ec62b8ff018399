"""Issue 36's acceptance, tried by a red team with attacks the other suites do not have: hostile
imported records (JSON nested past the recursion limit inside one field, a repeated id), hostile
repositories and corpora, traces and run folders, pages. Each attack must end as a one-line skip or
refusal with the batch going on: no command run, nothing read or written outside, no hang, no traceback."""

from __future__ import annotations

import json

import pytest

from fasbench.data.importers import import_gold

DEEP = "[" * 50_000 + "]" * 50_000  # a JSON text past Python's recursion limit, inside one string field


def _jsonl(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


GOOD_PRO = {"instance_id": "good__pro-1", "repo": "octo/good", "base_commit": "a" * 40, "problem_statement": "fix",
            "patch": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n"}
GOOD_CB = {"instance_id": "cb-good", "original_inst_id": "octo__good-7", "repo": "octo/good", "base_commit": "b" * 40,
           "problem_statement": "q", "gold_context": [{"file": "a.py", "start_line": 1, "end_line": 2}]}


@pytest.mark.parametrize("fmt,bad,good", [
    ("swebench-pro", dict(GOOD_PRO, instance_id="bad__deep-1", fail_to_pass=DEEP), GOOD_PRO),
    ("contextbench", dict(GOOD_CB, original_inst_id="octo__deep-1", gold_context=DEEP), GOOD_CB),
], ids=["swebench-pro-list-field", "contextbench-gold-context"])
def test_a_field_nested_past_the_recursion_limit_skips_its_record_only(tmp_path, fmt, bad, good):
    """Old code: RecursionError out of json.loads of one record's field stopped the whole import."""
    tasks, dropped = import_gold(fmt, _jsonl(tmp_path / "in.jsonl", [bad, good]))
    assert [t.id for t in tasks] == [good.get("original_inst_id") or good["instance_id"]]
    assert [(d["reason"], d["detail"]) for d in dropped] == [("bad-record", "a field is nested too deeply")]


def test_a_repeated_record_id_is_a_skip_not_the_end_of_the_import(tmp_path):
    """Old code: ContextBench raised 'task ... appears twice' and imported nothing."""
    recs = [GOOD_CB, dict(GOOD_CB), dict(GOOD_CB, original_inst_id="octo__other-2")]
    tasks, dropped = import_gold("contextbench", _jsonl(tmp_path / "in.jsonl", recs))
    assert [t.id for t in tasks] == ["octo__good-7", "octo__other-2"]
    assert [(d["id"], d["reason"]) for d in dropped] == [("octo__good-7", "duplicate-id")]
