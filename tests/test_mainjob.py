"""make run's hang guard (fasbench/mainjob/run.py): a notebook that makes no progress (an idle kernel) is
stopped and run once more with a one-line reason; a notebook that works longer than the idle limit is not
stopped, however long it takes. Real papermill, real kernels; small limits so the test stays short."""

from __future__ import annotations

import json

import nbformat
import pytest

from fasbench.mainjob import run as mainjob

pytestmark = pytest.mark.timeout(600)


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_idle_kernel_is_stopped_and_retried_with_one_line(tmp_path, capsys):
    nb = _notebook(tmp_path / "hang.ipynb", "import time\ntime.sleep(3600)")
    rc = mainjob.run_all(tmp_path / "out", [nb], idle_s=20)
    err = capsys.readouterr().err
    assert rc == 1
    lines = [ln for ln in err.splitlines() if "hang.ipynb failed" in ln]
    assert len(lines) == 2 and "no progress for 20 s" in lines[0] and "once more" in lines[0]
    assert "Traceback" not in err


@pytest.mark.slow
def test_busy_cell_longer_than_the_idle_limit_is_not_stopped(tmp_path, capsys):
    # 45 s of CPU in one cell against a 20 s idle limit: progress is CPU time, so it runs to the end (the
    # guard needs 2 CPU-s in 20 s, a tenth of a core: a machine at load 10 on 2 cores still gives that).
    nb = _notebook(
        tmp_path / "busy.ipynb",
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 45:\n    sum(range(10000))",
    )
    assert mainjob.run_all(tmp_path / "out", [nb], idle_s=20) == 0
    assert "failed" not in capsys.readouterr().err


@pytest.mark.slow
def test_a_failing_notebook_reports_its_error_in_one_line(tmp_path, capsys):
    nb = _notebook(tmp_path / "bad.ipynb", "raise ValueError('the parameter N_TASKS must be positive')")
    assert mainjob.run_all(tmp_path / "out", [nb], idle_s=60) == 1
    err = capsys.readouterr().err
    assert "ValueError: the parameter N_TASKS must be positive" in err and "Traceback" not in err
    assert (tmp_path / "out" / "bad.log").read_text()  # the whole log is kept beside the notebook


@pytest.mark.slow
def test_a_failed_notebook_does_not_stop_the_ones_after_it(tmp_path, capsys):
    bad = _notebook(tmp_path / "a_bad.ipynb", "raise RuntimeError('broken')")
    good = _notebook(tmp_path / "b_good.ipynb", "x = 1")
    assert mainjob.run_all(tmp_path / "out", [bad, good], idle_s=60, tries=1) == 1
    rec = json.loads((tmp_path / "out" / "run.json").read_text())
    assert [(e["notebook"], e["ok"]) for e in rec["notebooks"]] == [("a_bad.ipynb", False), ("b_good.ipynb", True)]
    assert "1 of 2 notebooks failed: a_bad.ipynb" in capsys.readouterr().err
