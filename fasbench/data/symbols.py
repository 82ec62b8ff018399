"""A task family small models can learn on a CPU: "find the files that define these k symbols", built
from real pure-Python packages installed in the running environment, gold from ``ast``.

Each task names ``k`` top-level functions or classes of one package (each from a different file) and
its gold is the ``k`` defining files with the definitions' line spans (``ast`` ``lineno`` to
``end_lineno``). A symbol is used only when the grep ``(def|class) NAME\\b`` matches exactly one line
of its package's corpus, so one search per symbol finds it and nothing else; with ``k`` = 6 a searcher
that makes one call a turn needs ``k + 1`` = 7 turns (6 searches and the report) where a parallel one
needs 2, which is what Relace's turn penalty pays for (notebook 06, profiles ``sft_mini`` / ``rl_mini``).

Splits are by package (:data:`HELD_OUT` packages give the ``test`` tasks, every other package the
``train`` tasks) and by symbol (a held-out symbol whose name is also a training symbol is dropped), so
held-out tasks ask for names the model never saw in training, in code it never saw.

A package's corpus is its ``.py`` files copied to ``cache_dir("corpora", "symbols", NAME-VERSION)``
(so a later upgrade of the package does not change a task); :func:`load_tasks` keeps the tasks in a
Task JSONL in the cache, ``root`` set (the corpus helper uses it as is). The task-set name is
``symbols[:SPLIT]`` (:mod:`fasbench.data.tasksets`).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import random
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from fasbench.base import contain
from fasbench.base.entities import parse_python
from fasbench.base.paths import cache_dir, child
from fasbench.records import Gold, Task, read_tasks
from fasbench.records import write_tasks as _write

#: Pure-Python packages of the environment (fasbench's own dependencies, so they are installed
#: wherever fasbench is). The first group gives training tasks, :data:`HELD_OUT` the held-out ones.
TRAIN_PACKAGES = (
    "click",
    "jinja2",
    "packaging",
    "filelock",
    "attr",
    "bashlex",
    "dotenv",
    "json5",
    "markdown_it",
    "platformdirs",
    "pluggy",
    "arrow",
    "bleach",
    "mistune",
    "lark",
    "typer",
    "yaml",
    "sortedcontainers",
    "soupsieve",
    "urllib3",
    "idna",
    "anyio",
    "httpx",
)
DEV = ("h11", "jmespath")  # a few dev tasks (SFT's dev split), packages of neither other group
HELD_OUT = ("requests", "starlette", "tenacity", "werkzeug", "tinycss2", "unidiff", "webcolors", "h2")
K = 6  # symbols a task names
QUERY = "Find the files that define these {k} symbols: {names}."
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{5,23}$")
_DEF = re.compile(r"(def|class) (\w+)")  # the lines ``(def|class) NAME\b`` matches, by NAME


class SymbolsError(ValueError):
    """A package that cannot give tasks (not installed, not pure Python, too few symbols)."""


def package_dir(name: str) -> Path:
    """The folder of the installed package ``name`` (an importable top-level package)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SymbolsError(f"package {name!r} is not installed as a package folder")
    return Path(list(spec.submodule_search_locations)[0])


def _version(name: str, folder: Path) -> str:
    for dist in (name, folder.name, name.replace("_", "-")):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    for dist, pkgs in importlib.metadata.packages_distributions().items():
        if dist == name:
            return importlib.metadata.version(pkgs[0])
    return "0"


def corpus(name: str) -> tuple[Path, str]:
    """(the corpus folder of package ``name``: its ``.py`` files copied once into the cache, its version)."""
    src = package_dir(name)
    version = _version(name, src)
    dst = child(cache_dir("corpora", "symbols"), f"{name}-{version}", what="package release")
    if not (dst / ".complete").exists():
        tmp = dst.with_name(dst.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        for p in sorted(src.rglob("*.py")):
            rel = p.relative_to(src)
            if "__pycache__" in rel.parts:
                continue
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, tmp / rel)
        shutil.rmtree(dst, ignore_errors=True)
        tmp.rename(dst)
        (dst / ".complete").write_text(version)
    return dst, version


def definitions(root: Path) -> dict[str, tuple[str, int, int]]:
    """``{name: (path, first line, last line)}`` of the top-level functions and classes of the corpus
    at ``root`` whose definition grep ``(def|class) NAME\\b`` matches exactly one line of the corpus."""
    found: dict[str, list[tuple[str, int, int]]] = {}
    texts: list[str] = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if any(part.startswith(("test", "_vendor")) for part in rel.split("/")):
            continue
        try:  # through fasbench.base.contain: a FIFO or a file leaving the corpus is skipped, reads bounded
            data, more = contain.read_bytes(root, rel)
        except contain.PathRefused:
            continue
        text = data.decode("utf-8", errors="replace")
        texts.append(text)
        tree = parse_python(text)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _NAME.match(node.name):
                found.setdefault(node.name, []).append((rel, node.lineno, node.end_lineno or node.lineno))
    greps = Counter(m.group(2) for text in texts for m in _DEF.finditer(text))  # what each grep would match
    return {name: where[0] for name, where in found.items() if len(where) == 1 and greps[name] == 1}


def package_tasks(
    name: str, k: int = K, n: int = 20, seed: int = 0, split: str = "train", exclude: set[str] | frozenset = frozenset()
) -> list[Task]:
    """Up to ``n`` tasks of ``k`` symbols of package ``name``, each symbol from a different file, no
    symbol used twice in the package's tasks; names in ``exclude`` are not used."""
    root, version = corpus(name)
    defs = {s: w for s, w in definitions(root).items() if s not in exclude}
    by_file: dict[str, list[str]] = {}
    for s, (path, _, _) in sorted(defs.items()):
        by_file.setdefault(path, []).append(s)
    rng = random.Random(f"{seed}|{name}")
    for names in by_file.values():
        rng.shuffle(names)
    tasks = []
    while len(tasks) < n:
        files = [f for f, names in by_file.items() if names]
        if len(files) < k:
            break
        picked = [by_file[f].pop() for f in rng.sample(sorted(files), k)]
        gold = {defs[s][0]: [[defs[s][1], defs[s][2]]] for s in picked}
        tasks.append(
            Task(
                id=f"symbols-{name}-{len(tasks):03d}",
                query=QUERY.format(k=k, names=", ".join(picked)),
                repo=f"{name}=={version}",
                gold=Gold(edited=gold, source="manual"),
                root=str(root),
                split=split,
                meta={"family": "symbols", "package": name, "version": version, "symbols": picked, "k": k},
            )
        )
    return tasks


def symbol_tasks(
    k: int = K,
    per_package: int = 20,
    held_out_per_package: int = 10,
    seed: int = 0,
    train: Sequence[str] = TRAIN_PACKAGES,
    dev: Sequence[str] = DEV,
    held_out: Sequence[str] = HELD_OUT,
) -> list[Task]:
    """The family: ``train`` tasks from the training packages, ``dev`` and ``test`` tasks from the
    :data:`DEV` and :data:`HELD_OUT` ones (their symbols never named in a training task). Packages that are not installed or give
    fewer than ``k`` usable files are skipped."""
    out: list[Task] = []
    for name in train:
        try:
            out += package_tasks(name, k, per_package, seed, "train")
        except SymbolsError:
            continue
    seen = {s for t in out for s in t.meta["symbols"]}
    for names, split in ((dev, "dev"), (held_out, "test")):
        for name in names:
            try:
                out += package_tasks(name, k, held_out_per_package, seed, split, exclude=seen)
            except SymbolsError:
                continue
    return out


def load_tasks(split: str | None = None, k: int = K) -> list[Task]:
    """The family's tasks (``split``: train | dev | test | None = all), from its JSONL in the cache,
    built on first use (and again when a corpus folder is gone)."""
    path = cache_dir("tasks") / f"symbols-k{k}.jsonl"
    tasks = read_tasks(path) if path.exists() else []
    if not tasks or not all(t.root and Path(t.root).is_dir() for t in tasks):
        tasks = symbol_tasks(k=k)
        _write(path, tasks)
    return [t for t in tasks if split is None or t.split == split]
