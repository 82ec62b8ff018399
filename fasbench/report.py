"""One static HTML report of executed notebooks (``make run`` writes ``runs/report/index.html``).

The executed copies (papermill, ``runs/notebooks/``) are joined into one notebook, in file order, each
under a heading with its file name, and exported with nbconvert's ``lab`` template: outputs as they
were computed (plotly figures as interactive HTML with plotly.js embedded once, tables, the "What we
found" cells), the code of the ``findings`` cells hidden, and the saved widget state of every notebook
kept in the page: the ipywidgets HTML manager (loaded by the page from its CDN) renders the widgets from
it without a kernel (offline when ``--js`` gives a local copy of it: ``make run`` fetches one with
``npm pack``), their Python callbacks do not run, and the plotly figures inside them (Output widgets)
are stored as PNG images, which that manager can show. Usage:
``python -m fasbench.report runs/notebooks --out runs/report``.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import plotly.io as pio
from nbconvert import HTMLExporter
from traitlets.config import Config

from fasbench.figures import _browser, _kaleido_server, _stop_kaleido_server

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PLOTLY = "application/vnd.plotly.v1+json"


def _plotly_outputs_to_html(nb: nbformat.NotebookNode) -> int:
    """Replace plotly mimetype outputs by HTML (nbconvert cannot show the mimetype); plotly.js is
    embedded in the first one only. Returns the number converted."""
    n = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if PLOTLY in data:
                fig = pio.from_json(json.dumps(data[PLOTLY]))
                o["data"] = {"text/html": pio.to_html(fig, full_html=False, include_plotlyjs=n == 0),
                             "text/plain": data.get("text/plain", "<plotly figure>")}
                n += 1
    return n


def _plotly_widget_outputs_to_png(states: dict) -> int:
    """In Output widgets' saved state, plotly figures become PNG images (the widget HTML manager
    shows images, not the plotly mimetype). Returns the number converted."""
    n = 0
    _browser()
    todo = [m for m in states.values() if m.get("model_name") == "OutputModel"
            and any(PLOTLY in o.get("data", {}) for o in m.get("state", {}).get("outputs", []))]
    if todo:
        _kaleido_server()  # one browser for all the images (a Chromium start per figure otherwise)
    for model in todo:
        if model.get("model_name") != "OutputModel":
            continue
        for o in model.get("state", {}).get("outputs", []):
            data = o.get("data", {})
            if PLOTLY in data:
                fig = pio.from_json(json.dumps(data[PLOTLY]))
                png = pio.to_image(fig, format="png", scale=1, width=fig.layout.width or 900,
                                   height=fig.layout.height or 450)
                o["data"] = {"image/png": base64.b64encode(png).decode(), "text/plain": "<plotly figure>"}
                n += 1
    if todo:
        _stop_kaleido_server()  # now, not at exit (where its temporary browser profile may be left behind)
    return n


def combine(paths: list[Path]) -> nbformat.NotebookNode:
    """One notebook holding the cells of every notebook (with a heading each) and the union of their
    saved widget states."""
    out = nbformat.v4.new_notebook()
    states: dict = {}
    contents = ["# fasbench report", "", "Executed notebooks, in order:"]
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        anchor = p.stem
        contents.append(f"- [{p.stem}](#{anchor})")
        head = nbformat.v4.new_markdown_cell(f"<a id='{anchor}'></a>\n\n---\n\n*Notebook `{p.name}`*")
        out.cells.append(head)
        for i, c in enumerate(nb.cells):  # cell ids must stay unique in the joined notebook
            c["id"] = f"{re.sub(r'[^A-Za-z0-9_-]', '-', anchor)[:40]}-{i}"
            out.cells.append(c)
        w = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {})
        states.update(w.get("state", {}))
        if not out.metadata.get("kernelspec") and nb.metadata.get("kernelspec"):
            out.metadata["kernelspec"] = nb.metadata["kernelspec"]
            out.metadata["language_info"] = nb.metadata.get("language_info", {})
    out.cells.insert(0, nbformat.v4.new_markdown_cell("\n".join(contents)))
    _plotly_outputs_to_html(out)
    _plotly_widget_outputs_to_png(states)
    if states:
        out.metadata["widgets"] = {WIDGET_STATE: {"state": states, "version_major": 2, "version_minor": 0}}
    return out


JS_FILES = ("embed-amd.js", "libembed-amd.js", "require.js")  # the widget HTML manager and its AMD loader
JS_ASSETS = ("*.woff2", "*.woff", "*.ttf", "*.eot", "*.svg", "*.LICENSE.txt")  # the manager's icon fonts


def vendor_js(js_dir: Path, out_dir: Path) -> bool:
    """Copy the widget HTML manager (``dist/`` of the npm package @jupyter-widgets/html-manager) and
    require.js from ``js_dir`` to ``out_dir/js`` so that the page renders its widgets offline; False
    (the page then loads them from their CDN) when ``js_dir`` lacks them."""
    js_dir = Path(js_dir)
    if not all((js_dir / f).exists() for f in ("embed-amd.js", "require.js")):
        return False
    dst = out_dir / "js"
    dst.mkdir(parents=True, exist_ok=True)
    for f in [js_dir / n for n in JS_FILES] + [p for pat in JS_ASSETS for p in js_dir.glob(pat)]:
        if f.exists():
            shutil.copy2(f, dst / f.name)
    return True


def write_report(notebooks: Path | list[Path], out_dir: Path, js_dir: Path | None = None) -> Path:
    """Export the executed notebooks (a folder of ``NN_*.ipynb`` or a list) to ``out_dir/index.html``;
    ``js_dir`` (see :func:`vendor_js`) makes the page independent of the network."""
    paths = sorted(Path(notebooks).glob("[0-9][0-9]_*.ipynb")) if isinstance(notebooks, (str, Path)) else \
        [Path(p) for p in notebooks]
    if not paths:
        raise FileNotFoundError(f"no executed notebooks (NN_*.ipynb) in {notebooks}")
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"{missing[0]} not found")
    c = Config()
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_input_tags = {"findings"}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if js_dir is not None and vendor_js(js_dir, out_dir):
        c.HTMLExporter.widget_renderer_url = "js/embed-amd.js"
        c.HTMLExporter.require_js_url = "js/require.js"
    exporter = HTMLExporter(config=c, template_name="lab")
    exporter.register_preprocessor("nbconvert.preprocessors.TagRemovePreprocessor", enabled=True)
    body, _ = exporter.from_notebook_node(combine(paths))
    target = out_dir / "index.html"
    target.write_text(body, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fasbench.report", description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="+", help="a folder of executed NN_*.ipynb, or notebook files")
    ap.add_argument("--out", default="runs/report", help="output folder (index.html)")
    ap.add_argument("--js", default=None, help="folder with embed-amd.js (+ fonts) of @jupyter-widgets/html-manager "
                    "and require.js, copied beside the page so that it renders offline (default: their CDN)")
    a = ap.parse_args(argv)
    src = Path(a.notebooks[0]) if len(a.notebooks) == 1 and Path(a.notebooks[0]).is_dir() else [Path(p) for p in a.notebooks]
    try:
        target = write_report(src, Path(a.out), Path(a.js) if a.js else None)
    except (FileNotFoundError, nbformat.reader.NotJSONError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report: {target} ({target.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
