"""Offline corpora from real PyPI sdists (downloaded once into the cache; needs PyPI)."""

import json

import pytest
from pypi_fixture import requires_pypi

from fasbench.data import corpus
from fasbench.data.corpus import CorpusError, materialize

pytestmark = requires_pypi


def test_flask_offline_relocated(by_id):
    t = materialize(by_id["pallets__flask-5014"], mode="offline")
    assert t.meta["corpus"]["release"] == "2.2.3" and t.meta["corpus"]["status"] == "offset"
    # the relocated hunk range holds the hunk's old lines in the sdist
    from fasbench.data.patches import parse_diff

    hunk = parse_diff(t.meta["patch"])[0].hunks[0]
    ((s, e),) = t.gold.edited["src/flask/blueprints.py"]
    lines = open(f"{t.root}/src/flask/blueprints.py").read().splitlines()
    assert lines[s - 1 : e] == hunk.old_lines
    assert t.gold.edited == t.gold.variants["hunk"]
    off = t.meta["corpus"]["offsets"]["src/flask/blueprints.py"][0]
    base = by_id["pallets__flask-5014"].gold
    assert t.gold.variants["changed"]["src/flask/blueprints.py"] == [
        [a + off, b + off] for a, b in base.variants["changed"]["src/flask/blueprints.py"]
    ]


def test_missing_gold_file_is_dropped_with_reason(by_id):
    # seaborn v0.12 is served by 0.11.2, which has no seaborn/_core/ yet
    task = next(
        t
        for t in by_id.values()
        if t.repo == "mwaskom/seaborn"
        and t.version == "0.12"
        and any(p.startswith("seaborn/_core/") for p in t.gold.edited)
    )
    with pytest.raises(CorpusError) as e:
        materialize(task, mode="offline")
    assert e.value.reason == "file-missing" and "seaborn/_core/" in e.value.detail


def test_pip_failure_falls_back_to_direct_download(by_id):
    # requests 2.4.3's setup.py breaks on Python 3.11, so pip cannot prepare its metadata
    tree = corpus.sdist_tree("requests", "2.4.3")
    info = json.loads((tree.parent / "requests-2.4.3.json").read_text())
    assert (tree / "requests/sessions.py").is_file()
    assert info["method"] in ("direct", "cached") and info["file"] == "requests-2.4.3.tar.gz"


def test_no_pick_is_a_reason(by_id):
    t = by_id["pallets__flask-5014"].__class__.from_dict(by_id["pallets__flask-5014"].to_dict())
    t.version = "99.0"
    with pytest.raises(CorpusError) as e:
        materialize(t, mode="offline")
    assert e.value.reason == "no-pick"
