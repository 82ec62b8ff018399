"""ContextBench as a task source: its gold contexts become ``gold.context`` of fasbench tasks.

ContextBench (Li et al., "ContextBench: A Benchmark for Context Retrieval in Coding Agents", arXiv
2602.05892; data ``Schwerli/ContextBench`` on the Hugging Face hub: 1,136 tasks, the
``contextbench_verified`` config a 500-task selection across SWE-bench Verified, Pro, Poly and Multi,
listed in ``selected_500_instances.csv``, not a subset of SWE-bench Verified alone)
ships one row per task. Its evaluator reads the rows this way (anonymousUser2026/ContextBench at
commit 2e37285e929f89b00641c54d867d7556260e5939, ``Context-Bench/contextbench/parsers/gold.py::
GoldLoader._load_parquet`` and ``Gold``; ``scripts/export_gold_contextbench_verified.py``):

- ``instance_id`` (ContextBench's own id, e.g. ``SWE-Bench-Verified__python__maintenance__bugfix__71f348da``),
  ``original_inst_id`` (the source benchmark's id, e.g. ``astropy__astropy-13579``), ``repo``,
  ``repo_url``, ``base_commit``, ``patch``, ``test_patch``, ``source``, ``language``, and
  ``problem_statement`` where the row has it;
- ``gold_context``: a JSON string (or, after an export, a list; the exported JSONL calls it
  ``gold_ctx``) of ``{"file", "start_line", "end_line", "content"}``: the annotated blocks, 1-based
  inclusive lines on ``base_commit``, ``content`` their text. (``init_ctx`` + ``add_ctx``, the
  annotation files' form, are read the same way, as ``Gold`` merges them.)

Accepted files: ``.parquet`` (polars), JSONL or a JSON list of such rows. Paths are normalised as
``parsers/gold.py::_normalize_rel_path`` does (``/testbed/`` and ``/workspace/<repo>/`` prefixes and
a leading ``/`` dropped, then ``lstrip("./")``, which it applies as written).

A row whose ``original_inst_id`` is a shipped SWE-bench Lite/Verified task takes that task (query,
repository, version, gold patch, split: its offline sdist is the corpus); any other needs
``problem_statement`` and a repository (``repo`` ``owner/name``, else ``repo_url``) and is served
online at ``base_commit``. The regions are ``gold.context["regions"]``; ``meta["contextbench"]``
keeps the ids, source, language and each region's ``content``.

**Placement** (``data/relocate.py::place_context``, called by data/corpus.py when the corpus is materialised):
on the exact base commit (online) the regions stay as they are; on an offline sdist each region is
moved by its ``content`` when it has one (data/relocate.py rule 3: difflib over whole lines, at
least ``MIN_MATCHED`` of the region's lines matched; the rest of the base file is unknown and
matches nothing), else by the gold patch's hunk offsets (rule 4). ContextBench scores against the
whole gold context, so a task keeps it only when every region is placed; otherwise the task is
dropped with ``region-not-relocated`` and the regions' reasons. :func:`usability` says, per task,
whether it is usable offline and online
(``fasbench data import contextbench`` prints it; :func:`fasbench.data.importers.usability`).
"""

from __future__ import annotations

import json
from pathlib import Path

from fasbench.data import swebench_tasks
from fasbench.data.patches import parse_diff
from fasbench.data.splits import assign
from fasbench.records import Gold, RecordError, Task, fields, read_records
from fasbench.trajectories.agent_paths import ROOT


class ContextBenchError(ValueError):
    """The input file as a whole cannot be read; the message says why."""


def normalize_rel_path(path: str) -> str:
    """``parsers/gold.py::_normalize_rel_path`` of ContextBench's evaluator, as written."""
    if not path:
        return ""
    p = path.replace("\\", "/")
    if p.startswith(ROOT + "/"):  # "/testbed/" there
        return p[len(ROOT) + 1 :]
    if p.startswith("/workspace/"):
        parts = p[len("/workspace/") :].split("/", 1)
        return parts[1] if len(parts) == 2 else parts[0]
    if p.startswith("/"):
        return p.lstrip("/")
    return p.lstrip("./")


def read_rows(path: str | Path) -> list[dict]:
    """The rows of a ContextBench file (``.parquet``, JSONL or a JSON list)."""
    p = Path(path)
    if not p.is_file():
        raise ContextBenchError(f"{p} does not exist")
    if p.suffix == ".parquet":
        # local import: polars, heavy; only a parquet file needs it
        import polars as pl

        try:
            return pl.read_parquet(p).to_dicts()
        except Exception as e:  # polars raises its own ComputeError / ArrowError kinds
            raise ContextBenchError(f"{p}: not a readable parquet file ({type(e).__name__}: {e})"[:300]) from e
    try:
        return read_records(p)
    except FileNotFoundError:
        raise ContextBenchError(f"{p} does not exist") from None
    except RecordError as e:
        raise ContextBenchError(str(e)) from e


def gold_entries(row: dict) -> list[dict]:
    """The row's gold blocks: ``gold_context`` (JSON string or list), else ``gold_ctx``, else
    ``init_ctx`` + ``add_ctx`` (parsers/gold.py's order of preference)."""
    raw = row.get("gold_context")
    if raw is None:
        raw = row.get("gold_ctx")
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip() else []
    if raw is None:
        raw = list(row.get("init_ctx") or []) + list(row.get("add_ctx") or [])
    if not isinstance(raw, list):
        raise ValueError(f"gold_context: expected a list of blocks, got {type(raw).__name__}")
    return raw


def _region(e) -> tuple[list, str | None]:
    if not isinstance(e, dict):
        raise ValueError(f"a gold block must be an object, got {type(e).__name__}")
    path = normalize_rel_path(str(e.get("file") or ""))
    s, en = e.get("start_line", 1), e.get("end_line", 1)
    if not path or isinstance(s, bool) or isinstance(en, bool) or not isinstance(s, int) or not isinstance(en, int):
        raise ValueError(
            f"a gold block needs a file and integer start_line/end_line, got {e.get('file')!r} {s!r}-{en!r}"
        )
    if s < 1 or en < s:
        raise ValueError(f"gold block {path}:{s}-{en}: lines must satisfy 1 <= start_line <= end_line")
    c = e.get("content")
    return [path, s, en], (c if isinstance(c, str) and c.strip() else None)


def _repo(row: dict) -> str | None:
    r = str(row.get("repo") or "").strip().strip("/")
    if r.count("/") == 1 and " " not in r:
        return r
    url = str(row.get("repo_url") or "").strip().rstrip("/")
    if url.endswith(".git"):
        url = url[:-4]
    parts = url.split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 and all(parts[-2:]) else None


def _task(row: dict, known: dict[str, Task]) -> tuple[Task | None, str]:
    orig = str(row.get("original_inst_id") or "")
    cid = str(row.get("instance_id") or row.get("inst_id") or "")
    if orig in known:
        k = known[orig]
        return Task(
            k.id,
            k.query,
            k.repo,
            Gold(dict(k.gold.edited), None, k.gold.source, dict(k.gold.variants)),
            k.base_commit,
            k.version,
            None,
            k.split,
            dict(k.meta),
        ), ""
    query = row.get("problem_statement")
    if not query:
        return None, "no-query"
    repo = _repo(row)
    if not repo:
        return None, "no-repo"
    if not row.get("base_commit"):
        return None, "no-base-commit"
    meta = {k: fields.text(row[k], k) for k in ("patch", "test_patch") if row.get(k)}
    if row.get("repo_url"):
        meta["clone_url"] = fields.clone_url(row["repo_url"], "repo_url")
    edited: dict = {}
    try:
        edited = {f.path: [] for f in parse_diff(meta.get("patch") or "")}
    except ValueError:
        pass
    return Task(
        orig or cid,
        fields.text(query, "problem_statement"),
        repo,
        Gold(edited, None, "contextbench"),
        fields.commit(row["base_commit"]),
        None,
        None,
        None,
        meta,
    ), ""


def import_contextbench(path: str | Path) -> tuple[list[Task], list[dict]]:
    """(tasks, dropped rows with a reason) of a ContextBench file (module doc)."""
    known = swebench_tasks()

    def one(row: dict, rid: str) -> tuple[Task | None, dict | None]:
        try:
            pairs = [_region(e) for e in gold_entries(row)]
        except (ValueError, json.JSONDecodeError) as e:
            return None, {"reason": "bad-gold-context", "detail": str(e)[:300]}
        if not pairs:
            return None, {"reason": "empty-gold-context"}
        t, why = _task(row, known)
        if t is None:
            return None, {"reason": why}
        t.gold.context = {"regions": [r for r, _ in pairs]}
        t.meta["contextbench"] = {
            "instance_id": str(row.get("instance_id") or ""),
            "original_inst_id": str(row.get("original_inst_id") or ""),
            "source": str(row.get("source") or ""),
            "language": str(row.get("language") or ""),
            "file": str(path),
            "content": [c for _, c in pairs],
        }
        t.meta["gold_import"] = {"format": "contextbench", "file": str(path), "gold_kind": "annotated gold context"}
        return t, None

    rows = read_rows(path)
    tasks, dropped = fields.each_record(rows, one, key=("original_inst_id", "instance_id"))
    fresh = assign([t for t in tasks if t.split is None])
    by_id = {t.id: t for t in fresh}
    return [by_id.get(t.id, t) for t in tasks], dropped
