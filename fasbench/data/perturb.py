"""Semantics-preserving perturbations of a corpus, with an exact record of what moved where.

A contamination control (docs: notebooks/11_contamination.ipynb): a model that memorised
``django/db/models/query.py`` from its training data answers from memory; on a corpus where that
module is ``django/db/models/query_core.py`` it has to search. RepoMirage (Li et al., arXiv 2605.26177)
perturbs SWE-bench Verified repositories the same way (renamed/relocated structure, renamed
identifiers: three kinds of semantics-preserving repository-level perturbation) and reports drops
from 66.8% to 25.3% on its structure-bottleneck tasks. Four kinds here, each recorded:

- ``reorder``: consecutive undecorated functions (top level, or methods of a top-level class) are
  permuted inside their run; a run whose names repeat is left alone. Done on lines (Python's
  ``ast`` gives each statement's span), so every line's new number is known: the record keeps
  ``[old_start, old_end, new_start]`` blocks per file.
- ``private``: module-level private functions/classes (``_name``) are renamed across the corpus by
  rope (``rope.refactor.rename.Rename``, strings and comments included) to ``_name_<word>``.
- ``modules`` / ``dirs``: modules and packages (never the top-level package) are renamed by rope,
  which rewrites every import (absolute, relative, ``pkg.mod.attr``) to ``<name>_<word>``.

Every rename is accepted only if it keeps each changed file's line count and each changed line
equals the original once the new name is read back as the old one, and if no occurrence of the old
name (dotted path, or the private word) is left in the corpus's code and build files (``*.py``,
``*.pyx``, ``*.pxd``, ``*.cfg``, ``*.toml``, ``*.ini``): a candidate that fails, or that rope cannot
analyse, is skipped and the next one (in the seed's order) is tried. The gold files come first
among the candidates, so a memorised gold path is what moves.

The perturbed tree lives in ``cache_dir("corpora")/perturbed/<key>/`` (unchanged files hard-linked
to the source tree, changed ones written anew: the source is never written) with the record beside
it in ``<key>.json`` (spec, seed, source root, focus files, moves, renames, reorders); the key hashes
the source, the spec and the focus files, so the same call gives the same tree.
``fasbench.data.perturb_gold`` puts a task's gold and text on it.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import random
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

from fasbench.base import contain
from fasbench.base.entities import parse_python
from fasbench.base.paths import building, child, replace_dir
from fasbench.base.specs import build, parse_spec
from fasbench.data.corpus import CorpusError, portable_root, root_dir
from fasbench.data.pyedit import code_only, in_docs, reorder_text

WORDS = ("core", "impl", "base", "main", "defs", "ops", "parts", "unit")
SCANNED = (".py", ".pyx", ".pxd", ".cfg", ".toml", ".ini")
ATTEMPTS = 4  # candidates tried per rename asked for
RECORD_VERSION = 1
MAX_TEXT_BYTES = 8 << 20  # a scanned file larger than this is left as it is (never read whole)


class PerturbError(ValueError):
    """A bad perturbation spec or a corpus that cannot be perturbed (one line)."""


@dataclass
class PerturbSpec:
    """``perturb:seed=0,modules=2,dirs=1,private=6,reorder=4``: how many of each kind (0 = none)."""

    seed: int = 0
    modules: int = 2
    dirs: int = 1
    private: int = 6
    reorder: int = 4

    def text(self) -> str:
        return "perturb:" + ",".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))


def parse_perturb(spec: str) -> PerturbSpec:
    """A ``perturb[:key=value,...]`` spec; a clear error (PerturbError) otherwise."""
    try:
        name, kw = parse_spec(spec)
        if name != "perturb":
            raise ValueError(f"perturbation spec must start with 'perturb', got {name!r} (e.g. perturb:seed=1)")
        out = build(PerturbSpec, "perturb", kw)
    except (ValueError, TypeError) as e:
        raise PerturbError(str(e).replace("policy spec", "perturbation spec")) from None
    bad = [f.name for f in dataclasses.fields(out) if getattr(out, f.name) < 0]
    if bad:
        raise PerturbError(f"perturbation spec {spec!r}: {', '.join(bad)} must be >= 0")
    return out


# ---------------------------------------------------------------- the tree and its text


class Tree:
    """The perturbed copy being built: hard links to the source, text of changed files in memory
    until written (a write replaces the link by a new file)."""

    def __init__(self, src: Path, dst: Path):
        shutil.copytree(src, dst, symlinks=True, copy_function=os.link)
        self.root = dst
        self.changed: set[str] = set()
        self.text: dict[str, str] = {}
        for p in sorted(dst.rglob("*")):
            if p.suffix in SCANNED and p.is_file() and not p.is_symlink():
                rel = p.relative_to(dst).as_posix()
                try:  # bounded and regular files only: a 6 GiB sparse .toml costs one cap, not its size
                    data, more = contain.read_bytes(dst, rel, MAX_TEXT_BYTES)
                    if not more:
                        self.text[rel] = data.decode("utf-8")
                except (UnicodeDecodeError, contain.PathRefused):
                    continue

    def write(self, rel: str, text: str) -> None:
        p = self.root / rel
        tmp = p.with_name(p.name + ".perturb-tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)  # a new inode: the hard-linked source is untouched
        self.text[rel] = text
        self.changed.add(rel)

    def move(self, old: str, new: str) -> list[tuple[str, str]]:
        """Rename a file or folder; the (old, new) file paths moved."""
        src, dst = self.root / old, self.root / new
        files = [
            p.relative_to(self.root).as_posix()
            for p in ([src] if src.is_file() else sorted(src.rglob("*")))
            if p.is_file() or p.is_symlink()
        ]
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        pairs = [(f, new + f[len(old) :]) for f in files]
        for a, b in pairs:
            if a in self.text:
                self.text[b] = self.text.pop(a)
            if a in self.changed:
                self.changed.discard(a)
                self.changed.add(b)
        return pairs

    def count(self, pattern: re.Pattern, texts: dict[str, str] | None = None) -> int:
        return sum(len(pattern.findall(t)) for t in {**self.text, **(texts or {})}.values())


def _lines_match(old: str, new: str, back: list[tuple[str, str]]) -> bool:
    """Same line count, and each line of ``new`` reads as ``old``'s once every new name is read back."""
    a, b = old.split("\n"), new.split("\n")
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x != y and read_back(y, back) != x:
            return False
    return True


def read_back(line: str, back: list[tuple[str, str]]) -> str:
    """``line`` with each new name of ``back`` (``(new, old)`` pairs, as a whole word) turned back into
    its old name: a perturbed line read as the original (the perturbation's and the gold's checks)."""
    for new, old in back:
        line = re.sub(rf"(?<!\w){re.escape(new)}(?!\w)", old, line)
    return line


def _fresh(tree: Tree, name: str) -> bool:
    return not tree.count(re.compile(rf"(?<!\w){re.escape(name)}(?!\w)"))


def _new_name(tree: Tree, rng: random.Random, name: str, folder: Path | None = None) -> str | None:
    """``name_<word>`` that occurs nowhere in the corpus (nor as a file or folder in ``folder``)."""
    for w in rng.sample(WORDS, len(WORDS)):
        cand = f"{name}_{w}"
        if _fresh(tree, cand) and not (folder and ((folder / cand).exists() or child(folder, cand, ".py").exists())):
            return cand
    return None


# ---------------------------------------------------------------- rope renames


def _rope_project(root: Path):
    """A rope project on ``root`` with rope's default preferences only: the corpus's ``pyproject.toml``
    (``[tool.rope] source_folders`` outside the corpus, a 6 GiB sparse file) and the user's global
    rope config are never read."""
    # local import: rope (heavy), as in _rope_changes
    from rope.base.prefs import Prefs
    from rope.base.project import Project

    class _Project(Project):
        def _init_prefs(self, prefs):  # rope's own, less get_config(...).parse() of the files
            self.prefs = Prefs()
            self.prefs.add_callback("ignored_resources", self.ignored.set_patterns)
            self.ignored.set_patterns(self.prefs.ignored_resources)
            for key, value in prefs.items():
                self.prefs.set(key, value)
            self._init_other_parts()
            self._init_ropefolder()

    return _Project(str(root), ropefolder=None)


def _rope_changes(
    tree: Tree, rel: str, offset: int | None, new: str, docs: bool, word: str, dotted: str | None = None
) -> dict[str, str] | None:
    """{path: new text} of rope's rename of the module/folder ``rel`` (offset None) or of the name at
    ``offset`` in ``rel``; None when rope cannot analyse a file that may refer to it."""
    # local import: rope (heavy) is needed only when a corpus is perturbed, never on the CLI's start-up path
    from rope.refactor.rename import Rename

    rx = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)")
    files = [
        p
        for p, t in tree.text.items()
        if p.endswith(".py")
        and rx.search(t)
        and (dotted is None or p == rel or p.startswith(rel + "/") or _may_refer(tree.root, p, t, dotted))
    ]
    with warnings.catch_warnings():  # rope 1.x warns about its own deprecated source-folder API
        warnings.simplefilter("ignore", DeprecationWarning)
        project = _rope_project(tree.root)
    try:
        res = project.get_resource(rel)
        out = {}
        for f in files:
            try:
                ch = Rename(project, res, offset).get_changes(new, docs=docs, resources=[project.get_resource(f)])
            except Exception:  # rope's parser or inference failed on this file (rope raises many kinds)
                return None
            for c in getattr(ch, "changes", []):
                if type(c).__name__ == "ChangeContents":
                    out[c.resource.path] = c.new_contents
        return out
    finally:
        project.close()


def _accept(
    tree: Tree, changes: dict[str, str], back: list[tuple[str, str]], gone: re.Pattern, code_only_: bool = False
) -> bool:
    """Every changed line reads back as the original, and no occurrence of the old name is left
    (with ``code_only_``, none outside comments and docstrings)."""
    if any(p not in tree.text or not _lines_match(tree.text[p], t, back) for p, t in changes.items()):
        return False
    texts = {**tree.text, **changes}
    return not any(gone.search(code_only(p, t) if code_only_ else t) for p, t in texts.items() if gone.search(t))


def _modules(tree: Tree) -> list[str]:
    """Package modules (``*.py`` in a folder with ``__init__.py``, not ``__init__``/``conftest``/``setup``)."""
    return [
        p
        for p in tree.text
        if p.endswith(".py")
        and "/" in p
        and Path(p).stem not in ("__init__", "conftest", "setup", "__main__")
        and (tree.root / Path(p).parent / "__init__.py").is_file()
        and Path(p).stem.isidentifier()
    ]


def dotted_name(root: Path, rel: str) -> str:
    """The import name of a module or package folder: its path from the source root (the first folder
    up without ``__init__.py``: ``src/flask/app.py`` → ``flask.app``)."""
    parts = list(Path(rel[:-3] if rel.endswith(".py") else rel).parts)
    if parts[-1] == "__init__":
        parts.pop()
    keep = 1
    while keep < len(parts) and (root / Path(*parts[: len(parts) - keep]) / "__init__.py").is_file():
        keep += 1
    return ".".join(parts[len(parts) - keep :])


def _subpackages(tree: Tree) -> list[str]:
    """Package folders inside another package (a top-level package is never renamed: code outside the
    corpus imports it by name)."""
    dirs = {str(Path(p).parent) for p in tree.text if p.endswith("/__init__.py")}
    return sorted(
        d
        for d in dirs
        if "/" in d and (tree.root / Path(d).parent / "__init__.py").is_file() and Path(d).name.isidentifier()
    )


def _imports(root: Path, rel: str, text: str) -> set[str]:
    """Absolute names a Python file imports (``from a import b`` gives ``a`` and ``a.b``)."""
    mod = parse_python(text)
    if mod is None:
        return {"*"}  # unparsable: rope decides
    here = dotted_name(root, rel).split(".")
    pkg = here if rel.endswith("/__init__.py") else here[:-1]
    out = set()
    for node in ast.walk(mod):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(pkg[: len(pkg) - node.level + 1]) if node.level else ""
            base = ".".join(x for x in (base, node.module or "") if x)
            out.add(base)
            out.update(f"{base}.{a.name}" if base else a.name for a in node.names)
    return out


def _may_refer(root: Path, rel: str, text: str, dotted: str) -> bool:
    """Whether a file's imports can reach ``dotted`` (every reference to a module starts at an import)."""
    return any(
        a == "*" or a == dotted or a.startswith(dotted + ".") or dotted.startswith(a + ".")
        for a in _imports(root, rel, text)
    )


def _order(cands: list[str], focus: list[str], rng: random.Random) -> list[str]:
    first = [c for c in cands if c in focus]
    rest = [c for c in cands if c not in focus]
    rng.shuffle(first)
    rng.shuffle(rest)
    return first + rest


def _rename_paths(tree: Tree, rec: dict, n: int, rng: random.Random, focus: list[str], kind: str) -> None:
    if kind == "module":
        cands = _order(_modules(tree), focus, rng)
    else:  # packages holding a focus file first, never a top-level one
        pkgs = _subpackages(tree)
        near = [d for d in pkgs if any(f.startswith(d + "/") for f in focus)]
        cands = _order(pkgs, near, rng)
    done = tried = 0
    dir_moves: list[tuple[str, str]] = []
    for rel in cands:
        if done >= n or tried >= n * ATTEMPTS:
            break
        for o, nw in dir_moves:  # an earlier folder rename moved it
            if rel == o or rel.startswith(o + "/"):
                rel = nw + rel[len(o) :]
        if not (tree.root / rel).exists():
            continue
        tried += 1
        old = Path(rel).stem if kind == "module" else Path(rel).name
        dotted = dotted_name(tree.root, rel)
        new = _new_name(tree, rng, old, (tree.root / rel).parent)
        if new is None:
            continue
        changes = _rope_changes(tree, rel, None, new, docs=False, word=old, dotted=dotted)
        gone = re.compile(rf"(?<![\w.]){re.escape(dotted)}(?!\w)")
        if changes is None or not _accept(tree, changes, [(new, old)], gone, code_only_=True):
            continue
        new_dotted = ".".join(dotted.split(".")[:-1] + [new])
        for p in [p for p, t in tree.text.items() if p.endswith(".py") and gone.search(t)]:
            changes[p] = changes.get(p, tree.text[p])  # docs naming the old module name the new one
        for p, t in changes.items():
            tree.write(p, in_docs(t, gone, new_dotted) if p.endswith(".py") else t)
        new_rel = str(Path(rel).with_name(new + (".py" if kind == "module" else "")))
        for a, b in tree.move(rel, new_rel):
            orig = rec["moves_back"].pop(a, a)
            rec["moves_back"][b] = orig
        if kind == "package":
            dir_moves.append((rel, new_rel))
        rec["renames"].append(
            {
                "kind": kind,
                "old": dotted,
                "new": dotted_name(tree.root, new_rel),
                "old_path": rel,
                "new_path": new_rel,
                "old_name": old,
                "new_name": new,
                "files_changed": len(changes),
            }
        )
        done += 1


def _private_defs(text: str) -> list[tuple[str, int]]:
    """(name, offset of the name) of each module-level ``def _x`` / ``class _X``."""
    mod = parse_python(text)
    if mod is None:
        return []
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    out = []
    for node in mod.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name.startswith("_")
            and not node.name.startswith("__")
            and len(node.name) > 2
        ):
            at = text.find(node.name, starts[node.lineno - 1] + node.col_offset)
            if at >= 0:
                out.append((node.name, at))
    return out


def _rename_private(tree: Tree, rec: dict, n: int, rng: random.Random, focus_now: list[str]) -> None:
    files = _order([p for p in tree.text if p.endswith(".py")], focus_now, rng)
    done = tried = 0
    for rel in files:
        defs = _private_defs(tree.text[rel])
        rng.shuffle(defs)
        for name, offset in defs:
            if done >= n or tried >= n * ATTEMPTS:
                return
            if any(r["old"] == name or r["new"] == name for r in rec["renames"] if r["kind"] == "private"):
                continue
            tried += 1
            if not _private_defs(tree.text[rel]) or (name, offset) not in _private_defs(tree.text[rel]):
                continue
            new = _new_name(tree, rng, name)
            if new is None:
                continue
            changes = _rope_changes(tree, rel, offset, new, docs=True, word=name)
            gone = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
            if changes is None or not changes or not _accept(tree, changes, [(new, name)], gone):
                continue
            for p, t in changes.items():
                tree.write(p, t)
            rec["renames"].append(
                {
                    "kind": "private",
                    "old": name,
                    "new": new,
                    "file": rec["moves_back"].get(rel, rel),
                    "files_changed": len(changes),
                }
            )
            done += 1
        if done >= n or tried >= n * ATTEMPTS:
            return


# ---------------------------------------------------------------- reorder


def _reorder(tree: Tree, rec: dict, n: int, rng: random.Random, focus: list[str]) -> None:
    done = 0
    for rel in _order([p for p in tree.text if p.endswith(".py")], focus, rng):
        if done >= n:
            return
        got = reorder_text(tree.text[rel], rng)
        if got is None:
            continue
        tree.write(rel, got[0])
        rec["reorders"][rel] = got[1]
        done += 1


# ---------------------------------------------------------------- build


def corpus_key(root: str | Path, spec: PerturbSpec, focus: list[str]) -> str:
    src = portable_root(root) or str(root)
    h = hashlib.sha256(json.dumps([src, spec.text(), sorted(focus), RECORD_VERSION]).encode()).hexdigest()[:12]
    return f"{Path(root).name}@{h}"


def perturb_corpus(root: str | Path, spec: PerturbSpec | str, focus: list[str] = ()) -> tuple[Path, dict]:
    """The perturbed copy of the corpus at ``root`` and its record (built once, then read back).
    ``focus``: files (gold) whose modules, packages, private names and functions are perturbed first."""
    spec = parse_perturb(spec) if isinstance(spec, str) else spec
    root, focus = Path(root), sorted(set(focus))
    if not root.is_dir():
        raise PerturbError(f"corpus {root} is not a folder")
    base = root_dir() / "perturbed"
    key = corpus_key(root, spec, focus)
    tree_dir, rec_path = base / key, base / f"{key}.json"
    if tree_dir.is_dir() and rec_path.exists():
        return tree_dir, json.loads(rec_path.read_text())
    rng = random.Random(f"{spec.seed}:{root.name}")  # the corpus by name: the same wherever it lies
    rec = {
        "version": RECORD_VERSION,
        "spec": spec.text(),
        "seed": spec.seed,
        "source_root": portable_root(root),
        "focus": focus,
        "renames": [],
        "reorders": {},
        "moves_back": {},
    }
    with building(tree_dir) as tmp:
        try:
            tree = Tree(root, tmp / "tree")
        except OSError as e:
            raise CorpusError("io-error", f"cannot copy {root}: {e}") from None
        _reorder(tree, rec, spec.reorder, rng, focus)  # first: its blocks are on the original paths and lines
        _rename_private(tree, rec, spec.private, rng, focus)
        _rename_paths(tree, rec, spec.modules, rng, focus, "module")
        _rename_paths(tree, rec, spec.dirs, rng, focus, "package")
        back = rec.pop("moves_back")
        rec["moves"] = {v: k for k, v in back.items() if k != v}
        rec["changed"] = sorted(back.get(p, p) for p in tree.changed)  # original paths whose text changed
        replace_dir(tmp / "tree", tree_dir)
    rec_path.write_text(json.dumps(rec, indent=1, sort_keys=True))
    return tree_dir, rec
