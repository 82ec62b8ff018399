"""What the tests share: fixtures used by several modules, and the ``slow`` marker on the notebooks.

``make test`` runs everything; ``make test-fast`` deselects ``slow`` (each test over ~5 s, and every
notebook) and runs on two workers (pytest-xdist). A test module's own fixture of the same name wins over
these.

The unit tests do not see ``FASBENCH_SHORT``: ``make test`` sets it for the notebooks it executes (their
shortened parameter sets) in the same pytest process; a :class:`fasbench.stats.findings.Findings` built under it
opens with a "Smoke settings" line, which would change the Markdown the tests compare. A test that wants it sets
it."""

from __future__ import annotations

import os
import signal

import fasbench  # noqa: F401  (imported first: sets OMP_WAIT_POLICY=PASSIVE before any test module loads torch)

# isort: split
import pytest
from procs_fixture import procs_with


def _once_more(item):
    """nbmake's run of a notebook, once more when it fails, as ``make run`` does: now and then nbclient waits for a
    message an idle kernel never sends (seen in notebook 07) until the cell timeout; the second run is the verdict
    and a failing notebook still fails."""
    runtest = item.runtest

    def run() -> None:
        try:
            runtest()
        except Exception as e:  # nbmake's NotebookFailedException: a cell raised or timed out
            print(f"\n{item.name}: failed ({type(e).__name__}), run once more", flush=True)
            runtest()

    return run


def pytest_collection_modifyitems(config, items):
    """The notebooks (nbmake's items) run for minutes each: ``slow``, so that ``-m "not slow"`` skips them; each
    is run once more when it fails (:func:`_once_more`)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
            item.runtest = _once_more(item)


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    """A FASBENCH_CACHE of the test's own, so that no run is resumed from another test's
    (a module opts in: ``pytestmark = pytest.mark.usefixtures("own_cache")``)."""
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))


@pytest.fixture()
def reap():
    """Markers of processes a tool call may leave behind; whatever a failing test left is killed after it."""
    markers: list[str] = []
    yield markers
    for m in markers:
        for pid in procs_with(m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def by_id():
    """The SWE-bench tasks by id, Lite and Verified."""
    from fasbench.data import swebench

    return {t.id: t for t in swebench.tasks("swebench-verified") + swebench.tasks("swebench-lite")}


@pytest.fixture(autouse=True)
def _no_short_settings(monkeypatch):
    monkeypatch.delenv("FASBENCH_SHORT", raising=False)
