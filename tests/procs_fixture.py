"""Processes a tool call may leave behind: find them by a marker in their command line, and kill
what a failing test left (the ``reap`` fixture), for the wall and confinement tests."""

from __future__ import annotations

import os
import signal

import pytest


def procs_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read().replace(b"\x00", b" "):
                        found.append(int(pid))
            except OSError:
                pass
    return found


@pytest.fixture()
def reap():
    markers: list[str] = []
    yield markers
    for m in markers:  # whatever a failing run left behind
        for pid in procs_with(m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
