"""Drawn values equal the data: each figure is rendered to SVG by the real browser (kaleido, Chromium)
and every marker's and bar's position is mapped back through the axis to a value, which must equal the
trace's data. Catches what a JSON check cannot: plotly.js moving markers at draw time (notebook 11's
paired figure drew differences of 0.0 at ±0.27 with ``scattermode="group"`` dodging along the value
axis). Covers the kinds fasbench draws: scatter markers (value on x or y, categories grouped), error
bars, grouped bars, log axes (every tick label must be the value at its place: plotly's default log
axis labels 2 and 5 between decades, which read as 2 and 5), and the audit heatmap (each cell's drawn
colour must mean its verdict: red gamed, blue penalised, grey blind)."""

from __future__ import annotations

import base64
import io
import math
import re

import plotly.io as pio
import polars as pl
import pytest
from PIL import Image

from fasbench.rl.mini import before_after_figure
from fasbench.rl.parallel_study import step_curves
from fasbench.stats.figures import stop_kaleido_server
from fasbench.studies.contamination import paired_figure, scores_figure
from fasbench.studies.reward_plots import audit_heatmap
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


def _svg(fig) -> str:
    try:
        return pio.to_image(fig, format="svg").decode()
    except Exception:  # kaleido's shared browser (fasbench.stats.figures.start_kaleido_server) died: as save() does,
        stop_kaleido_server()  # stop it and draw with a browser of this call's own
        return pio.to_image(fig, format="svg").decode()


def _is_log(fig, a: str) -> bool:
    return fig.layout[f"{a}axis"].type == "log"


def _ticks(svg: str, a: str) -> list[tuple[float, float]]:
    """(absolute px along the axis, value its label reads) of every numeric tick label of axis ``a``."""
    return [
        (float((x, y)[a.startswith("y")]), float(t.replace("\u2212", "-")))
        for x, y, t in re.findall(_TICK.format(a=a), svg)
        if re.fullmatch(r"[-\u2212]?[\d.]+", t)
    ]


def _render(fig):
    """The SVG the browser draws, the plot area's offset and, per axis, value = a + b * absolute px
    (of log10(value) on a log axis; fitted through the axis's own first and last tick labels, so the
    mapping is the one actually drawn)."""
    svg = _svg(fig)
    left, top = (float(v) for v in _PLOT.search(svg).groups())
    axes = {}
    for a in ("x", "y"):
        ticks = [
            (p, math.log10(v) if _is_log(fig, a) else v) for p, v in _ticks(svg, a) if v > 0 or not _is_log(fig, a)
        ]
        if len(ticks) >= 2:
            (p0, v0), (p1, v1) = ticks[0], ticks[-1]
            b = (v1 - v0) / (p1 - p0)
            axes[a] = (v0 - b * p0, b)
    return svg, left, top, axes


def misread_ticks(fig, a: str) -> list[float]:
    """The tick labels of axis ``a`` that do not read the value at their place (on the line through the
    first and last label; log10 on a log axis): plotly's 2 and 5 between decades are such labels."""
    svg, _left, _top, axes = _render(fig)
    c, b = axes[a]
    log = _is_log(fig, a)
    out = []
    for p, v in _ticks(svg, a):
        at = 10 ** (c + b * p) if log else c + b * p
        if abs(at - v) > 0.02 * max(abs(v), abs(at)):
            out.append(v)
    return out


def drawn_markers(fig, value_axis: str) -> list[float]:
    """The value of every drawn marker on ``value_axis`` ('x' or 'y'), in drawing order."""
    svg, left, top, axes = _render(fig)
    a, b = axes[value_axis]
    k, off = (0, left) if value_axis == "x" else (1, top)
    vals = [a + b * (float(xy[k]) + off) for xy in _POINT.findall(svg)]
    return [10**v for v in vals] if _is_log(fig, value_axis) else vals


_PANEL = re.compile(r'<g class="x(\d*)y\1" transform="translate\(([-\d.e]+),([-\d.e]+)\)')


def drawn_panels(fig, bars: bool = False) -> dict[str, list[float]]:
    """Per subplot ('' for the first, '2', ...): the y value of every drawn marker (or the height of every
    drawn bar), read through that subplot's own y tick labels."""
    svg = _svg(fig)
    over = svg[svg.index('class="overplot"') :]
    found = list(_PANEL.finditer(over))
    out = {}
    for i, m in enumerate(found):
        n, top = m.group(1), float(m.group(3))
        part = over[m.end() : found[i + 1].start() if i + 1 < len(found) else len(over)]
        ticks = _ticks(svg, f"y{n}")
        (p0, v0), (p1, v1) = ticks[0], ticks[-1]
        b = (v1 - v0) / (p1 - p0)
        if bars:
            out[n] = [b * (float(y1) - float(y0)) for _x0, y0, y1, _x1 in _BAR.findall(part)]
        else:
            out[n] = [v0 + b * (float(y) + top - p0) for _x, y in _POINT.findall(part)]
    return out


def data_panels(fig) -> dict[str, list[float]]:
    out = {}
    for tr in fig.data:
        n = (tr.yaxis or "y")[1:]
        out.setdefault(n, []).extend(float(v) for v in tr.y if v is not None)
    return out


def panels_close(drawn, data, tol) -> bool:
    return sorted(drawn) == sorted(data) and all(close(drawn[n], data[n], tol) for n in data)


_IMAGE = re.compile(r'<image[^>]*?height="([\d.]+)" width="([\d.]+)"[^>]*?href="data:image/png;base64,([^"]+)"')


def drawn_cell_colours(fig) -> dict[tuple[str, str], str]:
    """Per heatmap cell (y category, x category): the colour class drawn at its centre by the topmost
    heatmap layer that paints it: ``red``, ``blue`` or ``grey`` (the PNG each heatmap trace is drawn as)."""
    svg = _svg(fig)
    xs, ys = list(fig.data[0].x), list(fig.data[0].y)
    out = {}
    for h, w, data in _IMAGE.findall(svg):  # one image per heatmap trace, in drawing order, over the plot area
        img = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGBA")
        sx, sy = img.width / float(w), img.height / float(h)
        for i, yv in enumerate(ys):  # the y axis is reversed: the first row at the top
            for j, xv in enumerate(xs):
                px = (j + 0.5) * float(w) / len(xs) * sx
                py = (i + 0.5) * float(h) / len(ys) * sy
                r, g, b, alpha = img.getpixel((int(px), int(py)))
                if alpha < 128:
                    continue
                out[(yv, xv)] = "grey" if max(r, g, b) - min(r, g, b) < 20 else ("red" if r > b else "blue")
    return out


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


def _pareto_latency():
    t = pl.DataFrame(
        {
            "policy": ["heuristic:turns=1", "heuristic:turns=2", "bm25", "dense"],
            "wall_s": [0.0017, 0.68, 0.67, 15.9],
            "file_f2": [0.0, 0.52, 0.36, 0.1],
            "file_f2_lo": [0.0, 0.15, 0.04, 0.0],
            "file_f2_hi": [0.0, 0.89, 0.68, 0.3],
        }
    )
    return pareto_figure(t, "wall_s")


@pytest.mark.slow
def test_log_axis_markers_and_labels_read_their_values():
    """notebook 03's latency axis (figures.log_axis): markers at their wall time, every label a value."""
    fig = _pareto_latency()
    got, want = sorted(drawn_markers(fig, "x")), sorted(data_values(fig, "x"))
    assert len(got) == len(want) and all(abs(g - w) <= 0.03 * w for g, w in zip(got, want)), f"{got} vs {want}"
    assert misread_ticks(fig, "x") == []


@pytest.mark.slow
def test_the_check_sees_a_misread_log_label():
    """The check fails on the bug it is for: plotly's default log axis (labels 2 and 5 between decades)."""
    fig = _pareto_latency()
    fig.update_xaxes(dtick=None, exponentformat=None)
    assert misread_ticks(fig, "x")


def _audit_table():
    rows = [
        ("all-seen", "relace-f2", -0.36, "penalised"),
        ("all-seen", "fastcontext", -14.0, "penalised"),
        ("all-seen", "line-f1", -0.05, "blind"),
        ("top50", "relace-f2", 0.4, "gamed"),
        ("top50", "fastcontext", 3.2, "gamed"),
        ("top50", "line-f1", 0.0, "blind"),
        ("nothing", "relace-f2", -0.02, "blind"),
        ("nothing", "fastcontext", -1.2, "penalised"),
        ("nothing", "line-f1", 0.08, "gamed"),
    ]
    return pl.DataFrame([dict(zip(("cheat", "reward", "diff", "verdict"), r)) for r in rows])


_MEANS = {"gamed": "red", "penalised": "blue", "blind": "grey"}


def test_audit_heatmap_colour_means_the_verdict():
    """notebook 04's audit: red only where the cheat games the reward; a blind cell (even with a
    negative difference) is grey, not red."""
    tab = _audit_table()
    fig = audit_heatmap(tab)
    drawn = drawn_cell_colours(fig)
    want = {(r["cheat"], r["reward"]): _MEANS[r["verdict"]] for r in tab.iter_rows(named=True)}
    assert drawn == want


def test_the_check_sees_a_wrong_verdict_colour():
    """The check fails on a heatmap whose colours do not mean the verdicts (penalised drawn red)."""
    tab = _audit_table()
    fig = audit_heatmap(tab)
    fig.data[1].colorscale = fig.data[2].colorscale
    want = {(r["cheat"], r["reward"]): _MEANS[r["verdict"]] for r in tab.iter_rows(named=True)}
    assert drawn_cell_colours(fig) != want


def _steps():
    return {
        f"seed {s}": [
            {
                "step": i,
                "reward": 0.1 * i + 0.05 * s,
                "turns": 5 - 0.4 * i,
                "calls_per_turn": 1 + 0.25 * i,
                "first_parallel": 0.15 * i,
                "zero_var_share": 0.6 - 0.1 * i + 0.02 * s,
            }
            for i in range(1, 6)
        ]
        for s in (0, 1)
    }


@pytest.mark.slow
def test_rl_step_curves_draw_each_value_in_its_panel():
    """notebook 06's rl_par_curves (two rows of panels): each marker at its value in its own panel."""
    fig = step_curves(_steps())
    assert panels_close(drawn_panels(fig), data_panels(fig), 0.01)


@pytest.mark.slow
def test_the_panel_check_sees_a_panel_whose_labels_lie():
    """The check fails where a panel's tick labels do not read the drawn values."""
    fig = step_curves(_steps())
    fig.update_yaxes(tickvals=[0, 0.5, 1], ticktext=["0", "5", "10"], row=1, col=1)
    assert not panels_close(drawn_panels(fig), data_panels(fig), 0.01)


def _before_after():
    rows = []
    for m, (b, a) in {
        "turns": (4.0, 2.5),
        "calls_per_turn": (1.2, 2.0),
        "file_f2": (0.6, 0.55),
        "reward": (0.3, 0.5),
    }.items():
        rows.append(
            {"measure": m, "before": b, "before_lo": 0.8 * b, "before_hi": 1.2 * b}
            | {"after": a, "after_lo": 0.8 * a, "after_hi": 1.2 * a}
        )
    return pl.DataFrame(rows)


@pytest.mark.slow
def test_rl_before_after_bars_are_drawn_at_their_height_in_each_panel():
    t = _before_after()
    fig = before_after_figure({"seed 0": t, "seed 1": t.with_columns(pl.col("after") * 0.9)})
    assert panels_close(drawn_panels(fig, bars=True), data_panels(fig), 0.01)
