"""The one normaliser of the paths a main agent writes (``/testbed/x``, ``./x``, ``x`` after a ``cd``).

SWE-bench images, and so the agents of the shipped trajectories, see the repository at ``ROOT``.
``agent_path`` makes such a path repository-relative; its callers need three strictnesses, kept as
they were when each had its own copy (``kind``):

- ``"file"`` (the agent-trace task gold ``viewing``, e2e's looks, SWE-Explore read regions): the
  word is stripped of quotes and ``,;``, must be path-like (no spaces, globs, ``$``), not end in
  ``/``, resolve (against ``cwd``) inside ``ROOT``, not be hidden (``.github`` excepted) and look like
  a file (a suffix or one of ``KNOWN_NAMES``); otherwise None.
- ``"any"`` (SFT reference traces): any path resolved against ``cwd``; ``"."`` for the root itself,
  None outside ``ROOT``; nothing is stripped or filtered.
- ``"text"`` (the analysis's first edit, which matches paths by suffix): quotes stripped, a leading
  ``/testbed/`` and ``./`` removed, nothing resolved; paths outside the repository are returned as
  written (``/tmp/x`` stays, so that temporary files can be told apart); never None.
"""

from __future__ import annotations

import posixpath
import re

ROOT = "/testbed"
KINDS = ("file", "any", "text")
KNOWN_NAMES = {"Makefile", "Dockerfile", "LICENSE", "README", "AUTHORS", "CHANGES", "setup.cfg", "tox.ini"}
_PATHLIKE = re.compile(r"^[\w.+@/-]+$")


def agent_path(path: str, cwd: str = ROOT, kind: str = "file") -> str | None:
    """``path`` as the agent wrote it (in ``cwd``) → repository-relative, by ``kind`` (module doc)."""
    if kind == "text":
        p = path.strip().strip("'\"")
        if p.startswith(ROOT + "/"):
            p = p[len(ROOT) + 1 :]
        while p.startswith("./"):
            p = p[2:]
        return p
    if kind == "any":
        full = posixpath.normpath(posixpath.join(cwd, path))
        if full == ROOT:
            return "."
        return full[len(ROOT) + 1 :] if full.startswith(ROOT + "/") else None
    if kind != "file":
        raise ValueError(f"agent_path: unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    path = path.strip().strip("'\"`,;")
    if not path or not _PATHLIKE.match(path) or path.endswith("/"):
        return None
    full = posixpath.normpath(posixpath.join(cwd, path))
    if not (full == ROOT or full.startswith(ROOT + "/")):
        return None
    rel = full[len(ROOT) + 1 :]
    if not rel or rel.startswith(".") and not rel.startswith(".github"):
        return None
    base = posixpath.basename(rel)
    if "." not in base.strip(".") and base not in KNOWN_NAMES:
        return None
    return rel
