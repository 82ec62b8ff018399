"""Issue 38 item 2: the report a reader trusts at a glance — a header (date, commit, machine, total time from
``run.json``), a smoke banner, a section index, the findings-vs-outputs note on the page, HTML tables and no
absolute machine paths. Built from a tiny fake ``runs/notebooks`` folder (outputs written, no kernel)."""

from __future__ import annotations

import json
import re

import nbformat
import polars as pl

from fasbench.base.paths import repo_root, scrub_paths, shown_path
from fasbench.mainjob import run as mainrun
from fasbench.mainjob.report import write_report
from fasbench.stats.findings import Findings
from fasbench.stats.tables import frame_html


def _md_out(text):
    return {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": text, "text/plain": text}}


def _nb(title: str, outputs: list, findings: Findings) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# {title}\n\nSome words."))
    c = nbformat.v4.new_code_cell("x = 1")
    c.outputs = [nbformat.from_dict(o) for o in outputs]
    nb.cells.append(c)
    f = nbformat.v4.new_code_cell("f")
    f.metadata["tags"] = ["findings"]
    f.outputs = [nbformat.from_dict(_md_out(findings._repr_markdown_()))]
    nb.cells.append(f)
    return nb


def _folder(tmp_path, monkeypatch):
    monkeypatch.delenv("FASBENCH_SHORT", raising=False)
    root = str(repo_root())
    d = tmp_path / "runs" / "notebooks"
    d.mkdir(parents=True)
    table = pl.DataFrame({"policy": ["bm25", "<b>heuristic</b>"], "file_f2": [0.123456, 0.5]})
    html_table = {
        "output_type": "execute_result",
        "execution_count": 1,
        "metadata": {},
        "data": {"text/html": str(frame_html(table)), "text/plain": str(table)},
    }
    small = Findings("baselines", n=2, study_n=40).add("heuristic 0.50 vs bm25 0.12; a hidden 0.777.")
    big = Findings("tasks", n=500, study_n=40).add("all good at 0.50.")
    nbformat.write(
        _nb(
            "Search baselines",
            [html_table, {"output_type": "stream", "name": "stdout", "text": f"runs in {root}/.cache/runs/03_abc\n"}],
            small,
        ),
        d / "03_search.ipynb",
    )
    nbformat.write(_nb("Tasks", [_md_out("0.50 everywhere")], big), d / "02_tasks.ipynb")
    return d


def test_header_from_run_record_smoke_banner_index_and_note(tmp_path, monkeypatch):
    d = _folder(tmp_path, monkeypatch)
    rec = {
        "started": "2026-12-04 10:00 UTC",
        "finished": "2026-12-04 11:21 UTC",
        "total_s": 4860.0,
        "code": {"describe": "abc1234-dirty", "commit": "a" * 40, "dirty": True},
        "machine": {"cores": 2, "memory_gb": 7.8, "load_1min": 3.2, "system": "Linux x86_64"},
        "checkout": "/home/someone/fasbench",
        "short": False,
        "notebooks": [{"notebook": "03_search.ipynb", "seconds": 1234.5, "tries": 2, "ok": True}],
    }
    (d / "run.json").write_text(json.dumps(rec))
    page = write_report(d, tmp_path / "report").read_text()
    head = page[page.index("fasbench report</h1>") : page.index("Notebook <code>02_tasks")]
    assert "2026-12-04 10:00 UTC" in head and "81 min" in head and "abc1234-dirty" in head and "a" * 40 in head
    assert "2 cores" in head and "7.8 GiB memory" in head
    # the smoke banner names the notebook below its study size, not the other one
    banner = head[head.index("Smoke settings") : head.index("Contents")]
    assert "03_search" in banner and "02_tasks" not in banner and "below the study size of 40" in banner
    # the section index: anchors for each notebook and its findings, titles, time and tries
    assert "href='#02_tasks'" in head.replace('"', "'") and "href='#03_search-findings'" in head.replace('"', "'")
    assert "Search baselines" in head and "21 min" in head and "2 tries" in head
    assert re.search(r"id=.03_search-findings.", page)
    # the findings-vs-outputs note is on the page (0.777 is only in the findings)
    assert "Findings quote numbers no output shows" in head and "0.777" in head
    # the table is an HTML table, escaped, with no polars repr in sight
    assert '<table class="fasbench-table"' in page or "<table class='fasbench-table'" in page
    assert "&lt;b&gt;heuristic&lt;/b&gt;" in page and "shape: (2, 2)" not in page
    # no absolute folder of this machine (or of the run's checkout)
    assert str(repo_root()) not in page and "runs in .cache/runs/03_abc" in page


def test_header_without_run_record_and_short_run(tmp_path, monkeypatch):
    d = _folder(tmp_path, monkeypatch)
    page = write_report(d, tmp_path / "report").read_text()
    assert "no run record" in page and "Report built on" in page
    monkeypatch.setenv("FASBENCH_SHORT", "1")
    f = Findings("x", n=500, study_n=40)
    assert f.smoke and "FASBENCH_SHORT=1" in f.markdown() and "Smoke settings" in f.markdown()
    monkeypatch.delenv("FASBENCH_SHORT")
    assert not Findings("x", n=500, study_n=40).smoke and "Smoke" not in Findings("x", n=5).markdown()


def test_run_all_writes_run_record(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("1 + 1"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    p = tmp_path / "01_x.ipynb"
    nbformat.write(nb, p)
    assert mainrun.run_all(tmp_path / "out", [p], idle_s=60) == 0
    rec = json.loads((tmp_path / "out" / "run.json").read_text())
    assert rec["finished"] and rec["total_s"] > 0 and rec["machine"]["cores"] >= 1
    assert rec["notebooks"] == [
        {"notebook": "01_x.ipynb", "seconds": rec["notebooks"][0]["seconds"], "tries": 1, "ok": True}
    ]


def test_scrub_paths_and_shown_path(monkeypatch):
    root = str(repo_root())
    assert shown_path(repo_root() / "runs" / "x") == "runs/x"
    assert scrub_paths(f"a {root} b") == "a . b"
    assert scrub_paths(f"{root}2/x") == f"{root}2/x"  # another folder that starts with the same letters
    monkeypatch.setenv("FASBENCH_CACHE", "/srv/cache")
    assert scrub_paths("/srv/cache/runs/1") == "$FASBENCH_CACHE/runs/1"
    assert scrub_paths("/old/ck/runs/a", extra=(("/old/ck", "."),)) == "runs/a"


def test_notebook_tables_shows_frames_as_html_tables():
    """A notebook that calls notebook_tables() shows a polars frame as frame_html: every row, no dtype row,
    no quotes, no shape line; cells escaped."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import polars as pl\nfrom fasbench.stats.tables import notebook_tables\nnotebook_tables()\n"
            "pl.DataFrame({'policy': ['<i>x</i>'] * 30, 'f2': [0.5 + i / 1000 for i in range(30)]})"
        )
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    shown = nb.cells[0].outputs[0]["data"]["text/html"]
    assert "class='fasbench-table'" in shown and shown.count("<tr>") == 31  # the header and all 30 rows
    assert "&lt;i&gt;x&lt;/i&gt;" in shown and "0.529" in shown
    assert "shape:" not in shown and "str" not in shown and "f64" not in shown and "&quot;" not in shown
    assert frame_html(pl.DataFrame({"a": range(5)}), max_rows=2).count("3 more rows not shown") == 1
