"""Start, wait for and stop the real server processes some tests talk to (`transformers serve`,
JupyterLab)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
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
