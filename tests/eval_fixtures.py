"""What the evaluation tests share: toy tasks with distinct ids over one real corpus, and a cache
folder of the test's own (so no run is resumed from another test's)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fasbench.policies.toy import make_corpus, toy_tasks


def toy_copies(root, n: int):
    """``n`` toy tasks on the corpus built under ``root``, cycling through the toy issues, each with
    its own id (``ID-i``)."""
    base = toy_tasks(make_corpus(root))
    return [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(n)]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Every test gets its own FASBENCH_CACHE (import this fixture into a test module to use it)."""
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
