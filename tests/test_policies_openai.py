"""The OpenAI-compatible policy against real local servers: `transformers serve` with the tiny
offline model (a real chat-completions round trip inside a harness episode), and a plain HTTP
server process for what a tiny random model cannot produce on demand (tool_calls, 503 retries,
timeouts)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from servers import free_port, server, wait_http

from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.policies.openai_compat import EndpointError, OpenAIPolicy
from fasbench.policies.toy import make_corpus, toy_tasks


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))


# slow-ish: starts `transformers serve` (~30-100 s on a loaded CPU)
@pytest.mark.slow
def test_transformers_serve_round_trip(toy, tmp_path):
    pytest.importorskip("fastapi", reason="transformers serve needs the [serving] extra (dev dependency)")
    pytest.importorskip("uvicorn")
    from fasbench.models import TINY, resolve_model

    model = resolve_model(TINY)
    port = free_port()
    exe = Path(sys.executable).parent / "transformers"
    log = tmp_path / "serve.log"
    with server(
        [str(exe), "serve", "--port", str(port), "--device", "cpu", model], log, {**os.environ, "HF_HUB_OFFLINE": "1"}
    ) as proc:
        wait_http(f"http://localhost:{port}/health", proc, 240, log)
        pol = make_policy(
            f"openai:model={model},base_url=http://localhost:{port}/v1,max_tokens=16,timeout_s=120,retries=1"
        )
        tr = run_episode(toy[0], pol, "relace", Limits(max_turns=1))
        assert tr.error is None, tr.error + log.read_text()[-2000:]
        t = tr.turns[0]
        assert t.prompt_tokens and t.prompt_tokens > 100  # the tool schemas and the task reached the model
        assert t.completion_tokens and 0 < t.completion_tokens <= 16
        assert t.model_time > 0


SERVER = textwrap.dedent("""
    import json, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    state = {"n": 0}
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["n"] += 1
            mode = body["model"]
            if mode == "slow":
                time.sleep(5)
            if mode == "flaky" and state["n"] % 2 == 1:
                self.send_response(503); self.send_header("Retry-After", "0"); self.end_headers()
                self.wfile.write(b"overloaded"); return
            if mode == "bad":
                self.send_response(400); self.end_headers(); self.wfile.write(b"unknown model"); return
            assert body["parallel_tool_calls"] is True and body["tools"]
            msg = {"role": "assistant", "content": "searching", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "grep_search",
                 "arguments": json.dumps({"query": "def resolve_redirects"})}},
                {"id": "b", "type": "function", "function": {"name": "view_file",
                 "arguments": json.dumps({"path": "requests/sessions.py", "view_range": [1, 20]})}},
                {"id": "c", "type": "function", "function": {"name": "view_file", "arguments": "{not json"}}]}
            out = json.dumps({"choices": [{"message": msg}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
            self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
            self.wfile.write(out.encode())
    srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
    print("ready", flush=True)
    srv.serve_forever()
""")


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    port = free_port()
    f = tmp_path_factory.mktemp("srv") / "server.py"
    f.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(f), str(port)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(10)


def test_parallel_tool_calls_retries_and_errors(toy, http_server):
    pol = OpenAIPolicy(model="flaky", base_url=http_server, retries=2, backoff_s=0.01)
    tr = run_episode(toy[2], pol, "relace", Limits(max_turns=1))
    t = tr.turns[0]
    assert [c.name for c in t.calls] == ["grep_search", "view_file", "view_file"]
    assert t.calls[0].arguments == {"query": "def resolve_redirects"}
    assert t.calls[2].arguments == "{not json"  # kept raw; the harness answers with an error
    assert not t.results[0].is_error and "resolve_redirects" in t.results[0].output
    assert t.results[2].is_error and "not valid JSON" in t.results[2].output
    assert (t.prompt_tokens, t.completion_tokens) == (7, 3)

    with pytest.raises(EndpointError, match="HTTP 400"):
        OpenAIPolicy(model="bad", base_url=http_server, retries=3, backoff_s=0.01).act([], [], final=False)
    with pytest.raises(EndpointError, match="giving up after 2 attempts"):
        OpenAIPolicy(model="slow", base_url=http_server, timeout_s=0.3, retries=1, backoff_s=0.01).act(
            [{"role": "user", "content": "x"}], [{"type": "function", "function": {"name": "f"}}], final=False
        )
    with pytest.raises(ValueError, match="model=NAME"):
        make_policy("openai")


def test_giving_up_on_a_request_closes_its_connection():
    """transformers serve stops generating a request whose client left (docs/own_model.md §2, measured):
    when its deadline passes, the policy must close the connection, not keep it open in its pool."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    left = threading.Event()

    def never_answer():
        conn, _ = listener.accept()
        conn.settimeout(20)
        try:
            while conn.recv(65536):  # the request, then nothing until the client leaves (EOF)
                pass
            left.set()
        except ConnectionResetError:
            left.set()
        except OSError:
            pass
        finally:
            conn.close()

    threading.Thread(target=never_answer, daemon=True).start()
    pol = OpenAIPolicy(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="", timeout_s=0.5, retries=0)
    try:
        with pytest.raises(EndpointError, match="total deadline"):
            pol.complete({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert left.wait(5), "the connection stayed open after the deadline: the server would go on generating"
    finally:
        listener.close()
