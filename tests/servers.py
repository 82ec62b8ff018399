"""Start, wait for and stop the real server processes some tests talk to (`transformers serve`,
JupyterLab, fasbench.policies.scripted_server)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(argv: list[str], log: Path, env: dict | None = None, stop_s: float = 20):
    """Run ``argv`` with stdout and stderr to ``log``; terminate it (kill after ``stop_s``) on exit."""
    out = open(log, "w")
    proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(stop_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()


def wait_http(url: str, proc: subprocess.Popen, timeout: float, log: Path | None = None) -> None:
    """Return once ``url`` answers with a status below 500; raise if ``proc`` exits first or
    ``timeout`` seconds pass (with the end of ``log``)."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return
        except OSError:
            pass
        tail = f":\n{log.read_text()[-3000:]}" if log is not None and log.exists() else ""
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with status {proc.returncode}{tail}")
        if time.time() > deadline:
            raise TimeoutError(f"{url} not up after {timeout} s{tail}")
        time.sleep(0.5)


@contextmanager
def scripted_server(*args: str):
    """``fasbench scripted-server`` in its own process on a free port (``args``: its options, e.g.
    ``--delay-s 0.01 --turns 2``); yields its ``/v1`` base URL once it prints ``ready PORT``, and
    stops it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fasbench.cli", "scripted-server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().split()
        assert line and line[0] == "ready", f"scripted server did not start: {line}"
        yield f"http://127.0.0.1:{line[1]}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def recording_chat_server(message: dict, finish_reason: str = "stop"):
    """A real HTTP server on 127.0.0.1 answering every chat-completions POST with ``message`` (the
    assistant's reply) and ``finish_reason``; yields its ``/v1`` base URL and the list of request
    bodies it received, in order."""
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            out = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [
                        {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", **message}}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1", bodies
    finally:
        srv.shutdown()
        srv.server_close()
