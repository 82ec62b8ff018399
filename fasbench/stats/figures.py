"""One plotly template for papers, and ``save(fig, name)`` exporting PDF, SVG and PNG.

Static export goes through kaleido, which drives a Chromium browser; the Makefile installs
Debian's ``chromium``. ``BROWSER_PATH`` points kaleido at it when it is not found on its own.

Whole figures: the three formats show one picture. Kaleido prints a PDF with 0.1-inch print margins,
which shrank the figure and cut off its bottom (axis titles, legends); ``save`` has it print without
margins. The template's axes grow the margins for their tick labels and titles (``automargin``), and
titles wider than the figure are wrapped onto lines (plotly never wraps). ``tests/test_figures.py``
renders each PDF with poppler and checks it against the PNG, with no ink at the page's edges.

Provenance: every saved figure records what produced it (the code version, the notebook, its
parameters, the input runs, the time) under ``"fasbench_provenance"`` in its plotly JSON sidecar and,
as JSON in the ``/fasbench:provenance`` key plus ``/Subject`` and ``/Creator``, in its PDF's document
information. A notebook calls ``figures.set_context("03_search_baselines")`` once (the values of the
names in its ``parameters`` cell are taken from the caller); ``save(..., inputs=[run_dir, ...])`` adds
the input runs of one figure. ``provenance(path)`` reads it back.
"""

from __future__ import annotations

import ast
import atexit
import inspect
import json
import os
import shutil
import sys
import warnings
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from pypdf import PdfReader, PdfWriter

from fasbench.base.paths import UnsafeName, child, figures_dir, repo_root, safe_name
from fasbench.base.provenance import code_version, timestamp

# Okabe–Ito: a colour-blind-safe qualitative palette.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

# One colour per kind of action, in every figure: a tool call's kind in the replay (fasbench.tools.KINDS;
# a tool's kind: fasbench.tools.tool_kind(toolset, name)) and an action's category in the trajectory
# figures (fasbench.trajectories: read/search/edit/test/other) share it, so that orange never means
# "edit" in one figure and a search tool in another. Both tool sets share it: search blue, read light
# blue, list green, report purple; edit vermillion, test orange, other grey.
KIND_COLORS = {
    "search": "#0072B2",
    "read": "#56B4E9",
    "list": "#009E73",
    "report": "#CC79A7",
    "edit": "#D55E00",
    "test": "#E69F00",
    "other": "#999999",
}
# Outcome colours: none of them is a colour of a trajectory category (edit's vermillion against
# "unresolved" was read as the same thing); green/purple are told apart with red-green colour
# blindness too. (They are the list/report colours, kinds no trajectory figure shows.)
OUTCOME_COLORS = {True: "#009E73", False: "#CC79A7", None: "#666666"}
SEED_MARKER = dict(symbol="diamond", size=11, color="#000000", line=dict(color="white", width=1))


def kind_color(kind: str | None, fallback: str = "#999999") -> str:
    """The figure colour of a kind (``fallback`` for None: a tool of no known tool set)."""
    return KIND_COLORS.get(kind or "", fallback)


def log_axis(fig: go.Figure, axis: str = "x", **where) -> go.Figure:
    """Make ``axis`` ('x' or 'y'; every such axis of a faceted figure, or those ``where`` selects: ``row=``,
    ``col=``) logarithmic with a tick label at each decade only, written out (0.01, 1, 100): plotly's default
    log axis also labels 2 and 5 between decades, small digits that read as values on the axis."""
    if axis not in ("x", "y"):
        raise ValueError(f"log_axis: axis {axis!r} is not 'x' or 'y'")
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(type="log", dtick=1, exponentformat="none", minor=dict(ticks="outside", ticklen=2, dtick="D1"), **where)
    return fig


WIDTH, HEIGHT = 700, 420  # pixels at scale 1 (≈ a single-column figure at 3x)

# Column-width presets for a paper (``save(..., preset=)`` or ``FASBENCH_FIGURE_PRESET``): the page size in
# inches (the PDF is printed at 96 px per inch, so these are the printed sizes) and the font in points.
PRESETS = {
    "single": {"width_in": 3.3, "height_in": 2.4, "font_pt": 8.0},
    "double": {"width_in": 6.9, "height_in": 3.2, "font_pt": 9.0},
}
PX_PER_IN = 96


HEIGHT_META = "fasbench_height_in"


def bottom_legend(**extra) -> dict:
    """A horizontal legend at the bottom-left of the whole figure (``xref``/``yref`` ``container``): at a
    column preset :func:`paper_layout` replaces the margins, and a container-anchored legend still makes room
    for itself under the plot. ``extra``: further legend settings (``title``, ``itemwidth``)."""
    return dict(orientation="h", xref="container", x=0, yref="container", y=0, yanchor="bottom", **extra)


def preset_height(fig: go.Figure, preset: str) -> float | None:
    """The height in inches a figure asks for at ``preset`` (``fig.layout.meta["fasbench_height_in"]``:
    a number or ``{preset: inches}``), for a figure that needs more than the preset's height (a heatmap
    of many rows, a legend under the plot); None when it asks for none."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    ask = meta.get(HEIGHT_META)
    ask = ask.get(preset) if isinstance(ask, dict) else ask
    return float(ask) if isinstance(ask, (int, float)) and 0 < ask <= 9 else None


def paper_layout(
    fig: go.Figure, preset: str | None = None, title: bool = True, width: int | None = None, height: int | None = None
) -> tuple[go.Figure, int, int]:
    """A copy of ``fig`` laid out for export and its width and height in pixels: at a column-width
    :data:`PRESETS` entry (its size, a font in points, tighter margins; the height the figure asks for with
    :func:`preset_height`, if any) when ``preset`` names one, and
    without its baked-in title (the caption says it in a paper) when ``title`` is False."""
    out = go.Figure(fig)
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"figure preset {preset!r}: not one of {', '.join(PRESETS)}")
        p = PRESETS[preset]
        px = round(p["font_pt"] * PX_PER_IN / 72, 1)
        tall = preset_height(fig, preset) or p["height_in"]
        width, height = width or round(p["width_in"] * PX_PER_IN), height or round(tall * PX_PER_IN)
        out.update_layout(
            font_size=px,
            title_font_size=round(px * 1.1, 1),
            legend_font_size=px,
            margin=dict(
                l=round(px * 4),
                r=round(px),
                t=round(px * (4 if title and out.layout.title.text else 1.5)),
                b=round(px * 3.5),
            ),
        )
        out.update_annotations(font_size=px)
    if not title:
        out.layout.title.text = None
        out.update_layout(margin_t=round((out.layout.font.size or 13) * 1.5))
    return out, width or fig.layout.width or WIDTH, height or fig.layout.height or HEIGHT


pio.templates["paper"] = go.layout.Template(
    layout=dict(
        font=dict(family="DejaVu Sans, Arial, sans-serif", size=13, color="#222"),
        title=dict(font=dict(size=15), x=0.02, xanchor="left"),
        colorway=PALETTE,
        paper_bgcolor="white",
        plot_bgcolor="white",
        margin=dict(l=60, r=20, t=50, b=50),
        # automargin: tick labels and axis titles grow the margins instead of being cut at the figure's
        # edge (the margins above are minimums; a fresh Template does not inherit plotly's automargin).
        xaxis=dict(
            showline=True,
            linecolor="#444",
            ticks="outside",
            gridcolor="#eee",
            zeroline=False,
            automargin=True,
            title=dict(standoff=12),
        ),
        yaxis=dict(
            showline=True,
            linecolor="#444",
            ticks="outside",
            gridcolor="#eee",
            zeroline=False,
            automargin=True,
            title=dict(standoff=12),
        ),
        legend=dict(bgcolor="rgba(255,255,255,0.8)", borderwidth=0),
    )
)
pio.templates.default = "paper"

FORMATS = ("pdf", "svg", "png")
PROVENANCE_KEY = "fasbench_provenance"
PDF_KEY = "/fasbench:provenance"
_CONTEXT: dict = {}


def _jsonable(v):
    try:
        json.dumps(v)
        return v
    except TypeError:
        return repr(v)


def notebook_parameters(notebook: str, namespace: dict) -> dict:
    """The names assigned in the ``parameters``-tagged cell of ``notebooks/<notebook>.ipynb``, with their
    values in ``namespace`` (so papermill's overrides are what is recorded)."""
    try:
        path = child(repo_root() / "notebooks", str(notebook).removesuffix(".ipynb"), ".ipynb", "notebook")
    except UnsafeName:  # not a notebook of notebooks/: no parameters cell to read, as for a missing one
        return {}
    if not path.exists():
        return {}
    names: list[str] = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
                    names.append(node.id)
    return {n: _jsonable(namespace[n]) for n in names if n in namespace}


def set_context(notebook: str, parameters: dict | None = None, inputs=None) -> dict:
    """Record, for every figure saved afterwards in this process, the notebook that saves it and its
    parameters (default: the parameters cell's names, valued in the caller's globals) and input runs."""
    if parameters is None:
        frame = inspect.currentframe().f_back
        parameters = notebook_parameters(notebook, frame.f_globals if frame else {})
    _CONTEXT.clear()
    _CONTEXT.update(
        notebook=notebook,
        parameters={k: _jsonable(v) for k, v in parameters.items()},
        inputs=[str(i) for i in (inputs or [])],
    )
    return dict(_CONTEXT)


def figure_provenance(name: str, inputs=None, extra: dict | None = None) -> dict:
    """What a figure saved now records: code version, notebook (or script), parameters, inputs, time."""
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else None
    return {
        "figure": name,
        "code_version": code_version(),
        "notebook": _CONTEXT.get("notebook"),
        "script": None if _CONTEXT.get("notebook") else script,
        "parameters": _CONTEXT.get("parameters", {}),
        "inputs": list(dict.fromkeys(_CONTEXT.get("inputs", []) + [str(i) for i in (inputs or [])])),
        **(extra or {}),
        "created": timestamp(),
    }


def _stamp_pdf(path: Path, prov: dict) -> None:
    """Write the provenance into the PDF's document information (rewritten in place)."""
    reader = PdfReader(str(path))
    writer = PdfWriter(clone_from=reader)
    writer.add_metadata(
        {
            "/Title": prov["figure"],
            "/Subject": f"{prov.get('notebook') or prov.get('script') or ''} @ {prov['code_version']['describe']}",
            "/Creator": "fasbench.stats.figures.save (plotly + kaleido)",
            PDF_KEY: json.dumps(prov, sort_keys=True),
        }
    )
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        writer.write(f)
    os.replace(tmp, path)


def provenance(path: str | Path) -> dict:
    """The provenance of an exported figure, from its PDF (``x.pdf``) or its JSON sidecar (``x.json``)."""
    path = Path(path)
    if path.suffix == ".pdf":
        meta = PdfReader(str(path)).metadata or {}
        return json.loads(meta[PDF_KEY]) if PDF_KEY in meta else {}
    return json.loads(path.read_text(encoding="utf-8")).get(PROVENANCE_KEY, {})


def find_browser() -> None:
    if os.environ.get("BROWSER_PATH"):
        return
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        exe = shutil.which(name)
        if exe:
            os.environ["BROWSER_PATH"] = exe
            return


def save(
    fig: go.Figure,
    name: str,
    formats=FORMATS,
    width: int | None = None,
    height: int | None = None,
    directory: str | Path | None = None,
    inputs=None,
    provenance: dict | None = None,
    preset: str | None = None,
    title: bool | None = None,
) -> list[Path]:
    """Write ``figures/<name>.{pdf,svg,png}`` (and the plotly JSON beside them, with the provenance)
    and return the image paths. ``name`` is a file stem; ``inputs`` the runs or files it was made from;
    ``provenance`` a record to keep instead of a new one (re-export). ``preset``: ``"single"`` (3.3 in)
    or ``"double"`` (6.9 in) column width (:data:`PRESETS`; default ``FASBENCH_FIGURE_PRESET``, else the
    screen size); ``title=False`` (default: ``FASBENCH_FIGURE_TITLES=0``) drops the baked-in title from
    the images (the JSON keeps the whole figure)."""
    if isinstance(name, str) and name.startswith("."):
        raise UnsafeName(f"figure name {name!r} starts with a dot: it would be a hidden file")
    name = safe_name(name, "figure name")
    find_browser()
    out_dir = Path(directory) if directory else figures_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    preset = preset or os.environ.get("FASBENCH_FIGURE_PRESET") or None
    title = os.environ.get("FASBENCH_FIGURE_TITLES", "1") != "0" if title is None else title
    shown, w, h = paper_layout(fig, preset, title, width, height)
    prov = provenance or figure_provenance(name, inputs)
    if preset or not title:
        prov = {**prov, "export": {"preset": preset, "title": title, "width_px": w, "height_px": h}}
    spec = child(out_dir, name, ".json")  # kept so that `make figures` can re-export without re-running
    spec.write_text(json.dumps({**json.loads(pio.to_json(fig)), PROVENANCE_KEY: prov}), encoding="utf-8")
    paths = [child(out_dir, name, f".{safe_name(fmt, 'figure format')}") for fmt in formats]
    _write_images(_wrap_titles(shown, w, h), paths, formats, w, h)
    for p in paths:
        if p.suffix == ".pdf":
            _stamp_pdf(p, prov)
    return paths


EM = 0.6  # a DejaVu Sans character's mean advance, in font sizes (rounded up: a wrap too many costs nothing)


SUP = 0.7  # plotly's <sup> text, as a fraction of the font size (rounded up)


def _wrap(text: str, size: float, room: float) -> str:
    """``text`` with ``<br>`` between words where a line would be wider than ``room`` pixels; a line
    that is one ``<sup>…</sup>`` (a subtitle: the task-set label under a title) is wrapped at its
    smaller size, each piece in its own ``<sup>``."""
    lines = text.split("<br>")
    subs = [ln.startswith("<sup>") and ln.endswith("</sup>") and "<" not in ln[5:-6] for ln in lines]
    if any(sub for sub in subs):
        return "<br>".join(
            "<br>".join(f"<sup>{piece}</sup>" for piece in _wrap(ln[5:-6], size * SUP, room).split("<br>"))
            if sub
            else _wrap(ln, size, room)
            for ln, sub in zip(lines, subs)
        )
    if "<" in text.replace("<br>", ""):
        return text  # other markup: a break could fall inside a tag
    per_line = max(8, int(room / (EM * size)))
    out = []
    for line in text.split("<br>"):
        words, cur = line.split(" "), ""
        for word in words:
            if cur and len(cur) + 1 + len(word) > per_line:
                out.append(cur)
                cur = word
            else:
                cur = f"{cur} {word}" if cur else word
        out.append(cur)
    return "<br>".join(out)


def _wrap_titles(fig: go.Figure, w: int, h: int) -> go.Figure:
    """A copy of ``fig`` whose figure and axis titles are wrapped onto lines that fit in the figure:
    plotly never wraps text, so a title wider than the figure is cut at its edge in every format."""
    full = fig.layout.template.layout if fig.layout.template else go.Layout()
    base = fig.layout.font.size or full.font.size or 12
    margin = {
        k: next((v for v in (getattr(fig.layout.margin, k), getattr(full.margin, k)) if v is not None), 80)
        for k in "lrtb"
    }
    out = go.Figure(fig)
    t = out.layout.title
    if t.text:
        x = t.x if t.x is not None else (full.title.x if full.title.x is not None else 0.5)
        anchor = t.xanchor or full.title.xanchor or "auto"
        room = w * (1 - x) if anchor == "left" else w * min(x, 1 - x) * 2
        size, before = t.font.size or full.title.font.size or base * 1.2, t.text
        out.layout.title.text = _wrap(before, size, room - 10)
        added = out.layout.title.text.count("<br>") - before.count("<br>")
        if added > 0:  # the lines the wrap added push the plot down instead of covering it
            out.layout.margin.t = margin["t"] + added * round(size * 1.3)
    for ax in [a for k in out.layout if k.startswith(("xaxis", "yaxis")) and (a := out.layout[k]) is not None]:
        if not ax.title.text:
            continue
        d0, d1 = ax.domain or (0, 1)
        horizontal = ax.plotly_name.startswith("x")
        size, lo, hi = (w, margin["l"], margin["r"]) if horizontal else (h, margin["b"], margin["t"])
        centre = lo + (size - lo - hi) * (d0 + d1) / 2
        room = 2 * min(centre, size - centre) - 10
        ax.title.text = _wrap(ax.title.text, ax.title.font.size or round(base * 1.2), room)
    return out


# Kaleido makes a PDF by printing the figure's SVG with Chromium on a page of the figure's size, but
# with 0.1-inch print margins: Chromium then shrinks the figure by 19.2 px to the printable width and
# cuts off the bottom ~8 px (legends and axis titles under the plot). Printed without margins, the
# page holds the figure at 1:1, the picture of the SVG and the PNG.
_PDF_PRINT = {
    "printBackground": True,
    "preferCSSPageSize": True,
    "pageRanges": "1",
    "marginTop": 0,
    "marginBottom": 0,
    "marginLeft": 0,
    "marginRight": 0,
}


def _whole_pdf_pages() -> None:
    """Make kaleido print PDFs without margins (its ``print_pdf``, kaleido 1.x, is replaced once)."""
    try:  # local import: kaleido is heavy to import; only figure export needs it
        from kaleido._kaleido_tab import _devtools_utils as dt
    except ImportError:
        dt = None
    if dt is None or not callable(getattr(dt, "print_pdf", None)) or not callable(getattr(dt, "_raise_error", None)):
        warnings.warn(
            "this kaleido has no _kaleido_tab._devtools_utils.print_pdf: its PDFs keep the print "
            "margins that cut the figure's bottom (tests/test_figures.py checks this)",
            stacklevel=3,
        )
        return
    if getattr(dt.print_pdf, "fasbench_whole", False):
        return

    async def print_pdf(tab):
        response = await tab.send_command("Page.printToPDF", params=_PDF_PRINT)
        dt._raise_error(response)
        return response.get("result", {}).get("data")

    print_pdf.fasbench_whole = True
    dt.print_pdf = print_pdf


def _write_images(fig: go.Figure, paths: list[Path], formats, w: int, h: int) -> None:
    scales = [3 if fmt == "png" else 1 for fmt in formats]
    if "pdf" in formats:
        _whole_pdf_pages()
    server = start_kaleido_server()
    for p in paths:  # a file left by an earlier export must not pass for this one
        p.unlink(missing_ok=True)
    try:  # all formats in one browser session
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            pio.write_images([fig] * len(paths), paths, format=list(formats), scale=scales, width=w, height=h)
    except Exception:
        if not server:
            raise
        stop_kaleido_server()  # the shared browser died: export the slow way
    # Once, on a loaded machine, kaleido returned without writing one of the files (notebook 04's PDF):
    # whatever is missing is exported again on its own, and an export that still writes nothing is an error.
    for p, fmt, sc in zip(paths, formats, scales):
        if not p.is_file() or p.stat().st_size == 0:
            pio.write_image(fig, p, format=fmt, width=w, height=h, scale=sc)
        if not p.is_file() or p.stat().st_size == 0:
            raise RuntimeError(
                f"kaleido wrote no {fmt.upper()} for {p.name} (Chromium: {os.environ.get('BROWSER_PATH')})"
            )


def _in_kernel() -> bool:
    try:  # local import: IPython is heavy to import and is there only in notebooks
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


_SERVER: bool | None = None  # None: not tried yet; True: kaleido's shared browser is running


def start_kaleido_server() -> bool:
    """Start kaleido's persistent browser once per process: each figure then costs about a
    second instead of a Chromium start per format (~10 s on a busy machine)."""
    global _SERVER
    if _SERVER is None and _in_kernel():
        # Inside a Jupyter kernel the server's browser thread was seen to leave cell executions
        # without their reply (papermill then waits forever); there each save starts a browser.
        _SERVER = False
    if _SERVER is None:
        try:  # local import: kaleido is heavy to import; only figure export needs it
            import kaleido

            kaleido.start_sync_server(silence_warnings=True)
            atexit.register(stop_kaleido_server)
            _SERVER = True
        except Exception:
            _SERVER = False
    return _SERVER


def stop_kaleido_server() -> None:
    global _SERVER
    if _SERVER:
        try:  # local import: kaleido is heavy to import; only figure export needs it
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
        d = json.loads(j.read_text(encoding="utf-8"))
        prov = d.pop(PROVENANCE_KEY, None)
        fig = pio.from_json(json.dumps(d))
        written += save(fig, j.stem, directory=out_dir, provenance=prov)
    return written
