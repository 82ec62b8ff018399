"""The browser's filter and sort over rows of the one episode table (:mod:`fasbench.evaluation.episodes`).

The replay builds its rows with ``fasbench.evaluation.episodes.episode_row`` / ``episode_rows`` (``rewards=[reward]``,
``localization=False``: the localization columns parse the reported files' source, which a browser does
not show), so they carry the table's columns (``wall_s``, ``tool_s``, ``stop_reason``, …).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fasbench.evaluation.episodes import TEXT_COLUMNS

#: The columns the browser sorts by.
SORT_KEYS = ("reward", "turns", "calls", "wall_s", "max_parallel", "task_id", "policy")


def filter_sort(rows: Sequence[dict], text: str = "", sort_by: str = "reward", descending: bool = True) -> list[dict]:
    """Rows in which every word of ``text`` occurs (case-insensitive) in one of the text columns
    (``fasbench.evaluation.episodes.TEXT_COLUMNS``: task, trace id, policy, tool set, repository, split, stop
    reason, error; empty ones never match), sorted by ``sort_by`` (NaN last whatever the direction)."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f"cannot sort by {sort_by!r}; choose one of {', '.join(SORT_KEYS)}")
    words = text.lower().split()

    def texts(r):
        return [str(r[k]).lower() for k in TEXT_COLUMNS if r.get(k) is not None]

    kept = [r for r in rows if all(any(w in s for s in texts(r)) for w in words)] if words else list(rows)

    def nan(r):
        v = r[sort_by]
        return v is None or (isinstance(v, float) and math.isnan(v))

    good = sorted((r for r in kept if not nan(r)), key=lambda r: r[sort_by], reverse=descending)
    return good + [r for r in kept if nan(r)]
