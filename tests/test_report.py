"""The static HTML report of executed notebooks: outputs, findings (code hidden), plotly figures as
HTML, widget state kept, and the widget manager copied beside the page when given."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from fasbench.report import main, write_report

CELLS = [
    ("import plotly.graph_objects as go\nimport ipywidgets as W\ngo.Figure(go.Bar(x=['a'], y=[3]))", None),
    ("W.IntSlider(value=7, description='turn')", None),
    ("from fasbench.findings import Findings\nf = Findings('test', n=3)\nf.metric('F2', 0.5, 0.4, 0.6, n=3, seed=0.7, "
     "seed_source='Relace')\nf.caveat('tiny')\nf", ["findings"]),
]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    d = tmp_path_factory.mktemp("nb")
    nb = nbformat.v4.new_notebook()
    for src, tags in CELLS:
        c = nbformat.v4.new_code_cell(src)
        if tags:
            c.metadata["tags"] = tags
        nb.cells.append(c)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    nbformat.write(nb, d / "01_x.ipynb")
    nbformat.write(nb, d / "02_y.ipynb")
    return d


def test_report_joins_notebooks_with_outputs_findings_and_widget_state(executed, tmp_path):
    js = tmp_path / "js"
    js.mkdir()
    (js / "embed-amd.js").write_text("// stand-in bundle")
    (js / "require.js").write_text("// stand-in loader")
    (js / "x.woff2").write_bytes(b"font")
    page = write_report(executed, tmp_path / "report", js_dir=js)
    html = page.read_text()
    assert html.count("What we found: test") == 2 and "| F2 |" not in html  # rendered as a table
    assert "0.50 [0.40, 0.60]" in html and "Relace" in html
    assert "f.caveat(" not in html  # the findings cells' code is hidden
    assert "Plotly.newPlot" in html and html.count("plotly.js v") >= 1  # figures as HTML, plotly.js embedded
    assert "application/vnd.jupyter.widget-state+json" in html and '"value": 7' in html
    assert "01_x.ipynb" in html and "02_y.ipynb" in html
    assert 'src="js/require.js"' in html and "js/embed-amd.js" in html
    assert (tmp_path / "report" / "js" / "x.woff2").exists()


def test_report_cli_one_line_error(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no executed notebooks") and err.count("\n") == 1
