"""Processes a tool call may leave behind: find them by a marker in their command line (the ``reap``
fixture in conftest.py kills what a failing test left), for the wall and confinement tests."""

from __future__ import annotations

import os


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
