"""Every file read on a model's or a task's behalf goes through ``fasbench.base.contain`` (issue 25).

The test walks the package with ``ast``: in every module that handles report, gold or trace paths
(a fixed list, plus any module whose source touches a report's files, a gold's paths or a tool
result's ``shown``), each file read or file-system probe (``open``, ``os.open``, ``io.open``,
``gzip.open``, ``Path.open/read_text/read_bytes``, ``os.stat``, ``Path.stat/is_file/exists``,
``os.walk`` ...) must either be a call of ``fasbench.base.contain`` or be listed in ``ALLOWED`` with the
reason it does not read a path a model or a task named (package data, config, run directories)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "fasbench"

#: Modules that read paths a report, a gold, a trace or a task names (the issue's list).
SCORING_SIDE = {
    "fasbench/scoring/judge.py",
    "fasbench/studies/handoff.py",
    "fasbench/base/lines.py",
    "fasbench/stats/metrics.py",
    "fasbench/scoring/localization.py",
    "fasbench/base/entities.py",
    "fasbench/evaluation/episodes.py",
    "fasbench/scoring/reward.py",
    "fasbench/replay/linerefs.py",
    "fasbench/studies/audit.py",
    "fasbench/replay/overlay.py",
    "fasbench/replay/seen.py",
    "fasbench/bon/verify.py",
    "fasbench/e2e/looked.py",
    "fasbench/e2e/counterfactual.py",
    "fasbench/e2e/localize.py",
    "fasbench/policies/rag.py",
    "fasbench/policies/evidence.py",
    "fasbench/data/relocate.py",
    "fasbench/data/patches.py",
}
#: Source text that marks a module as handling model- or task-named paths.
MARKERS = ("report.files", "gold.edited", "gold.explore", "normalize_files(", "ranked_regions(", "file_entities(")

READ_FUNCS = {
    "open",
    "os.open",
    "io.open",
    "gzip.open",
    "os.stat",
    "os.lstat",
    "os.walk",
    "os.scandir",
    "os.listdir",
    "os.path.exists",
    "os.path.isfile",
    "os.path.getsize",
    "os.path.lexists",
}
READ_METHODS = {"read_text", "read_bytes", "open", "stat", "lstat", "is_file", "exists", "iterdir", "rglob", "glob"}

#: (module, enclosing function) -> why its reads are not on a model's or task's behalf.
ALLOWED = {
    (
        "fasbench/studies/contamination.py",
        "load_pairs",
    ): "the study's own run folders (a summary.parquet fasbench wrote)",
    ("fasbench/data/contextbench_tasks.py", "read_rows"): "the benchmark file the user names on the command line",
    (
        "fasbench/sft/data.py",
        "workspace_ls",
    ): "the names in the task's corpus root (the workspace fasbench built, as the release's get_workspace_ls.py records them); no path a model or report names",
    ("fasbench/scoring/judge.py", "Judge._cached"): "the judge's own on-disk cache (fasbench's cache dir)",
    (
        "fasbench/base/lines.py",
        "file_lines",
    ): "an os.stat of the joined path only to answer None fast for a missing file; nothing is opened and "
    "its answer is used only when contain.file_key then accepts the path",
    ("fasbench/base/entities.py", "file_entities"): "as lines.file_lines: a fast 'missing' before contain.file_key",
    (
        "fasbench/policies/rag.py",
        "corpus_files",
    ): "lists the corpus (os.walk follows no symlinked folder) with size and mtime for the index key; "
    "each file's text is read by rag.read_text through contain",
    ("fasbench/policies/rag.py", "load_chunks"): "rag's own chunk cache (cache_dir)",
    ("fasbench/policies/rag.py", "_bm25_index"): "rag's own index cache (cache_dir)",
    ("fasbench/policies/rag.py", "_dense_index"): "rag's own index cache (cache_dir)",
    ("fasbench/policies/rag.py", "default_model_path"): "the embedding model's folder (configuration)",
    ("fasbench/policies/rag.py", "RagPolicy.index_cached"): "rag's own index cache (cache_dir)",
    (
        "fasbench/studies/audit.py",
        "_corpus_files",
    ): "lists the corpus for the top50 cheat (os.walk follows no symlinked folder); line counts go through contain",
    ("fasbench/bon/pool.py", "find_pool"): "best-of-N pool files (cache dir and shipped package data)",
    ("fasbench/bon/pool.py", "build_pools"): "the pool file being written (a run directory)",
    ("fasbench/bon/pool.py", "read_pools"): "a pool file the user names (a run directory)",
    ("fasbench/data/agent_traces.py", "build"): "trajectory files of a download folder the user names",
    ("fasbench/data/corpora.py", "_read_skipped"): "the corpus build's own skip list (cache dir)",
    ("fasbench/data/corpus.py", "picks"): "package data (swebench/corpora_picks.tsv)",
    ("fasbench/data/corpus.py", "_sdist_file"): "the sdist cache folder",
    ("fasbench/data/corpus.py", "_direct_download"): "the download's own temporary file",
    ("fasbench/data/corpus.py", "sdist_tree"): "the sdist cache's own info files and archive",
    ("fasbench/data/corpus.py", "git_worktree"): "the clone fasbench made in its cache",
    ("fasbench/data/stats.py", "agentless_frame"): "package data (agentless classifications)",
    ("fasbench/e2e/runner.py", "prepare_copy"): "the run directory's corpus copy (fasbench makes it)",
    ("fasbench/e2e/runner.py", "done_pairs"): "the run directory's records file",
    ("fasbench/e2e/runner.py", "_claim_keys"): "the run directory's skip list (fasbench writes it)",
    ("fasbench/e2e/runner.py", "_search_traces"): "the run directory's trace file",
    ("fasbench/e2e/runner.py", "load_records"): "the run directory's records file",
    ("fasbench/records/task.py", "write_tasks"): "the task file being written (user-named output)",
    ("fasbench/replay/demo.py", "_script"): "package data (the demo script)",
    ("fasbench/sft/data.py", "build"): "the SFT build's own log (a run directory)",
    ("fasbench/sft/data.py", "load_dataset"): "a dataset file the user names",
}


def rel(p: Path) -> str:
    return p.relative_to(REPO).as_posix()


def call_name(node: ast.Call) -> str:
    return ast.unparse(node.func)


def contained_names(tree: ast.Module) -> set[str]:
    """Names bound to fasbench.base.contain (the module or names imported from it)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module == "fasbench.base.contain":
            out |= {a.asname or a.name for a in n.names}
        if isinstance(n, ast.ImportFrom) and n.module == "fasbench" and any(a.name == "contain" for a in n.names):
            out.add("contain")
    return out


def reads(path: Path) -> list[tuple[str, str, int]]:
    """(enclosing function, call text, line) of every file read or probe not made through contain."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ok = contained_names(tree)
    out = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            w = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                w = f"{where}.{child.name}" if where else child.name
            if isinstance(child, ast.Call):
                name = call_name(child)
                head = name.split(".")[0]
                attr = child.func.attr if isinstance(child.func, ast.Attribute) else None
                if head in ok or name.startswith("contain."):
                    pass
                elif name in READ_FUNCS or (
                    attr in READ_METHODS
                    and name not in ("re.compile",)
                    and not name.startswith(("tempfile.", "self.f."))
                ):
                    out.append((w, name, child.lineno))
            visit(child, w)

    visit(tree, "")
    return out


def scoring_modules() -> list[Path]:
    found = {rel(p) for p in PKG.rglob("*.py") if any(m in p.read_text(encoding="utf-8") for m in MARKERS)}
    found -= {"fasbench/base/contain.py"}
    return sorted(REPO / m for m in SCORING_SIDE | {f for f in found if not f.startswith("fasbench/tools/")})


def test_listed_modules_exist():
    missing = [m for m in SCORING_SIDE if not (REPO / m).is_file()]
    assert not missing, f"SCORING_SIDE names modules that do not exist: {missing}"


def test_every_read_of_a_named_path_goes_through_contain():
    bad = []
    for p in scoring_modules():
        for where, name, line in reads(p):
            if (rel(p), where) not in ALLOWED:
                bad.append(f"{rel(p)}:{line} {where}: {name}(...)")
    assert not bad, (
        "file reads outside fasbench.base.contain in modules that read report/gold/trace paths "
        "(read through contain, or add to ALLOWED with the reason it is not on a model's or "
        "task's behalf):\n  " + "\n  ".join(bad)
    )


def test_allowlist_is_still_needed():
    present = {(rel(p), w) for p in scoring_modules() for w, _, _ in reads(p)}
    stale = [k for k in ALLOWED if k not in present]
    assert not stale, f"remove from ALLOWED (no longer found): {stale}"
    assert all(r.strip() for r in ALLOWED.values())


def test_the_walker_sees_reads():
    """Guards the walker: it finds the reads of a module written the old way."""
    src = (
        "from pathlib import Path\nimport os\n"
        "def f(root, p):\n    return (Path(root) / p).read_text(), open(p).read(), os.stat(p)\n"
    )
    t = Path(__file__).parent / "_walk_probe.py"
    try:
        t.write_text(src)
        assert [n for _, n, _ in reads(t)] == ["(Path(root) / p).read_text", "open", "os.stat"]
    finally:
        t.unlink()
