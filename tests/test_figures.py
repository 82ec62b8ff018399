"""Figure export records its provenance in the JSON sidecar and the PDF metadata, and writes whole
figures: each PDF, rendered by poppler, is the PNG's picture, with no ink cut at its edges."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest
from PIL import Image
from plotly.subplots import make_subplots
from pypdf import PdfReader

from fasbench.base.provenance import code_version
from fasbench.stats import figures
from fasbench.studies.reward_plots import audit_heatmap, reward_views_figure

N_TASKS = 7  # a stand-in for a notebook parameter (read from the caller's globals by set_context)


@pytest.mark.slow
def test_save_records_provenance_in_sidecar_and_pdf(tmp_path):
    figures.set_context("03_search_baselines")  # its parameters cell assigns N_TASKS, among others
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    paths = figures.save(fig, "prov_test", directory=tmp_path, inputs=["runs/a", "runs/b"], formats=("pdf",))
    side = figures.provenance(tmp_path / "prov_test.json")
    pdf = figures.provenance(paths[0])
    assert side == pdf
    assert side["notebook"] == "03_search_baselines"
    assert side["parameters"]["N_TASKS"] == 7
    assert side["inputs"] == ["runs/a", "runs/b"]
    assert side["code_version"] == code_version() and side["code_version"]["describe"]
    # the sidecar is still a plotly figure that `make figures` re-exports, keeping the provenance
    again = figures.export_all(tmp_path)
    assert again and figures.provenance(tmp_path / "prov_test.pdf")["created"] == side["created"]
    assert json.loads((tmp_path / "prov_test.json").read_text())["data"][0]["y"] == [3, 4]
    figures._CONTEXT.clear()


# --- Whole figures: each exported PDF, rendered by poppler, is the PNG's picture and has no ink at its edges ---
#
# Figures typical of the notebooks: a legend under the plot, a long x-axis title under rotated tick labels,
# multi-row subplots with axis titles, the audit heatmap and the reward views (legend at the container's
# bottom) of fasbench/studies/reward_plots.py. Kaleido printed PDFs with 0.1-inch print margins: Chromium shrank
# the figure into the printable area and cut off its bottom (axis titles, legends).

EDGE = 2  # CSS px at each edge of the page that hold no ink
TOL = 2  # CSS px by which the ink's bounding box in the PDF may differ from the PNG's


def _notebook_figures() -> dict[str, go.Figure]:

    rng = np.random.default_rng(0)
    figs = {}
    fig = go.Figure([go.Scatter(x=list(range(10)), y=rng.random(10), name=f"policy {i}") for i in range(5)])
    figs["legend_under"] = fig.update_layout(
        title="Legend under the plot", xaxis_title="step", legend=dict(orientation="h", y=-0.2)
    )
    fig = go.Figure(go.Bar(x=[f"pytest-dev/pytest {i}" for i in range(8)], y=rng.random(8)))
    figs["long_xtitle"] = fig.update_layout(
        title="A long x-axis title",
        xaxis_tickangle=-45,
        xaxis_title="a long x-axis title that names the unit, the task set and its size (swebench-lite:fasbench-test, n=98)",
    )
    fig = make_subplots(rows=3, cols=2, subplot_titles=[f"panel {i}" for i in range(6)])
    for r in range(1, 4):
        for c in range(1, 3):
            fig.add_trace(go.Scatter(x=list(range(5)), y=rng.random(5), showlegend=False), row=r, col=c)
            fig.update_xaxes(title_text="turns", row=r, col=c)
            fig.update_yaxes(title_text="F2", row=r, col=c)
    figs["multirow"] = fig.update_layout(title="Multi-row subplots", height=700)
    cheats, rewards = ["all-seen", "all-files", "top-grep", "empty"], ["relace", "fastcontext", "cognition"]
    figs["audit"] = audit_heatmap(
        pl.DataFrame(
            [
                {
                    "cheat": c,
                    "reward": r,
                    "diff": float(rng.normal()) * (10 if r == "fastcontext" else 0.3),
                    "verdict": ("gamed", "blind", "penalised")[i % 3],
                }
                for i, (c, r) in enumerate((c, r) for c in cheats for r in rewards)
            ]
        )
    )
    figs["reward_views"] = reward_views_figure(
        pl.DataFrame(
            [
                {
                    "policy": p,
                    "task_id": f"t{i}",
                    "F2 (Relace A2)": round(float(rng.random()), 1),
                    "hybrid F1 (Relace A1)": round(float(rng.random()), 1),
                    "F0.5 (Cognition)": round(float(rng.random()), 1),
                }
                for p in ("honest", "bm25")
                for i in range(6)
            ]
        )
    )
    return figs


NOTEBOOK_FIGURES = ["legend_under", "long_xtitle", "multirow", "audit", "reward_views"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    figs = _notebook_figures()
    assert sorted(figs) == sorted(NOTEBOOK_FIGURES)
    sizes = {}
    for name, fig in figs.items():
        figures.save(fig, name, directory=out)
        sizes[name] = (fig.layout.width or figures.WIDTH, fig.layout.height or figures.HEIGHT)
    return out, sizes


def _ink(img) -> np.ndarray:
    """Pixels darker than near-white, on white (the PNG may carry an alpha channel)."""
    img = img.convert("RGBA")
    flat = Image.new("RGBA", img.size, "white")
    flat.alpha_composite(img)
    return np.asarray(flat.convert("L")) < 230


def _render_pdf(pdf: Path, width: int, height: int, out: Path):
    """Page 1 of ``pdf`` rasterised by poppler's pdftoppm to ``width`` x ``height`` pixels."""
    exe = shutil.which("pdftoppm")
    if exe is None:
        pytest.fail("pdftoppm not found: install Debian's poppler-utils (`make chromium` does)")
    subprocess.run(
        [
            exe,
            "-png",
            "-singlefile",
            "-f",
            "1",
            "-l",
            "1",
            "-scale-to-x",
            str(width),
            "-scale-to-y",
            str(height),
            str(pdf),
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return Image.open(f"{out}.png")


def _bbox(mask) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(mask)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOK_FIGURES)
def test_pdf_is_whole_and_the_pngs_picture(exported, name, tmp_path):
    exported, sizes = exported
    w, h = sizes[name]
    png = Image.open(exported / f"{name}.png")
    scale = png.width / w
    assert png.size == (round(w * scale), round(h * scale)) and scale == 3
    svg = (exported / f"{name}.svg").read_text(encoding="utf-8")
    m = re.search(r'<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"', svg)
    assert m and (float(m[1]), float(m[2])) == (w, h), f"{name}.svg is not {w}x{h}"

    reader = PdfReader(str(exported / f"{name}.pdf"))
    assert len(reader.pages) == 1, f"{name}.pdf has {len(reader.pages)} pages"
    box = reader.pages[0].mediabox
    page_w, page_h = float(box.width) / 0.75, float(box.height) / 0.75  # points -> CSS px
    assert abs(page_w - w) <= 1 and abs(page_h - h) <= 1, (
        f"{name}.pdf page is {page_w:.1f}x{page_h:.1f} px, not {w}x{h}"
    )

    pdf_ink = _ink(_render_pdf(exported / f"{name}.pdf", png.width, png.height, tmp_path / name))
    png_ink = _ink(png)
    band = round(EDGE * scale)
    for label, ink in (("PDF", pdf_ink), ("PNG", png_ink)):
        edges = [
            e
            for e, strip in (
                ("top", ink[:band]),
                ("bottom", ink[-band:]),
                ("left", ink[:, :band]),
                ("right", ink[:, -band:]),
            )
            if strip.any()
        ]
        assert not edges, f"{name} {label}: ink within {EDGE} px of the {', '.join(edges)} edge (cut off)"
    off = [round((a - b) / scale, 1) for a, b in zip(_bbox(pdf_ink), _bbox(png_ink))]
    assert max(map(abs, off)) <= TOL, (
        f"{name}.pdf: its ink (left, top, right, bottom) lies {off} CSS px off the PNG's: the PDF is shrunk, "
        "shifted or clipped"
    )


def test_a_subtitle_under_the_title_is_wrapped_at_its_own_size():
    """A task-set label under a title (``title<br><sup>label</sup>``) wider than the figure is wrapped
    into several <sup> lines (it ran past the right edge of notebook 03's figures)."""
    from fasbench.stats.figures import _wrap

    label = (
        "swebench-lite+swebench-verified:fasbench-test (fasbench's own test split, 98 of Lite's 300 test tasks, "
        "145 of Verified's 500 test tasks, 7 drawn; offline sdist corpora)"
    )
    out = _wrap(f"File-level F2 vs turns<br><sup>{label}</sup>", 16, 600)
    head, *subs = out.split("<br>")
    assert head == "File-level F2 vs turns" and len(subs) >= 2
    assert all(s.startswith("<sup>") and s.endswith("</sup>") and len(s) - 11 <= 600 / (0.6 * 16 * 0.7) for s in subs)
    assert " ".join(s[5:-6] for s in subs) == label


def test_column_presets_and_titles_dropped(tmp_path, monkeypatch):
    """Issue 38 item 3: single- and double-column presets (3.3 in, 6.9 in) and an option to drop titles."""
    from fasbench.stats.figures import PRESETS, paper_layout, save

    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    fig.update_layout(title="A baked-in title")
    one, w, h = paper_layout(fig, "single", title=False)
    assert (w, h) == (round(3.3 * 96), round(2.4 * 96)) and one.layout.title.text is None
    assert one.layout.font.size == round(PRESETS["single"]["font_pt"] * 96 / 72, 1)
    two, w2, _ = paper_layout(fig, "double")
    assert w2 == round(6.9 * 96) and two.layout.title.text == "A baked-in title"
    assert fig.layout.title.text == "A baked-in title"  # the caller's figure is left as it was
    with pytest.raises(ValueError, match="not one of single, double"):
        paper_layout(fig, "triple")
    monkeypatch.setenv("FASBENCH_FIGURE_PRESET", "single")
    monkeypatch.setenv("FASBENCH_FIGURE_TITLES", "0")
    (svg,) = save(fig, "preset_demo", formats=("svg",), directory=tmp_path)
    text = svg.read_text()
    assert 'width="317"' in text and "A baked-in title" not in text
    side = json.loads((tmp_path / "preset_demo.json").read_text())
    assert side["layout"]["title"]["text"] == "A baked-in title"  # the data keeps it
    assert side["fasbench_provenance"]["export"] == {
        "preset": "single",
        "title": False,
        "width_px": 317,
        "height_px": 230,
    }


def test_a_figure_asks_for_its_height_at_a_preset():
    """``layout.meta["fasbench_height_in"]`` (a number, or per preset) sets the exported height at a
    column preset; without it, or at a preset it does not name, the preset's own height holds."""
    tall = go.Figure(layout=dict(meta={figures.HEIGHT_META: {"single": 4.0}}))
    assert figures.paper_layout(tall, "single")[1:] == (round(3.3 * 96), round(4.0 * 96))
    assert figures.paper_layout(tall, "double")[2] == round(3.2 * 96)
    assert figures.paper_layout(go.Figure(layout=dict(meta={figures.HEIGHT_META: 3})), "double")[2] == 3 * 96
    assert figures.paper_layout(go.Figure(), "single")[2] == round(2.4 * 96)
    assert figures.paper_layout(tall, "single", height=200)[2] == 200  # save(..., height=) still wins


def test_log_axis_labels_decades_only():
    fig = figures.log_axis(go.Figure(go.Scatter(x=[0.002, 50], y=[1, 2])), "x")
    assert (fig.layout.xaxis.type, fig.layout.xaxis.dtick, fig.layout.xaxis.exponentformat) == ("log", 1, "none")
    assert fig.layout.yaxis.type is None
    with pytest.raises(ValueError, match="'z'"):
        figures.log_axis(fig, "z")
