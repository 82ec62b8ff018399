"""A real, small corpus with known gold, for tests and smoke runs without the SWE-bench corpora:
the source of the installed ``requests`` package copied into a folder, and hand-written issues
whose gold is the function that must change (line ranges found with ``ast`` in that copy, so the
gold follows the installed version)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

from fasbench.records import Gold, Task

# (id, query, gold file, gold function) — written like real bug reports.
ISSUES = [
    (
        "toy-encode-params",
        "Posting a list of tuples as `params` encodes the values wrongly. `RequestEncodingMixin._encode_params` "
        "should keep the order of the tuples and encode each value; instead repeated keys are dropped.",
        "requests/models.py",
        "_encode_params",
    ),
    (
        "toy-no-proxy-cidr",
        "no_proxy with a CIDR block is ignored\n\nSetting NO_PROXY=192.168.0.0/24 still sends requests for "
        "192.168.0.5 through the proxy. I think `should_bypass_proxies` does not check `address_in_network` "
        "for IP hosts when the port is given.",
        "requests/utils.py",
        "should_bypass_proxies",
    ),
    (
        "toy-redirect-loop",
        "TooManyRedirects is raised too early\n\n```\nTraceback (most recent call last):\n"
        '  File "app.py", line 4, in <module>\n    s.get(url)\n'
        '  File "/usr/lib/python3/site-packages/requests/sessions.py", line 703, in send\n'
        "    history = [resp for resp in gen]\n"
        '  File "/usr/lib/python3/site-packages/requests/sessions.py", line 191, in resolve_redirects\n'
        "    raise TooManyRedirects(\n"
        "requests.exceptions.TooManyRedirects: Exceeded 30 redirects.\n```\n"
        "The count in resolve_redirects starts at one too many.",
        "requests/sessions.py",
        "resolve_redirects",
    ),
    (
        "toy-digest-auth",
        "HTTPDigestAuth fails with qop=auth-int: build_digest_header only handles 'auth' and returns None "
        "for servers that offer `auth,auth-int`.",
        "requests/auth.py",
        "build_digest_header",
    ),
    (
        "toy-retry-adapter",
        "HTTPAdapter ignores max_retries when given an int after pickling: `__setstate__` does not rebuild "
        "the pool manager with the retry settings, so init_poolmanager gets the defaults.",
        "requests/adapters.py",
        "__setstate__",
    ),
]


def package_source(name: str = "requests") -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed; the toy corpus copies its source")
    return Path(list(spec.submodule_search_locations)[0])


def def_range(path: Path, func: str) -> list[int]:
    """Lines [start, end] of the last definition named ``func`` in a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func]
    if not found:
        raise RuntimeError(f"{path} has no function {func!r}")
    n = found[-1]
    return [n.lineno, n.end_lineno or n.lineno]


def make_corpus(dest: str | Path, name: str = "requests") -> Path:
    """Copy the package source (plus a tests folder with one test file) into ``dest``."""
    dest = Path(dest)
    src = package_source(name)
    if not (dest / name).exists():
        shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (dest / "tests").mkdir(exist_ok=True)
        (dest / "tests" / "test_sessions.py").write_text(
            "from requests.sessions import Session\n\n\ndef test_resolve_redirects():\n"
            "    s = Session()\n    assert s.max_redirects == 30\n",
            encoding="utf-8",
        )
    return dest


def toy_tasks(root: str | Path) -> list[Task]:
    """The toy issues on a corpus made by :func:`make_corpus`, with gold located in it."""
    root = Path(root)
    out = []
    for tid, q, f, fn in ISSUES:
        out.append(
            Task(
                id=tid,
                query=q,
                repo="psf/requests",
                root=str(root),
                split="toy",
                gold=Gold(edited={f: [def_range(root / f, fn)]}, source="manual"),
            )
        )
    return out
