"""FastContext's standalone evaluation (benchmark/evaluation/run_score.py + utils.py of Microsoft's
release, commit 0dc077f in the T0mSIlver/fastcontext history) and LocAgent's evaluation set.

The expected values were computed by hand below and agree with the release's own functions run on
the same inputs (``utils.parse_patch`` / ``calculate_score_file`` / ``calculate_score_line`` on
tests/data/fc_score/patch.diff and the answer ``src/a.go:12-20``, ``tool.py:1-2``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from fasbench.data.tasksets import LOCAGENT_FILTERED, TaskSetError, load_task_set, parse_task_set, task_set_label
from fasbench.evaluation.episodes import episode_row
from fasbench.records import Gold, Report, Task, Trace, write_tasks
from fasbench.scoring.localization import (
    FC_FILE_TYPES,
    fastcontext_row,
    fastcontext_summary,
    fastcontext_warning,
    fc_parse_patch,
    fc_scores,
)

PATCH = (Path(__file__).parent / "data" / "fc_score" / "patch.diff").read_text()
CITES = [("src/a.go", 12, 20), ("tool.py", 1, 2)]


def test_gold_as_parse_patch_filter_created_and_countless_hunks():
    # a.go hunk -10,7: lines 10..16 with context; new.go (-0,0) dropped; b.ts "@@ -5 +5 @@" has no counts:
    # the release's regex skips it; tool.py is not in FILE_TYPES
    assert fc_parse_patch(PATCH) == [("src/a.go", 10, 16)]
    assert fc_parse_patch(PATCH, None) == [("src/a.go", 10, 16), ("tool.py", 1, 2)]
    assert ".py" not in FC_FILE_TYPES and fc_parse_patch("") == []


def test_scores_hand_computed():
    s = fc_scores(fc_parse_patch(PATCH), CITES)
    # files: gold {a.go}, cited {a.go, tool.py}: P 1/2, R 1, F1 2/3
    assert (s["fc_file_precision"], s["fc_file_recall"]) == (0.5, 1.0) and s["fc_file_f1"] == pytest.approx(2 / 3)
    # lines: gold 10..16 (7), cited 12..20 + 1..2 (11), shared 12..16 (5): P 5/11, R 5/7, F1 5/9
    assert s["fc_line_precision"] == pytest.approx(5 / 11) and s["fc_line_recall"] == pytest.approx(5 / 7)
    assert s["fc_line_f1"] == pytest.approx(5 / 9) and (s["fc_n_citation_lines"], s["fc_n_patch_lines"]) == (11, 7)
    a = fc_scores(fc_parse_patch(PATCH, None), CITES)  # no filter: tool.py 1..2 is gold too
    assert a["fc_file_f1"] == 1.0 and a["fc_line_precision"] == pytest.approx(7 / 11)
    assert a["fc_line_recall"] == pytest.approx(7 / 9) and a["fc_line_f1"] == pytest.approx(0.7)
    # overlapping citations count each line once; a reversed range none (range(start, end + 1))
    o = fc_scores([("x.go", 1, 10)], [("x.go", 1, 5), ("x.go", 3, 8), ("x.go", 9, 2)])
    assert (o["fc_n_citation_lines"], o["fc_line_precision"], o["fc_line_recall"]) == (8, 1.0, 0.8)
    z = fc_scores([], CITES)  # empty gold (the release raises ZeroDivisionError here): 0
    assert (z["fc_file_f1"], z["fc_line_f1"], z["fc_n_patch_files"]) == (0.0, 0.0, 0)


def _task(root, patch=PATCH):
    return Task(
        id="t1",
        query="q",
        repo="x/y",
        gold=Gold(edited={"src/a.go": [[13, 13]], "src/new.go": []}),
        root=str(root),
        meta={"patch": patch} if patch else {},
    )


def _trace(files):
    return Trace(
        task_id="t1",
        policy="p",
        toolset="fastcontext",
        prompt=[],
        report=Report(files=files) if files is not None else None,
    )


def test_row_columns_and_summary(tmp_path):
    row = episode_row(
        _trace({"/repo/src/a.go": [[12, 20]], "tool.py": [[1, 2]], "doc.md": []}),
        _task(tmp_path),
        reward="file-f1",
        localization=False,
        scoring=["fastcontext"],
    )
    # /repo/ is dropped from the cited path; a file cited without a range is no citation
    assert row["fc_file_precision"] == 0.5 and row["fc_line_f1"] == pytest.approx(5 / 9)
    assert (row["fc_gold"], row["fc_filter"], row["fc_no_citation"]) == ("patch", "release", False)
    empty = episode_row(_trace(None), _task(tmp_path), reward="file-f1", localization=False, scoring=["fastcontext"])
    assert empty["fc_no_citation"] is True and empty["fc_file_f1"] == 0.0
    plain = episode_row(_trace(None), _task(tmp_path), reward="file-f1", localization=False)
    assert not any(k.startswith("fc_") for k in plain)
    # no patch on the task: gold.edited under the same filter, the created file (no ranges) left out
    nogold = fastcontext_row(_task(tmp_path, patch=None), _trace({"src/a.go": [[13, 14]]}))
    assert nogold["fc_gold"] == "gold" and (nogold["fc_n_patch_files"], nogold["fc_n_patch_lines"]) == (1, 1)
    df = pl.DataFrame([row, empty])
    out = fastcontext_summary(df)
    assert out["n_no_citation"] == 1 and out["score_file"]["precision"] == 0.25
    assert out["score_line"]["f1"] == pytest.approx(5 / 18) and out["score_file"]["n_patch_files"] == 1.0
    with pytest.raises(ValueError, match="unknown scoring 'fast'"):
        episode_row(_trace(None), _task(tmp_path), localization=False, scoring=["fast"])


@pytest.mark.slow
def test_eval_cli_scoring_fastcontext(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.go").write_text("".join(f"line {i}\n" for i in range(1, 30)))
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(
        tasks,
        [
            Task(
                id="t1",
                query="where is line 13",
                repo="x/y",
                root=str(root),
                gold=Gold(edited={"src/a.go": [[13, 13]]}),
                meta={"patch": PATCH},
                split="test",
            )
        ],
    )
    out = tmp_path / "run"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "eval",
            "--tasks",
            str(tasks),
            "--policy",
            "heuristic",
            "--toolset",
            "fastcontext",
            "--out",
            str(out),
            "--scoring",
            "fastcontext",
            "--workers",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(x for x in r.stdout.splitlines() if x.startswith("FastContext run_score.py (fastcontext): "))
    printed = json.loads(line.split(": ", 1)[1])
    df = pl.read_parquet(out / "summary.parquet")
    assert {"fc_file_f1", "fc_line_recall", "fc_no_citation", "fc_gold"} <= set(df.columns)
    exact = fastcontext_summary(df)  # printed rounded to 4 places (a summary to read), stored exact
    assert printed.keys() == exact.keys() and df["fc_n_patch_lines"][0] == 7
    for part in exact:
        for k, v in exact[part].items() if isinstance(exact[part], dict) else [(None, exact[part])]:
            got = printed[part][k] if k is not None else printed[part]
            assert got == (round(v, 4) if isinstance(v, float) else v), (part, k, got, v)
    assert "FILE_TYPES" not in r.stderr  # a .go gold file passes the release's filter: no warning
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "eval",
            "--tasks",
            str(tasks),
            "--policy",
            "heuristic",
            "--out",
            str(tmp_path / "run2"),
            "--scoring",
            "nope",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert bad.returncode == 2 and "unknown scoring 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_scoring_fastcontext_warns_where_its_filter_keeps_no_gold():
    df = pl.DataFrame({"fc_n_patch_files": [0, 2, 0]})
    w = fastcontext_warning(df, "fastcontext")
    assert "2 of 3 episodes" in w and ".py" in w and "fastcontext-all" in w and "\n" not in w
    assert fastcontext_warning(df, "fastcontext-all") is None
    assert fastcontext_warning(pl.DataFrame({"fc_n_patch_files": [1]}), "fastcontext") is None


def test_locagent_selection_drops_its_26():
    assert len(LOCAGENT_FILTERED) == len(set(LOCAGENT_FILTERED)) == 26
    tasks = load_task_set("swebench-lite:locagent")
    ids = {t.id for t in tasks}
    assert len(tasks) == 274 and not ids & set(LOCAGENT_FILTERED)
    assert ids | set(LOCAGENT_FILTERED) == {t.id for t in load_task_set("swebench-lite")}
    assert "274 of Lite's 300" in task_set_label("swebench-lite:locagent")
    with pytest.raises(TaskSetError, match="selection 'locagent' is of swebench-lite only"):
        parse_task_set("swebench-verified:locagent")
    assert {t.id for t in load_task_set("swebench-lite:locagent", split="test")} <= ids
