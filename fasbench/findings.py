"""The "What we found" cell that ends each notebook: Markdown generated from the computed numbers.

A notebook builds one :class:`Findings` from the objects it computed and shows it as the last
expression of its last cell (tagged ``findings``; the HTML report hides that cell's code)::

    f = Findings("03 · Search baselines", n=len(tasks))
    f.metric("file-level F2, heuristic ≤ 4 turns", row["file_f2"], row["file_f2_lo"], row["file_f2_hi"],
             n=row["n"], seed=None)
    f.seed("search share of tokens", ours=0.41, seed=0.566, source="Relace")
    f.add(f"The heuristic beats BM25 by {diff:+.2f} F2 points [{lo:+.2f}, {hi:+.2f}].")
    f.caveat("CPU defaults: 12 tasks from 3 corpora; the full study uses every usable task.")
    f

Every number is passed in, never typed: the cell re-renders with the run it belongs to. Intervals
are written ``mean [lo, hi]`` with their level and ``n``; differences carry an explicit sign; seed
values (the published numbers of the three reproduced systems) sit in their own column, with their
source, beside ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def _bad(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def num(v, digits: int = 2, pct: bool = False, signed: bool = False) -> str:
    """A number for prose: ``0.68``, ``68%`` (``pct``: the value is a share), ``+0.21`` (``signed``);
    ``–`` for missing values."""
    if _bad(v):
        return "–"
    if isinstance(v, int) and not pct:
        return f"{v:+d}" if signed else f"{v:,}"
    sign = "+" if signed else ""
    return f"{100 * v:{sign}.{max(0, digits - 2)}f}%" if pct else f"{v:{sign}.{digits}f}"


def ci(mean, lo, hi, digits: int = 2, pct: bool = False, signed: bool = False) -> str:
    """``mean [lo, hi]`` (one format for the three); ``–`` when the mean is missing; a string (several
    values already formatted) is kept as it is."""
    if isinstance(mean, str):
        return mean
    if _bad(mean):
        return "–"
    if _bad(lo) or _bad(hi):
        return num(mean, digits, pct, signed)
    return f"{num(mean, digits, pct, signed)} [{num(lo, digits, pct, signed)}, {num(hi, digits, pct, signed)}]"


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


@dataclass
class Findings:
    """Findings of one notebook run: measured values (with intervals and n), seed values beside them,
    sentences, and caveats. Renders as Markdown (``markdown()``, or by displaying it)."""

    title: str
    n: int | None = None  # the population the notebook measured (tasks, episodes, trajectories)
    unit: str = "tasks"  # what n counts
    level: float = 0.95  # the confidence level of the intervals passed in
    sentences: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    def add(self, sentence: str) -> "Findings":
        """A finding in words (built with f-strings from computed values)."""
        self.sentences.append(sentence)
        return self

    def metric(self, label: str, mean, lo=None, hi=None, n: int | None = None, digits: int = 2, pct: bool = False,
               signed: bool = False, seed=None, seed_source: str = "", seed_note: str = "") -> "Findings":
        """A measured value with its interval and n, and optionally the published (seed) value."""
        ours = ci(mean, lo, hi, digits, pct, signed)
        self.rows.append({"label": label, "ours": ours, "has_ci": "[" in ours,
                          "n": "–" if n is None else f"{n:,}",
                          "seed": "–" if _bad(seed) else (num(seed, digits, pct, signed) if not isinstance(seed, str)
                                                          else seed),
                          "source": " ".join(x for x in (seed_source, seed_note) if x) or "–"})
        return self

    def seed(self, label: str, ours, seed, source: str, n: int | None = None, lo=None, hi=None, digits: int = 2,
             pct: bool = False, note: str = "") -> "Findings":
        """A published number beside ours (same as :meth:`metric` with a seed)."""
        return self.metric(label, ours, lo, hi, n, digits, pct, seed=seed, seed_source=source, seed_note=note)

    def caveat(self, text: str) -> "Findings":
        """A limit of what was measured: the population, the corpus kind, CPU defaults vs full runs."""
        self.caveats.append(text)
        return self

    def markdown(self) -> str:
        head = f"## What we found: {self.title}"
        if self.n is not None:
            head += f"\n\n*Measured on n = {self.n:,} {self.unit}"
            if any(r["has_ci"] for r in self.rows) or any("[" in x for x in self.sentences):
                head += f"; intervals [lo, hi] are {self.level:.0%} bootstrap intervals over {self.unit}"
            head += ".*"
        parts = [head]
        if self.sentences:
            parts.append("\n".join(f"- {s}" for s in self.sentences))
        if self.rows:
            t = ["| measure | ours: mean [CI] | n | seed value | seed source |", "|---|---|---|---|---|"]
            t += [f"| {_cell(r['label'])} | {_cell(r['ours'])} | {r['n']} | {_cell(r['seed'])} | {_cell(r['source'])} |"
                  for r in self.rows]
            parts.append("\n".join(t))
        if self.caveats:
            parts.append("**Caveats**\n\n" + "\n".join(f"- {c}" for c in self.caveats))
        return "\n\n".join(parts) + "\n"

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        return self.markdown()
