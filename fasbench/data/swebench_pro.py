"""SWE-bench Pro (Scale AI) records as search tasks: ``fasbench data import swebench-pro FILE``.

A record is one row of the public set (``ScaleAI/SWE-bench_Pro`` on the Hugging Face hub, split
``test``; the evaluator scaleapi/SWE-bench_Pro-os reads the same rows from
``helper_code/sweap_eval_full_v2.jsonl``), every field a string: ``repo``, ``instance_id``
(``instance_<owner>__<name>-<fix commit>-v<env>``), ``base_commit``, ``patch`` (the gold patch),
``test_patch``, ``problem_statement``, ``requirements``, ``interface``, ``repo_language`` (python,
js, ts, go), ``fail_to_pass`` / ``pass_to_pass`` / ``selected_test_files_to_run`` (JSON lists in
strings), ``issue_specificity``, ``issue_categories``, ``before_repo_set_cmd``, ``dockerhub_tag``.
JSONL or a JSON list; lists given as lists are accepted too.

Query: the problem statement, requirements and interface in the evaluator's template
(``helper_code/create_problem_statement.py``: what the agents under test are shown). Gold: the gold
patch's edited files with their ``hunk`` ranges and both variants (``swebench.pr_gold``: unidiff,
language-independent), so every language is handled at file and line level. Entity gold
(module/class/function, computed when the corpus is materialised) exists for Python files only,
because ``fasbench.base.entities`` parses Python; a JS/TS/Go file is gold at file and line level, and
``meta["gold_import"]["languages"]`` names each gold file's language so that a table can keep
entity-level columns to Python. Dropped, with the reason: a record without a field the task needs
(``missing-field``), a patch unidiff cannot read (``bad-patch``), a patch that only creates or
deletes files (``no-line-gold``: nothing of the base commit for a searcher to find).

Corpora: online only, by git checkout of ``repo`` at ``base_commit`` (``corpus.git_worktree``: the
record's ``clone_url``, else ``FASBENCH_GIT_URL``, else GitHub); SWE-bench Pro's repositories are not
PyPI packages, so there is no offline sdist (the import says ``no-pick`` offline, per task).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from fasbench.data.patches import parse_diff
from fasbench.data.splits import assign
from fasbench.data.swebench import pr_gold
from fasbench.records import Task, fields

REQUIRED = ("instance_id", "repo", "base_commit", "patch", "problem_statement")
LISTS = ("fail_to_pass", "pass_to_pass", "selected_test_files_to_run", "issue_specificity", "issue_categories")
KEPT = ("requirements", "interface", "repo_language", "before_repo_set_cmd", "dockerhub_tag", "test_patch")
EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "js",
    ".jsx": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".ts": "ts",
    ".tsx": "ts",
    ".go": "go",
}


def problem_statement(rec: dict) -> str:
    """The text the evaluator gives the agent (helper_code/create_problem_statement.py's template)."""
    return (
        f"{rec['problem_statement']}\n\nRequirements:\n{rec.get('requirements') or ''}\n\n"
        f"New interfaces introduced:\n{rec.get('interface') or ''}"
    )


def _list(v, name: str) -> list:
    if v is None or v == "":
        return []
    if isinstance(v, list):
        return v
    try:
        out = json.loads(v)
    except (TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"{name}: not a JSON list ({e})") from e
    if not isinstance(out, list):
        raise ValueError(f"{name}: not a JSON list")
    return out


def language(path: str) -> str:
    """A gold file's language by its extension (``other`` for data, docs, templates …)."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower(), "other")


def tasks_from_records(recs: list, path) -> tuple[list[Task], list[dict]]:
    """Tasks of SWE-bench Pro records (module doc) read from ``path``, and the dropped records with reasons."""

    def one(rec: dict, iid: str) -> tuple[Task | None, dict | None]:
        missing = [k for k in REQUIRED if not isinstance(rec.get(k), str) or not rec[k].strip()]
        if missing:
            return None, {"reason": "missing-field", "detail": ", ".join(missing)}
        try:
            lists = {k: _list(rec.get(k), k) for k in LISTS}
        except ValueError as e:
            return None, {"reason": "missing-field", "detail": str(e)[:300]}
        try:
            files = parse_diff(rec["patch"])
        except ValueError as e:
            return None, {"reason": "bad-patch", "detail": str(e)[:300]}
        gold = pr_gold(rec["patch"])
        gold.source = "swebench-pro"
        if not files or not any(gold.edited.values()):
            return None, {
                "reason": "no-line-gold",
                "detail": f"the patch only creates or deletes files ({', '.join(f.path for f in files)})"[:300],
            }
        meta = {
            "instance_id": rec["instance_id"],
            "patch": rec["patch"],
            "sets": ["swebench-pro"],
            **lists,
            **{k: rec[k] for k in KEPT if rec.get(k)},
        }
        if rec.get("clone_url"):
            meta["clone_url"] = fields.clone_url(rec["clone_url"])
        meta["gold_import"] = {
            "format": "swebench-pro",
            "file": str(path),
            "languages": {p: language(p) for p in gold.edited},
            "entity_gold": "python files only (fasbench.base.entities parses Python); other files: file and line gold",
        }
        return Task(
            rec["instance_id"],
            problem_statement(rec),
            fields.repo_name(rec["repo"]),
            gold,
            fields.commit(rec["base_commit"]),
            None,
            None,
            None,
            meta,
        ), None

    tasks, dropped = fields.each_record(recs, one)
    return assign(tasks), dropped
