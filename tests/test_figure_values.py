"""Drawn values equal the data: each figure is rendered to SVG by the real browser (kaleido, Chromium)
and every marker's and bar's position is mapped back through the axis to a value, which must equal the
trace's data. Catches what a JSON check cannot: plotly.js moving markers at draw time (notebook 11's
paired figure drew differences of 0.0 at ±0.27 with ``scattermode="group"`` dodging along the value
axis). Covers the kinds fasbench draws: scatter markers (value on x or y, categories grouped), error
bars, grouped bars."""

from __future__ import annotations

import math
import re

import plotly.io as pio
import polars as pl
import pytest

from fasbench.stats.figures import stop_kaleido_server
from fasbench.studies.contamination import paired_figure, scores_figure
from fasbench.studies.search_study import pareto_figure

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True, scope="module")
def _own_browser():
    """These renders never share kaleido's persistent browser with the figure exports of other tests
    (a ReferenceError from it once broke this module's renders and the next module's saves)."""
    stop_kaleido_server()
    yield


_POINT = re.compile(r'class="point" transform="translate\(([-\d.e]+),([-\d.e]+)\)')
_BAR = re.compile(r'<g class="point"><path d="M([-\d.e]+),([-\d.e]+)V([-\d.e]+)H([-\d.e]+)V')
_PLOT = re.compile(r'class="overplot"><g class="xy" transform="translate\(([-\d.e]+),([-\d.e]+)\)')
_TICK = r'class="{a}tick"><text[^>]*?transform="translate\(([-\d.e]+),([-\d.e]+)\)[^>]*>([^<]*)</text>'


def _render(fig):
    """The SVG the browser draws, the plot area's offset and, per axis, value = a + b * absolute px
    (fitted through the axis's own tick labels, so the mapping is the one actually drawn)."""
    try:
        svg = pio.to_image(fig, format="svg").decode()
    except Exception:  # kaleido's shared browser (fasbench.stats.figures.start_kaleido_server) died: as save() does,
        stop_kaleido_server()  # stop it and draw with a browser of this call's own
        svg = pio.to_image(fig, format="svg").decode()
    left, top = (float(v) for v in _PLOT.search(svg).groups())
    axes = {}
    for a, k in (("x", 0), ("y", 1)):
        ticks = [
            (float((x, y)[k]), float(t.replace("\u2212", "-")))
            for x, y, t in re.findall(_TICK.format(a=a), svg)
            if re.fullmatch(r"[-\u2212]?[\d.]+", t)
        ]
        if len(ticks) >= 2:
            (p0, v0), (p1, v1) = ticks[0], ticks[-1]
            b = (v1 - v0) / (p1 - p0)
            axes[a] = (v0 - b * p0, b)
    return svg, left, top, axes


def drawn_markers(fig, value_axis: str) -> list[float]:
    """The value of every drawn marker on ``value_axis`` ('x' or 'y'), in drawing order."""
    svg, left, top, axes = _render(fig)
    a, b = axes[value_axis]
    k, off = (0, left) if value_axis == "x" else (1, top)
    return [a + b * (float(xy[k]) + off) for xy in _POINT.findall(svg)]


def drawn_bars(fig) -> list[float]:
    """The height (value) of every drawn vertical bar, in drawing order."""
    svg, _left, top, axes = _render(fig)
    _a, b = axes["y"]
    return [b * ((float(y1) + top) - (float(y0) + top)) for _x0, y0, y1, _x1 in _BAR.findall(svg)]


def data_values(fig, key: str) -> list[float]:
    return [float(v) for tr in fig.data for v in tr[key] if v is not None and not math.isnan(float(v))]


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(sorted(a), sorted(b)))


def _contamination_table():
    return pl.DataFrame(
        {
            "policy": ["bm25", "bm25", "bm25", "heuristic", "heuristic", "heuristic"],
            "metric": ["file_f2", "line_f1", "all_gold_at_5"] * 2,
            "diff": [0.0, 0.0, 0.0, 0.1, -0.2, 0.3],
            "lo": [-0.1, float("nan"), 0.0, 0.0, -0.3, 0.1],
            "hi": [0.1, float("nan"), 0.0, 0.2, -0.1, 0.5],
            "original": [0.5, 0.4, 0.6, 0.7, 0.3, 0.2],
            "perturbed": [0.5, 0.4, 0.6, 0.8, 0.1, 0.5],
        }
    )


def test_paired_figure_draws_each_difference_at_its_value():
    fig = paired_figure(_contamination_table())
    want = data_values(fig, "x")
    got = drawn_markers(fig, "x")
    assert close(got, want, 0.005), f"drawn {sorted(got)} vs data {sorted(want)}"


def test_grouped_bars_are_drawn_at_their_height():
    fig = scores_figure(_contamination_table(), metric="file_f2")
    want = data_values(fig, "y")
    got = drawn_bars(fig)
    assert close(got, want, 0.005), f"drawn {sorted(got)} vs data {sorted(want)}"


@pytest.mark.slow
def test_pareto_points_are_drawn_at_their_accuracy():
    t = pl.DataFrame(
        {
            "policy": ["heuristic:turns=2", "heuristic:turns=4", "bm25"],
            "turns": [2.0, 4.0, 1.0],
            "file_f2": [0.4, 0.55, 0.3],
            "file_f2_lo": [0.3, 0.45, 0.2],
            "file_f2_hi": [0.5, 0.65, 0.4],
        }
    )
    fig = pareto_figure(t, "turns")
    assert close(drawn_markers(fig, "y"), data_values(fig, "y"), 0.005)
    assert close(drawn_markers(fig, "x"), data_values(fig, "x"), 0.02)


def test_the_check_sees_a_dodged_marker():
    """The check fails on the bug it is for: the old layout (markers grouped along the value axis)."""
    fig = paired_figure(_contamination_table())
    fig.update_traces(orientation="v")
    assert not close(drawn_markers(fig, "x"), data_values(fig, "x"), 0.005)
