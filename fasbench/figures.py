"""One plotly template for papers, and ``save(fig, name)`` exporting PDF, SVG and PNG.

Static export goes through kaleido, which drives a Chromium browser; the Makefile installs
Debian's ``chromium``. ``BROWSER_PATH`` points kaleido at it when it is not found on its own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import warnings
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from fasbench.paths import figures_dir

# Okabe–Ito: a colour-blind-safe qualitative palette.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

# Fixed colours for the concepts that recur across figures.
CATEGORY_COLORS = {"search": "#0072B2", "read": "#56B4E9", "edit": "#D55E00", "test": "#E69F00", "other": "#999999"}
TOOL_COLORS = {
    "grep_search": "#0072B2", "Grep": "#0072B2",
    "view_file": "#56B4E9", "Read": "#56B4E9",
    "view_directory": "#009E73", "Glob": "#009E73",
    "bash": "#E69F00", "report_back": "#CC79A7",
}

WIDTH, HEIGHT = 700, 420  # pixels at scale 1 (≈ a single-column figure at 3x)

pio.templates["paper"] = go.layout.Template(
    layout=dict(
        font=dict(family="DejaVu Sans, Arial, sans-serif", size=13, color="#222"),
        title=dict(font=dict(size=15), x=0.02, xanchor="left"),
        colorway=PALETTE,
        paper_bgcolor="white",
        plot_bgcolor="white",
        margin=dict(l=60, r=20, t=50, b=50),
        xaxis=dict(showline=True, linecolor="#444", ticks="outside", gridcolor="#eee", zeroline=False),
        yaxis=dict(showline=True, linecolor="#444", ticks="outside", gridcolor="#eee", zeroline=False),
        legend=dict(bgcolor="rgba(255,255,255,0.8)", borderwidth=0),
    )
)
pio.templates.default = "paper"

FORMATS = ("pdf", "svg", "png")


def _browser() -> None:
    if os.environ.get("BROWSER_PATH"):
        return
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        exe = shutil.which(name)
        if exe:
            os.environ["BROWSER_PATH"] = exe
            return


def save(fig: go.Figure, name: str, formats=FORMATS, width: int | None = None, height: int | None = None,
         directory: str | Path | None = None) -> list[Path]:
    """Write ``figures/<name>.{pdf,svg,png}`` (and the plotly JSON beside them) and return the
    image paths. ``name`` is a file stem."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"figure name must be a plain file stem, got {name!r}")
    _browser()
    out_dir = Path(directory) if directory else figures_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    w = width or fig.layout.width or WIDTH
    h = height or fig.layout.height or HEIGHT
    spec = out_dir / f"{name}.json"  # kept so that `make figures` can re-export without re-running
    spec.write_text(pio.to_json(fig), encoding="utf-8")
    paths = [out_dir / f"{name}.{fmt}" for fmt in formats]
    scales = [3 if fmt == "png" else 1 for fmt in formats]
    server = _kaleido_server()
    try:  # all formats in one browser session
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            pio.write_images([fig] * len(paths), paths, format=list(formats), scale=scales, width=w, height=h)
        return paths
    except Exception:
        if not server:
            raise
    _stop_kaleido_server()  # the shared browser died: export the slow way
    for p, fmt, sc in zip(paths, formats, scales):
        pio.write_image(fig, p, format=fmt, width=w, height=h, scale=sc)
    return paths


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


_SERVER: bool | None = None  # None: not tried yet; True: kaleido's shared browser is running


def _kaleido_server() -> bool:
    """Start kaleido's persistent browser once per process: each figure then costs about a
    second instead of a Chromium start per format (~10 s on a busy machine)."""
    global _SERVER
    if _SERVER is None and _in_kernel():
        # Inside a Jupyter kernel the server's browser thread was seen to leave cell executions
        # without their reply (papermill then waits forever); there each save starts a browser.
        _SERVER = False
    if _SERVER is None:
        try:
            import kaleido

            kaleido.start_sync_server(silence_warnings=True)
            atexit.register(_stop_kaleido_server)
            _SERVER = True
        except Exception:
            _SERVER = False
    return _SERVER


def _stop_kaleido_server() -> None:
    global _SERVER
    if _SERVER:
        try:
            import kaleido

            kaleido.stop_sync_server(silence_warnings=True)
        except Exception:
            pass
    _SERVER = False


def export_all(directory: str | Path | None = None) -> list[Path]:
    """Re-export every figure whose plotly JSON was kept beside it (``figures/<name>.json``)."""
    out_dir = Path(directory) if directory else figures_dir()
    written = []
    for j in sorted(out_dir.glob("*.json")):
        fig = pio.read_json(j)
        written += save(fig, j.stem, directory=out_dir)
    return written
