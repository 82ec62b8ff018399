"""A hostile OpenAI-compatible endpoint on 127.0.0.1, run in a thread of the test: what it answers is
chosen by the request's ``model`` (see ``MODES``). It speaks raw HTTP/1.1 on the socket so that it can
drip, lie about lengths and stream 300 MB from a generator without holding it."""

from __future__ import annotations

import gzip
import json
import os
import socketserver
import threading
import time
from contextlib import contextmanager

BIG = 300 * 2**20  # the 300 MB answer
CHUNK = b"x" * 2**20  # one object, written again and again (the server holds 1 MB, not 300)


def _ok_call(i, args='{"query": "x"}'):
    return {"id": f"c{i}", "type": "function", "function": {"name": "grep_search", "arguments": args}}


SHAPES = {  # model name -> the 200 reply's JSON text
    "no-choices": json.dumps({"id": "x", "object": "chat.completion"}),
    "choices-dict": json.dumps({"choices": {"0": {"message": {"content": "hi"}}}}),
    "message-str": json.dumps({"choices": [{"message": "hello"}]}),
    "tool-calls-dict": json.dumps({"choices": [{"message": {"content": None, "tool_calls": {"id": "a"}}}]}),
    "arguments-dict": json.dumps(
        {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [
                            _ok_call(0),
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "grep_search", "arguments": {"q": 1}},
                            },
                        ],
                    }
                }
            ]
        }
    ),
    "usage-str": json.dumps({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "many"}}),
    "deep": "[" * 100_000 + "]" * 100_000,
    "deep-ok-parse": json.dumps({"choices": [{"message": {"content": "hi"}}], "x": json.loads("[" * 500 + "]" * 500)}),
    "long-answer": json.dumps({"choices": [{"message": {"content": "a" * 1_000_000}}]}),
    "deep-args": json.dumps(
        {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [_ok_call(0, '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}")],
                    }
                }
            ]
        }
    ),
}
HTML = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><h1>Bad Gateway</h1></body></html>\n"


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _head(w, status: str, headers: dict) -> None:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in {**headers, "Connection": "close"}.items()]
    w.write(("\r\n".join(lines) + "\r\n\r\n").encode())


def _json(w, text: str | bytes, status: str = "200 OK", ctype: str = "application/json") -> None:
    data = text.encode() if isinstance(text, str) else text
    _head(w, status, {"Content-Type": ctype, "Content-Length": len(data)})
    w.write(data)


def _stream(w, stop: threading.Event, prefix: bytes = b"") -> None:
    """BIG bytes from a generator: a JSON start, then 1 MB chunks until BIG or the client leaves."""
    w.write(prefix)
    sent = len(prefix)
    while sent < BIG and not stop.is_set():
        w.write(CHUNK)
        sent += len(CHUNK)


def answer(mode: str, w, stop: threading.Event, hits: dict) -> None:
    hits[mode] = hits.get(mode, 0) + 1
    if mode == "drip":  # headers at once, then the body one byte a second
        _head(w, "200 OK", {"Content-Type": "application/json", "Content-Length": 100_000})
        while not stop.wait(1.0):
            w.write(b" ")
            w.flush()
    elif mode == "drip-headers":  # the status line, then a header one byte a second
        w.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while not stop.wait(1.0):
            w.write(b"a")
            w.flush()
    elif mode in SHAPES:
        _json(w, SHAPES[mode])
    elif mode == "not-json":
        _json(w, b"hello, this is not json", ctype="text/plain")
    elif mode == "html":
        _json(w, HTML, ctype="text/html")
    elif mode == "big":  # 300 MB of a valid-looking answer
        _head(w, "200 OK", {"Content-Type": "application/json", "Content-Length": BIG})
        _stream(w, stop, b'{"choices": [{"message": {"content": "')
    elif mode == "500-huge":  # an error status with a 300 MB body
        _head(w, "500 Internal Server Error", {"Content-Type": "text/plain", "Content-Length": BIG})
        _stream(w, stop, b"internal error: ")
    elif mode == "gzip":  # 50 MB of zeros, gzip-encoded (~50 KB on the wire)
        data = gzip.compress(b"0" * (50 * 2**20), 9)
        _head(
            w, "200 OK", {"Content-Type": "application/json", "Content-Encoding": "gzip", "Content-Length": len(data)}
        )
        w.write(data)
    elif mode == "judge-ok":
        _json(
            w, json.dumps({"choices": [{"message": {"content": '```json\n{"score": 7, "justification": "ok"}\n```'}}]})
        )
    else:
        _json(w, json.dumps({"error": f"unknown mode {mode}"}), status="400 Bad Request")


@contextmanager
def hostile_server():
    """(base_url, hits): hits counts the requests per mode. Stopping ends every drip."""
    stop = threading.Event()
    hits: dict = {}

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            self.rfile.readline()
            headers = {}
            while True:
                line = self.rfile.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                k, _, v = line.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = json.loads(self.rfile.read(int(headers.get("content-length") or 0)) or b"{}")
            try:
                answer(str(body.get("model")), self.wfile, stop, hits)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up: what a bounded client does

    srv = _Server(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1", hits
    finally:
        stop.set()
        srv.shutdown()
        srv.server_close()


class PeakRSS:
    """The peak growth of this process's resident memory while the block runs (sampled every 5 ms)."""

    def __enter__(self):
        self.base = self.peak = _rss()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _rss())

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.base) / 2**20


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def wait_s(fn, limit_s: float):
    """(result or exception, seconds) of ``fn()`` run in a thread, or (None, None) if it is still running
    after ``limit_s`` (a hang guard, so that the test fails instead of hanging)."""
    out: dict = {}

    def run():
        t0 = time.monotonic()
        try:
            out["r"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["r"] = e
        out["s"] = time.monotonic() - t0

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit_s)
    return (out.get("r"), out.get("s")) if not th.is_alive() else (None, None)
