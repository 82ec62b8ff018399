"""Figure export records its provenance in the JSON sidecar and the PDF metadata."""

import json

import plotly.graph_objects as go

from fasbench import figures
from fasbench.provenance import code_version

N_TASKS = 7  # a stand-in for a notebook parameter (read from the caller's globals by set_context)


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
