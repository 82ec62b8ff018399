"""A study draw that may fetch corpora (``study_tasks(download=True)``) with PyPI out of reach: the first
corpus that cannot be fetched says so in one line and the draw goes on with the cached corpora only (no
minutes of pip retries per corpus), and nothing about the failure is remembered, so that the next run with
a network fetches. A PyPI that answers "no such sdist" is remembered as before."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from fasbench.data import corpus
from fasbench.data.corpus_cache import CorpusError, root_dir
from fasbench.studies import search_study as st


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: a connection is refused


@pytest.fixture
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    url = f"http://127.0.0.1:{_closed_port()}/simple"
    monkeypatch.setattr(corpus, "PYPI_SIMPLE", url)
    monkeypatch.setenv("PIP_INDEX_URL", url)
    return url


def test_unreachable_pypi_is_offline_and_not_remembered(offline):
    with pytest.raises(CorpusError) as e:
        corpus.sdist_tree("flask", "2.2.3")
    assert e.value.reason == "offline" and "flask==2.2.3 is not cached" in str(e.value)
    assert not list((root_dir() / "sdist").glob("*.json"))  # the next run with a network tries again


def test_a_download_draw_goes_on_with_cached_corpora_when_offline(offline, capsys):
    assert st.study_tasks(5, download=True) == []  # nothing cached: no task, after one corpus tried
    cap = capsys.readouterr()
    assert (cap.out + cap.err).count("the draw goes on with cached corpora only") == 1
    assert not list((root_dir() / "sdist").glob("*.json"))


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        self.send_response(404)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_a_missing_sdist_is_still_remembered(tmp_path, monkeypatch):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/simple"
        monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(corpus, "PYPI_SIMPLE", url)
        monkeypatch.setenv("PIP_INDEX_URL", url)
        with pytest.raises(CorpusError) as e:
            corpus.sdist_tree("flask", "2.2.3")
        assert e.value.reason == "sdist-unavailable"
        assert (root_dir() / "sdist" / "flask-2.2.3.json").exists()
    finally:
        srv.shutdown()
