"""What the evaluation tests share: toy tasks with distinct ids over one real corpus (a cache folder of
the test's own, ``own_cache``, is a fixture of conftest.py)."""

from __future__ import annotations

from dataclasses import replace

from fasbench.policies.toy import make_corpus, toy_tasks


def toy_copies(root, n: int):
    """``n`` toy tasks on the corpus built under ``root``, cycling through the toy issues, each with
    its own id (``ID-i``)."""
    base = toy_tasks(make_corpus(root))
    return [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(n)]
