"""Shared by the tests that download real PyPI sdists: skip them where PyPI cannot be reached (the
SWE-bench tasks by id, ``by_id``, are a fixture of conftest.py)."""

import urllib.request

import pytest

from fasbench.data import corpus


def _pypi_reachable() -> bool:
    try:
        urllib.request.urlopen(corpus.PYPI_SIMPLE + "/pip/", timeout=10)
        return True
    except OSError:
        return False


requires_pypi = pytest.mark.skipif(not _pypi_reachable(), reason="PyPI is not reachable from this machine")
