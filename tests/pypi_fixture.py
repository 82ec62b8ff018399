"""Shared by the tests that download real PyPI sdists: skip them where PyPI cannot be reached, and the
SWE-bench tasks by id (Lite and Verified)."""

import urllib.request

import pytest

from fasbench.data import corpus, swebench


def _pypi_reachable() -> bool:
    try:
        urllib.request.urlopen(corpus.PYPI_SIMPLE + "/pip/", timeout=10)
        return True
    except OSError:
        return False


requires_pypi = pytest.mark.skipif(not _pypi_reachable(), reason="PyPI is not reachable from this machine")


@pytest.fixture(scope="module")
def by_id():
    return {t.id: t for t in swebench.tasks("swebench-verified") + swebench.tasks("swebench-lite")}
