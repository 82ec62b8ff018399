"""One static HTML report of executed notebooks (``make run`` writes ``runs/report/index.html``).

The executed copies (papermill, ``runs/notebooks/``) are joined into one notebook, in file order, each
under a heading with its file name, and exported with nbconvert's ``lab`` template: outputs as they
were computed (plotly figures as interactive HTML with plotly.js embedded once, tables, the "What we
found" cells), the code of the ``findings`` cells hidden, and the saved widget state of every notebook
kept in the page: the ipywidgets HTML manager (loaded by the page from its CDN) renders the widgets from
it without a kernel (offline when ``--js`` gives a local copy of it: ``make run`` fetches one with
``npm pack``; its icon fonts are copied where it looks for them), their Python callbacks do not run, and
the plotly figures inside them (Output widgets) are stored as PNG images, which that manager can show.

What would mislead without a kernel is replaced: an output that carries a static rendering beside its
widget (the replay widgets of ``fasbench.replay``: every turn, with a CSS turn switcher) shows the static
one, and the widget state nothing shows any more is left out; stderr that is only warnings or progress
bars is dropped (a traceback or any other text is kept, and error outputs always). Every decimal or
percentage a findings cell quotes should be visible in an output above it: :func:`unshown_numbers`
lists those that are not, and the report prints them. Usage:
``fasbench report runs/notebooks --out runs/report`` (``python -m fasbench.mainjob.report …`` is its alias).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import sys
from html import unescape
from pathlib import Path

import nbformat
import plotly.io as pio
from nbconvert import HTMLExporter
from traitlets.config import Config

from fasbench.base.contain import PathRefused, read_regular
from fasbench.base.markup import html
from fasbench.mainjob.header import (
    findings_anchor,
    header_markdown,
    read_run_record,
    scrub_notebook,
    scrub_value,
    section_of,
)
from fasbench.replay.static import STATIC_CLASS
from fasbench.stats.figures import find_browser, start_kaleido_server, stop_kaleido_server

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PLOTLY = "application/vnd.plotly.v1+json"
MAX_NOTEBOOK_BYTES = 512 << 20  # a notebook file larger than this is not read


class NotebookError(ValueError):
    """A file that is not a readable executed notebook (one line: the file and why)."""


def _check_shape(nb) -> str | None:
    """What is wrong with the parts of a notebook this module indexes (None: nothing)."""
    if not isinstance(nb.get("cells"), list) or not isinstance(nb.get("metadata"), dict):
        return "no list of cells and metadata object"
    w = nb.metadata.get("widgets", {})
    if (
        not isinstance(w, dict)
        or not isinstance(w.get(WIDGET_STATE, {}), dict)
        or not isinstance(w.get(WIDGET_STATE, {}).get("state", {}), dict)
    ):
        return "widget state is not an object"
    for i, c in enumerate(nb.cells):
        outs = c.get("outputs", []) if isinstance(c, dict) else None
        if not isinstance(outs, list) or not all(
            isinstance(o, dict) and isinstance(o.get("data", {}), dict) for o in outs
        ):
            return f"cell {i}: not a cell with a list of outputs"
        for o in outs:
            if isinstance(o.get("text"), list):
                o["text"] = "".join(map(str, o["text"]))
            view = o.get("data", {}).get(WIDGET_VIEW, {"model_id": ""})
            if (
                not isinstance(o.get("text", ""), str)
                or not isinstance(view, dict)
                or not isinstance(view.get("model_id"), str)
            ):
                return f"cell {i}: an output's text or widget view is malformed"
    return None


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """An executed notebook (nbformat 4) from a regular file of at most :data:`MAX_NOTEBOOK_BYTES`;
    :class:`NotebookError` for a FIFO, a non-notebook JSON or a malformed part (one line, no traceback)."""
    try:
        data, more = read_regular(path, MAX_NOTEBOOK_BYTES)
        if more:
            raise NotebookError(f"{path}: larger than {MAX_NOTEBOOK_BYTES} bytes")
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except PathRefused as e:
        raise NotebookError(f"{path}: {e.why}") from None
    except NotebookError:
        raise
    except Exception as e:  # nbformat raises many kinds on a non-notebook (ValidationError, AttributeError, ...)
        raise NotebookError(
            f"{path}: not a notebook ({type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''})"
        ) from None
    why = _check_shape(nb)
    if why:
        raise NotebookError(f"{path}: not a notebook ({why})")
    return nb


def _static_views(nb: nbformat.NotebookNode) -> int:
    """Outputs that carry a static HTML rendering of their widget (``fasbench.replay.static``) keep only
    that: the page has no kernel to run the widget's callbacks. Returns the number replaced."""
    n = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if WIDGET_VIEW in data and STATIC_CLASS in str(data.get("text/html", "")):
                del data[WIDGET_VIEW]
                n += 1
    return n


_MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32})|\"model_id\": \"([0-9a-f]{32})\"")


def _shown_states(nb: nbformat.NotebookNode, states: dict) -> dict:
    """The saved widget models that the page still shows: those of its widget views and the models
    they refer to (children, layouts, styles, the outputs of Output widgets)."""
    todo = [
        o["data"][WIDGET_VIEW]["model_id"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if WIDGET_VIEW in o.get("data", {})
    ]
    keep: dict = {}
    while todo:
        mid = todo.pop()
        if mid in keep or mid not in states:
            continue
        keep[mid] = states[mid]
        todo += [a or b for a, b in _MODEL_REF.findall(json.dumps(states[mid]))]
    return keep


# stderr lines that are a warning (``file:line: XWarning: message`` and the source line printed under
# it) or a progress bar (tqdm's text form): dropped from the page, where they read as errors. Both are
# tested in linear time: the earlier ``^.*\d+%\|.*\|.*\[.*\]\s*$`` backtracked about n^4 (14 s of CPU
# on one 1.8 KB stderr line).
_WARNING_TAIL = re.compile(r":\d++: \w*+(?<=Warning): ")  # possessive: each ':' start is tried once


def _is_warning(body: str) -> bool:
    """``^\\S.*:\\d+: \\w*Warning: ``: a non-blank first character, then ``:LINE: XWarning: `` after it."""
    return bool(body[:1].strip()) and _WARNING_TAIL.search(body, 1) is not None


def _is_progress(body: str) -> bool:
    """``^.*\\d+%\\|.*\\|.*\\[.*\\]\\s*$`` (tqdm's bar: ``42%|████  | 42/100 [00:01<00:02]``) by
    finds: the first ``DIGIT%|``, a ``|`` after it, a ``[`` after that and a ``]`` ending the line."""
    t = body.rstrip()
    if not t.endswith("]"):
        return False
    i = t.find("%|")
    while i >= 0 and not (i > 0 and t[i - 1].isdecimal()):
        i = t.find("%|", i + 1)
    if i < 0:
        return False
    j = t.find("|", i + 2)
    k = t.find("[", j + 1) if j >= 0 else -1
    return 0 <= k < len(t) - 1


def _quiet_stderr(nb: nbformat.NotebookNode) -> int:
    """Drop warnings and progress bars from stderr streams (a stream with nothing else left goes);
    tracebacks, any other text and error outputs stay. Returns the number of lines dropped."""
    n = 0
    for cell in nb.cells:
        outs = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                kept, after_warning = [], False
                for line in re.split(r"(?<=\n)", o.get("text", "")):
                    for part in line.split("\r"):  # progress bars redraw over one line
                        body = part.rstrip("\n")
                        if (warning := _is_warning(body)) or _is_progress(body):
                            n, after_warning = n + 1, warning
                            continue
                        if after_warning and body.startswith("  ") and body.strip():
                            n, after_warning = n + 1, False  # the source line of the warning
                            continue
                        after_warning = False
                        if body.strip():
                            kept.append(body + "\n")
                if not kept:
                    continue
                o["text"] = "".join(kept)
            outs.append(o)
        if "outputs" in cell:
            cell["outputs"] = outs
    return n


# not 1.15 of "1.15.0"; possessive digit runs and at most 8 thousands groups: linear (a run of 8,000
# digits followed by "x1" took 1.4 s, quadratic, with the backtracking \d+)
_NUMBER = re.compile(r"(?<![\w.])[-+−]?(\d++(?:,\d{3}){0,8}+\.\d++|\d++)(%?)(?![\w.]*\d)")
# Constants that are no result: the level of an interval ("95% CI", "95% percentile bootstrap interval",
# "task-bootstrap 95% intervals", "intervals: 95% percentile bootstrap") and a significance level ("p < 0.05", "reject at 0.05", "α = 0.05").
_NOT_RESULTS = re.compile(
    r"(?<!\d)\d++(?:\.\d++)?%(?=\s+(?:[\w-]+\s+){0,3}(?:intervals?|CIs?|confidence|bootstrap)\b)"
    r"|\b(?:intervals?|CIs?)\W{1,3}\d+(?:\.\d+)?%"
    r"|(?:\bp\s*[<≤>]\s*|\b(?:reject|significant|significance)\s+(?:at|level)\s+(?:p\s*[<≤]\s*)?"
    r"|(?:α|alpha)\s*=\s*)0?\.\d+",
    re.IGNORECASE,
)


def _numbers(text: str) -> list[tuple[str, float, int, bool]]:
    """(as written, value, decimals, is a percentage) of the decimals and percentages in ``text``;
    version strings (``2.2.7``) and interval or significance levels (:data:`_NOT_RESULTS`) are left out."""
    out = []
    text = _NOT_RESULTS.sub(" ", text)
    for m in _NUMBER.finditer(text):
        digits, pct = m.group(1), m.group(2) == "%"
        if "." not in digits and not pct:
            continue  # counts (n = 12, turn 3, 2024) are too common to check
        dec = len(digits.split(".")[1]) if "." in digits else 0
        out.append((m.group(0), float(digits.replace(",", "")), dec, pct))
    return out


def _output_text(o: dict) -> str:
    if o.get("output_type") == "stream":
        return o.get("text", "")
    data = o.get("data", {})
    txt = data.get("text/html") or data.get("text/markdown") or data.get("text/plain") or ""
    txt = "".join(txt) if isinstance(txt, list) else str(txt)
    return unescape(re.sub(r"<[^>]+>", " ", txt))


def unshown_numbers(nb: nbformat.NotebookNode) -> list[str]:
    """The decimals and percentages the ``findings`` cells' output quotes that no other output of the
    notebook shows (up to rounding, a percentage also as a fraction): what a table hid (columns cut,
    rows elided) or what only the findings cell computed. Interval bounds (in brackets), interval and
    significance levels, version strings, and numbers written in the notebook's code (its parameters
    cell: a step count, a threshold) are not checked."""
    shown: list[tuple[float, int]] = []  # (value, its decimals)
    quoted: list[tuple[str, float, int, bool]] = []

    def show(text: str) -> None:
        for _, v, dec, pct in _numbers(text):
            shown.extend([(v, dec), (v / 100, dec + 2)] if pct else [(v, dec)])

    for cell in nb.cells:
        findings = "findings" in cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "code" and not findings:  # (the report hides the findings cells' code)
            src = cell.get("source", "")
            show("".join(src) if isinstance(src, list) else src)
        for o in cell.get("outputs", []):
            text = _output_text(o)
            if findings:
                quoted += _numbers(re.sub(r"\[[^\]]*\]", " ", text))
            else:
                show(text)

    def same(t: float, dt: int, s: float, ds: int) -> bool:
        if abs(s - t) < 1e-12:  # the value itself (0.75 shown for 0.750: trailing zeros trimmed)
            return True
        # else shown with at least the quoted precision, both roundings of one number (9.315 -> 9.32)
        return ds >= dt and abs(s - t) <= 0.5 * 10**-dt + 0.5 * 10**-ds + 1e-12

    missing = []
    for written, v, dec, pct in quoted:
        targets = [(v, dec)] + ([(v / 100, dec + 2)] if pct else [])  # a percentage also as a fraction
        if not any(same(t, dt, s, ds) for t, dt in targets for s, ds in shown) and written not in missing:
            missing.append(written)
    return missing


def _plotly_outputs_to_html(nb: nbformat.NotebookNode) -> int:
    """Replace plotly mimetype outputs by HTML (nbconvert cannot show the mimetype); plotly.js is
    embedded in the first one only. Returns the number converted."""
    n = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if PLOTLY in data:
                try:
                    fig = pio.from_json(json.dumps(data[PLOTLY]))
                    o["data"] = {
                        "text/html": pio.to_html(fig, full_html=False, include_plotlyjs=n == 0),
                        "text/plain": data.get("text/plain", "<plotly figure>"),
                    }
                except Exception as e:  # a malformed figure: plotly raises ValueError, TypeError, ... per field
                    o["data"] = {"text/plain": f"(a plotly figure that could not be rendered: {type(e).__name__})"}
                    continue
                n += 1
    return n


def _plotly_widget_outputs_to_png(states: dict) -> int:
    """In Output widgets' saved state, plotly figures become PNG images (the widget HTML manager
    shows images, not the plotly mimetype). Returns the number converted."""
    n = 0
    find_browser()
    todo = [
        m
        for m in states.values()
        if m.get("model_name") == "OutputModel"
        and any(PLOTLY in o.get("data", {}) for o in m.get("state", {}).get("outputs", []))
    ]
    if todo:
        start_kaleido_server()  # one browser for all the images (a Chromium start per figure otherwise)
    for model in todo:
        if model.get("model_name") != "OutputModel":
            continue
        for o in model.get("state", {}).get("outputs", []):
            data = o.get("data", {})
            if PLOTLY in data:
                try:
                    fig = pio.from_json(json.dumps(data[PLOTLY]))
                    png = pio.to_image(
                        fig, format="png", scale=1, width=fig.layout.width or 900, height=fig.layout.height or 450
                    )
                except Exception as e:  # a malformed figure (plotly raises many kinds): a note, the rest goes on
                    o["data"] = {"text/plain": f"(a plotly figure that could not be rendered: {type(e).__name__})"}
                    continue
                o["data"] = {"image/png": base64.b64encode(png).decode(), "text/plain": "<plotly figure>"}
                n += 1
    if todo:
        stop_kaleido_server()  # now, not at exit (where its temporary browser profile may be left behind)
    return n


def combine(paths: list[Path], skipped: list[str] | None = None, record: dict | None = None) -> nbformat.NotebookNode:
    """One notebook holding the cells of every notebook (with a heading each) and the union of their
    saved widget states, under a header (:func:`fasbench.mainjob.header.header_markdown`: the run of
    ``record``, a smoke banner, the findings-vs-outputs note, a section index). A file that is no notebook
    is skipped with its one-line reason appended to ``skipped`` (raised when ``skipped`` is None, or when
    no notebook is left). Outputs name no absolute folder of this machine or of the run's checkout."""
    out = nbformat.v4.new_notebook()
    states: dict = {}
    sections = []
    extra = (
        ((record["checkout"], "."),)
        if record and isinstance(record.get("checkout"), str) and record["checkout"].startswith("/")
        else ()
    )
    for p in paths:
        try:
            nb = read_notebook(p)
        except NotebookError as e:
            if skipped is None or len(skipped) + 1 == len(paths):
                raise
            skipped.append(str(e))
            continue
        anchor = p.stem
        scrub_notebook(nb, extra)
        sec = section_of(nb, anchor, p.name)
        sec.unshown = unshown_numbers(nb)
        sections.append(sec)
        head = nbformat.v4.new_markdown_cell(
            str(html("<a id='{}'></a>\n\n---\n\n*Notebook <code>{}</code>*", anchor, p.name))
        )
        out.cells.append(head)
        for i, c in enumerate(nb.cells):  # cell ids must stay unique in the joined notebook
            if "findings" in c.get("metadata", {}).get("tags", []):
                out.cells.append(nbformat.v4.new_markdown_cell(findings_anchor(anchor)))
            c["id"] = f"{re.sub(r'[^A-Za-z0-9_-]', '-', anchor)[:40]}-{i}"
            out.cells.append(c)
        w = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {})
        states.update(scrub_value(w.get("state", {}), extra))
        if not out.metadata.get("kernelspec") and nb.metadata.get("kernelspec"):
            out.metadata["kernelspec"] = nb.metadata["kernelspec"]
            out.metadata["language_info"] = nb.metadata.get("language_info", {})
    out.cells.insert(0, nbformat.v4.new_markdown_cell(header_markdown(sections, record)))
    _static_views(out)
    _quiet_stderr(out)
    states = _shown_states(out, states)
    _plotly_outputs_to_html(out)
    _plotly_widget_outputs_to_png(states)
    if states:
        out.metadata["widgets"] = {WIDGET_STATE: {"state": states, "version_major": 2, "version_minor": 0}}
    return out


JS_FILES = ("embed-amd.js", "libembed-amd.js", "require.js")  # the widget HTML manager and its AMD loader
JS_ASSETS = ("*.LICENSE.txt",)
FONTS = ("*.woff2", "*.woff")  # the manager's icon fonts (Font Awesome 5, bundled): every browser reads these
# Where the manager's CSS looks for its fonts: relative to the page, under the module names require.js
# loaded it by (measured in Chromium: both are asked for). Elsewhere the icons are empty boxes.
FONT_DIRS = ("@jupyter-widgets", "@jupyter-widgets/html-manager/dist")


def vendor_js(js_dir: Path, out_dir: Path) -> bool:
    """Copy the widget HTML manager (``dist/`` of the npm package @jupyter-widgets/html-manager) and
    require.js from ``js_dir`` to ``out_dir/js``, and its icon fonts to where its CSS looks for them
    (:data:`FONT_DIRS`), so that the page renders its widgets offline with their icons; False (the page
    then loads them from their CDN) when ``js_dir`` lacks them."""
    js_dir = Path(js_dir)
    if not all((js_dir / f).exists() for f in ("embed-amd.js", "require.js")):
        return False
    dst = out_dir / "js"
    dst.mkdir(parents=True, exist_ok=True)
    for f in [js_dir / n for n in JS_FILES] + [p for pat in JS_ASSETS for p in js_dir.glob(pat)]:
        if f.exists():
            shutil.copy2(f, dst / f.name)
    for d in FONT_DIRS:
        (out_dir / d).mkdir(parents=True, exist_ok=True)
        for f in (p for pat in FONTS for p in js_dir.glob(pat)):
            shutil.copy2(f, out_dir / d / f.name)
    return True


def _paths(notebooks: Path | list[Path]) -> list[Path]:
    return (
        sorted(Path(notebooks).glob("[0-9][0-9]_*.ipynb"))
        if isinstance(notebooks, (str, Path))
        else [Path(p) for p in notebooks]
    )


def write_report(
    notebooks: Path | list[Path], out_dir: Path, js_dir: Path | None = None, skipped: list[str] | None = None
) -> Path:
    """Export the executed notebooks (a folder of ``NN_*.ipynb`` or a list) to ``out_dir/index.html``, with
    the run record ``run.json`` of their folder in its header (:mod:`fasbench.mainjob.header`); ``js_dir`` (see :func:`vendor_js`) makes the page independent of the network; files that are no
    notebook are skipped into ``skipped`` (see :func:`combine`)."""
    paths = _paths(notebooks)
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
    folder = Path(notebooks) if isinstance(notebooks, (str, Path)) else paths[0].parent
    body, _ = exporter.from_notebook_node(combine(paths, skipped, read_run_record(folder)))
    target = out_dir / "index.html"
    target.write_text(body, encoding="utf-8")
    return target


def _unshown_note(paths: list[Path]) -> list[str]:
    out = []
    for p in paths:
        try:
            missing = unshown_numbers(read_notebook(p))
        except NotebookError:
            continue  # skipped already, with its reason
        if missing:
            out.append(
                f"note: {p.name}: its findings quote {', '.join(missing[:8])}"
                f"{' …' if len(missing) > 8 else ''}, which no output above them shows"
            )
    return out


def report_command(notebooks: list[str], out: str = "runs/report", js: str | None = None) -> int:
    """``fasbench report``: write the report of ``notebooks`` (a folder of executed ``NN_*.ipynb``, or
    notebook files) to ``out``; prints what it skipped and where the page is. Returns the exit status
    (2: nothing to report, with a one-line error)."""
    src = Path(notebooks[0]) if len(notebooks) == 1 and Path(notebooks[0]).is_dir() else [Path(p) for p in notebooks]
    skipped: list[str] = []
    try:
        target = write_report(src, Path(out), Path(js) if js else None, skipped)
    except (FileNotFoundError, NotebookError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in skipped:
        print(f"skipped: {line}", file=sys.stderr)
    print(f"report: {target} ({target.stat().st_size / 1e6:.1f} MB)")
    for line in _unshown_note(_paths(src)):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fasbench.mainjob.report ARGS``: an alias of ``fasbench report ARGS``; returns its exit status."""
    from fasbench.cli import (
        run_command,  # local import: the CLI imports this module's command lazily (no cycle at import)
    )

    return run_command(["report", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
