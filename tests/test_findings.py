"""The findings cell: numbers with intervals and n, seeds beside them, caveats, as Markdown."""

import math

from fasbench.findings import Findings, ci, num


def test_number_formats_and_missing_values():
    assert ci(0.6825, 0.397, 0.877) == "0.68 [0.40, 0.88]"
    assert ci(-0.2, -0.5, 0.1, signed=True) == "-0.20 [-0.50, +0.10]"
    assert num(0.683, pct=True) == "68%" and num(0.683, 3, pct=True) == "68.3%"
    assert ci(float("nan"), 0, 1) == "–" and ci(0.5, math.nan, math.nan) == "0.50" and ci("1, 0", None, None) == "1, 0"


def test_markdown_has_table_seeds_caveats_and_level():
    f = Findings("baselines", n=12)
    f.add("Heuristic beats BM25.")
    f.metric("file F2", 0.5, 0.4, 0.6, n=12, seed=0.7, seed_source="Relace")
    f.seed("read+search share", 0.461, 0.562, "FastContext", n=500, pct=True, digits=3)
    f.caveat("CPU defaults.")
    md = f._repr_markdown_()
    assert md.startswith("## What we found: baselines")
    assert "n = 12 tasks; intervals [lo, hi] are 95% bootstrap intervals" in md
    assert "| file F2 | 0.50 [0.40, 0.60] | 12 | 0.70 | Relace |" in md
    assert "| read+search share | 46.1% | 500 | 56.2% | FastContext |" in md
    assert "- Heuristic beats BM25." in md and "**Caveats**" in md and "- CPU defaults." in md
