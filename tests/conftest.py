"""Shared test setup: the unit tests do not see ``FASBENCH_SHORT``.

``make test`` sets ``FASBENCH_SHORT=1`` for the notebooks it executes (their shortened parameter sets) in the
same pytest process as these tests; a :class:`fasbench.stats.findings.Findings` built under it opens with a
"Smoke settings" line, which would change the Markdown the tests here compare. A test that wants it sets it.
"""

import pytest


@pytest.fixture(autouse=True)
def _no_short_settings(monkeypatch):
    monkeypatch.delenv("FASBENCH_SHORT", raising=False)
