"""Where the data sets are: ``data/<name>`` in the checkout when shipped there, else the
shared read-only copy (``FASBENCH_SHARED_DATA``, default ``/work/shared/data``)."""

from __future__ import annotations

import os
from pathlib import Path

from fasbench.base.paths import data_dir

SHARED = Path(os.environ.get("FASBENCH_SHARED_DATA", "/work/shared/data"))


def find_data(name: str, *alternatives: str) -> Path:
    """The first existing of ``data/<name>``, ``data/<alt>``…, then the same names under the shared
    folder. ``name`` may be a folder or a file path (e.g. ``trajectories/foo``)."""
    candidates = [data_dir() / n for n in (name, *alternatives)] + [SHARED / n for n in (name, *alternatives)]
    for c in candidates:
        if c.exists():
            return c
    raise FileNotFoundError(f"data set {name!r} not found; looked in: " + ", ".join(map(str, candidates)))
