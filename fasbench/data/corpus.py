"""Materialise the repository of a task in the cache and put its gold on that tree.

Two ways, both under ``fasbench.base.paths.cache_dir("corpora")`` (git ignores it):

- **online** (exact): ``git clone`` once per repository into ``git/<owner>__<name>``, then a local
  clone checked out at ``base_commit`` in ``worktrees/<owner>__<name>@<sha12>`` (its own ``.git``
  directory: the tools run git only there). The clone URL comes from
  ``task.meta["clone_url"]``, else ``FASBENCH_GIT_URL`` (a template with ``{repo}``, e.g.
  ``file:///mirrors/{repo}``), else ``https://github.com/{repo}.git``, checked at the record boundary
  (``fasbench.records.fields``: https, ``file:///`` or an absolute path; the repository name and
  ``base_commit`` too, before they name a folder); every git runs through the one wall
  (``fasbench.base.gitsafe``). The gold needs no relocation.
- **offline**: the PyPI sdist of the release picked for the task's (repository, version) (the last
  release before it; table in ``data/swebench/corpora_picks.tsv`` from ../shared/data/CORPORA.md),
  fetched straight from PyPI's simple API (sha256 checked; nothing of the sdist runs), else with ``pip
  download --no-deps --no-binary :all: --no-build-isolation NAME==R`` (pip runs the sdist's ``setup.py``
  to read its metadata: only where the direct download failed, and with an environment of
  :data:`PIP_ENV` names only, none of the caller's keys).
  Unpacked once per release into ``sdist/<name>-<R>/``, within bounds (``fasbench.data.archive``:
  no member outside the tree, no links out, devices or FIFOs, bounded member count and size); a refused archive drops its tasks with ``bad-archive`` and leaves nothing in
  the cache but its reason in ``sdist/<name>-<R>.json``. The gold is then relocated hunk
  by hunk (patches.relocate); tasks whose gold cannot be placed are dropped with a reason.

``materialize(task)`` returns a copy of the task with ``root`` set and gold relocated, or raises
``CorpusError`` whose ``reason`` is one of ``DROP_REASONS``. ``materialize_many`` does a batch and
appends a manifest line per task (``manifest.jsonl``: id, corpus, status, reason, detail).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path

from fasbench.base import contain, gitsafe
from fasbench.base.entities import entity_gold, file_entities
from fasbench.base.paths import building, child, replace_dir, safe_name
from fasbench.data.archive import ArchiveError, unpack
from fasbench.data.corpus_cache import CorpusError, checkout_names, portable_root, resolve_root, root_dir  # noqa: F401
from fasbench.data.corpus_cache import lock as _lock
from fasbench.data.locations import find_data
from fasbench.data.patches import parse_diff, relocate
from fasbench.data.relocate import hunk_anchors, place_context, place_explore
from fasbench.records import Gold, RecordError, Task, append_jsonl, fields

DROP_REASONS = (
    "no-pick",  # no release picked for this (repo, version)
    "sdist-unavailable",  # neither pip nor the direct download gave an sdist
    "file-missing",  # a gold file is not in the tree
    "already-applied",  # the release already contains the fix
    "hunk-not-found",  # a hunk's context cannot be found (fuzz <= 2)
    "no-patch",  # the task carries no diff to relocate
    "clone-failed",  # online: git clone / worktree failed
    "region-not-relocated",  # an imported read-core or gold-context region cannot be placed (data/relocate.py)
    "entity-not-found",  # an imported gold entity (Loc-Bench list) is not in the corpus
    "io-error",  # the file system failed while building the corpus (try_materialize)
    "bad-task",  # the task's patch or gold cannot be read, or its repository or base commit is not one (try_materialize)
    "bad-archive",  # the sdist is refused: not an archive, a member escapes or is special, over the size limits
    "offline",  # the sdist is not cached and PyPI cannot be reached (not remembered: tried again next time)
)
PYPI_SIMPLE = os.environ.get("FASBENCH_PYPI_SIMPLE", "https://pypi.org/simple")
PIP_TIMEOUT = int(os.environ.get("FASBENCH_PIP_TIMEOUT", "300"))  # seconds for one pip download


# ---------------------------------------------------------------- release picks


@lru_cache(maxsize=1)
def picks() -> dict[tuple[str, str], tuple[str, str]]:
    """``{(repo short name, SWE-bench version): (PyPI name, release)}``."""
    out = {}
    lines = find_data("swebench/corpora_picks.tsv").read_text(encoding="utf-8").splitlines()
    cols = lines[0].split("\t")
    for line in lines[1:]:
        r = dict(zip(cols, line.split("\t")))
        out[(r["repo_short"], r["version"])] = (r["pypi"], r["release"])
    return out


def pick_for(task: Task) -> tuple[str, str] | None:
    if not task.version:
        return None
    return picks().get((task.repo.split("/")[-1], str(task.version)))


# ---------------------------------------------------------------- sdists


def _sdist_file(d: Path) -> Path | None:
    files = [p for p in d.iterdir() if p.name.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz"))] if d.is_dir() else []
    return files[0] if files else None


# the environment pip gets (it runs the sdist's setup.py for its metadata): where to download from, no key
PIP_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_CERT",
    "PIP_CONFIG_FILE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
)


def _pip_download(name: str, release: str, dest: Path) -> tuple[bool, str]:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--no-build-isolation",
        "--disable-pip-version-check",
        "-q",
        f"{name}=={release}",
        "-d",
        str(dest),
    ]
    env = {k: os.environ[k] for k in PIP_ENV if k in os.environ}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return False, f"pip timed out after {PIP_TIMEOUT}s"
    if p.returncode == 0 and _sdist_file(dest):
        return True, ""
    err = (p.stderr or p.stdout).strip().splitlines()
    return False, " | ".join(err[-3:])[:500]


def _reason(e: BaseException) -> str:
    return str(getattr(e, "reason", None) or e)[:200]


def _direct_download(name: str, release: str, dest: Path) -> str:
    """Fetch the sdist file from PyPI's simple API (PEP 691 JSON) without building anything."""
    norm = name.lower().replace("_", "-").replace(".", "-")
    req = urllib.request.Request(f"{PYPI_SIMPLE}/{norm}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        files = json.load(r)["files"]
    stems = {f"{n}-{release}" for n in (name, name.lower(), norm, norm.replace("-", "_"), name.replace("-", "_"))}
    cands = [f for f in files if any(f["filename"] == s + ext for s in stems for ext in (".tar.gz", ".zip", ".tgz"))]
    if not cands:
        raise CorpusError("sdist-unavailable", f"PyPI lists no sdist for {name}=={release}")
    f = sorted(cands, key=lambda f: not f["filename"].endswith(".tar.gz"))[0]
    out = dest / f["filename"]
    tmp = out.with_suffix(".part")
    with urllib.request.urlopen(f["url"], timeout=300) as r, open(tmp, "wb") as w:
        shutil.copyfileobj(r, w)
    want = f.get("hashes", {}).get("sha256")
    if want and hashlib.sha256(tmp.read_bytes()).hexdigest() != want:
        tmp.unlink()
        raise CorpusError("sdist-unavailable", f"sha256 mismatch for {f['filename']}")
    tmp.rename(out)
    return f["filename"]


def _unpack(archive: Path, dest: Path) -> Path:
    """Unpack the sdist into ``dest`` within bounds (``fasbench.data.archive.unpack``); a refused
    archive is a ``bad-archive`` drop."""
    try:
        return unpack(archive, dest)
    except ArchiveError as e:
        raise CorpusError("bad-archive", str(e)) from None


def sdist_tree(name: str, release: str, method: str = "auto") -> Path:
    """The unpacked sdist of ``name==release`` (downloaded and unpacked once; safe across processes).
    ``method``: ``auto`` (direct, then pip), ``pip`` or ``direct``. Info in ``<tree>.json``."""
    if method not in ("auto", "pip", "direct"):
        raise ValueError(f"unknown download method {method!r}; choose auto, pip or direct")
    key = safe_name(f"{name.lower()}-{release}", "release")
    tree, info_path = root_dir() / "sdist" / key, child(root_dir() / "sdist", key, ".json")
    if tree.is_dir() and info_path.exists():
        return tree
    with _lock(key):
        if tree.is_dir() and info_path.exists():
            return tree
        dl = root_dir() / "downloads" / key
        dl.mkdir(parents=True, exist_ok=True)
        if info_path.exists():
            info = json.loads(info_path.read_text())
            if info.get("error") and info.get("method") == method:
                raise CorpusError("sdist-unavailable", info["error"])
            old = _sdist_file(dl)
            if (
                info.get("reason") == "bad-archive"
                and old
                and [old.name, old.stat().st_size] == [info.get("file"), info.get("bytes")]
            ):
                raise CorpusError("bad-archive", info["error"])  # refused before: the same file is not unpacked again
        info_path.parent.mkdir(parents=True, exist_ok=True)
        info = {"name": name, "release": release, "method": None, "pip_error": "", "error": "", "seconds": 0.0}
        t0 = time.time()
        if not _sdist_file(dl):
            ok = False
            if method in ("auto", "direct"):  # first: nothing of the sdist runs
                try:
                    _direct_download(name, release, dl)
                    info["method"], ok = "direct", True
                except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                    if not isinstance(e, urllib.error.HTTPError):  # no answer at all: offline, not a missing sdist
                        raise CorpusError(
                            "offline", f"PyPI cannot be reached ({_reason(e)}); {name}=={release} is not cached"
                        ) from None
                    info["error"] = f"direct download: {e}"
                except (CorpusError, OSError, ValueError, KeyError) as e:
                    info["error"] = f"direct download: {e}"
            if not ok and method in ("auto", "pip"):
                ok, info["pip_error"] = _pip_download(name, release, dl)
                info["method"] = "pip" if ok else None
                if ok:
                    info["error"] = ""
            if not _sdist_file(dl):
                info["error"] = info["error"] or info["pip_error"] or "no sdist saved"
                info["method"] = method
                info_path.write_text(json.dumps(info))
                raise CorpusError("sdist-unavailable", info["error"])
        else:
            info["method"] = "cached"
        archive = _sdist_file(dl)
        info["file"], info["bytes"] = archive.name, archive.stat().st_size
        try:
            _unpack(archive, tree)
        except CorpusError as e:
            info.update(reason=e.reason, error=e.detail, seconds=round(time.time() - t0, 2))
            info_path.write_text(json.dumps(info))
            raise
        info["seconds"] = round(time.time() - t0, 2)
        info_path.write_text(json.dumps(info))
    return tree


# ---------------------------------------------------------------- git


def clone_url(task: Task) -> str:
    """The URL ``task.repo`` is cloned from: ``meta["clone_url"]``, else ``FASBENCH_GIT_URL`` with
    ``{repo}``, else GitHub; checked by :func:`fasbench.records.fields.clone_url` (https, file:///,
    an absolute path; ``CorpusError("clone-failed")`` naming the refusal otherwise)."""
    try:
        repo = fields.repo_name(task.repo, f"task {task.id}: repo")
        if task.meta.get("clone_url"):
            return fields.clone_url(task.meta["clone_url"], f"task {task.id}: clone_url")
        tmpl = os.environ.get("FASBENCH_GIT_URL", "https://github.com/{repo}.git")
        return fields.clone_url(tmpl.format(repo=repo), f"task {task.id}: clone URL (FASBENCH_GIT_URL)")
    except RecordError as e:
        raise CorpusError("clone-failed", str(e)) from None


def _git(
    cmd: str, *options: str, cwd: Path, revs: tuple = (), paths: list | None = None, protocols: tuple[str, ...] = ()
) -> str:
    """git in fasbench's own clone ``cwd`` (its ``.git``), through the one wall (fasbench.base.gitsafe)."""
    try:
        return gitsafe.run(
            cmd,
            *options,
            revs=revs,
            paths=paths,
            git_dir=cwd / ".git",
            work_tree=cwd,
            protocols=protocols,
            timeout=3600 if protocols else 600,
        )
    except gitsafe.GitError as e:
        raise CorpusError("clone-failed", str(e)) from None


def _checked(task: Task) -> tuple[str, str]:
    """(the repository's folder name, the base commit) of ``task``, both checked at the boundary
    (fasbench.records.fields): a name or commit that could name a path (``..``, ``/``) or an option
    never reaches a path or git."""
    if not task.base_commit:
        raise CorpusError("clone-failed", f"task {task.id} has no base_commit")
    try:
        repo = fields.repo_name(task.repo, f"task {task.id}: repo")
        return repo.replace("/", "__"), fields.commit(task.base_commit, f"task {task.id}: base_commit")
    except RecordError as e:
        raise CorpusError("bad-task", str(e)) from None


def git_worktree(task: Task, url: str | None = None) -> Path:
    """A checkout of ``task.repo`` at ``task.base_commit`` with a ``.git`` directory of its own (clone
    once per repository, then a local clone per commit: objects hard-linked, no alternates). Every
    git runs through the wall (fasbench.base.gitsafe); the repository name and commit are checked first.

    Not a ``git worktree``: a worktree's ``.git`` is a file pointing into the shared clone, and the tool
    sandbox runs git only on a root's own ``.git`` directory (``fasbench.tools.bash.gitwall``), so the bash
    tool's git commands and ``.gitignore`` handling would be refused there. A checkout cached by an
    older fasbench as a worktree is rebuilt."""
    slug, sha = _checked(task)
    url = clone_url(task) if url is None else url
    clone = root_dir() / "git" / slug
    wt = root_dir() / "worktrees" / checkout_names(task)[1]
    with _lock(f"git-{slug}"):
        if (wt / ".git").is_dir():
            return wt
        if not (clone / ".git").exists():
            clone.parent.mkdir(parents=True, exist_ok=True)
            try:
                # --no-local: objects copied through the transport (no hard links, no alternates of a local source)
                gitsafe.clone(url, clone, "--quiet", "--no-checkout", "--no-local")
            except gitsafe.GitError as e:
                raise CorpusError("clone-failed", str(e)) from None
        try:
            _git("cat-file", "-e", cwd=clone, revs=(f"{sha}^{{commit}}",))
        except CorpusError:
            _git("fetch", "--quiet", cwd=clone, paths=["origin"], protocols=gitsafe.PROTOCOLS)  # the URL clone checked
        if wt.exists():  # an old worktree (its .git a file): prune it from the clone, rebuild
            shutil.rmtree(wt)
            _git("worktree", "prune", cwd=clone)
        with building(wt) as tmp:
            co = tmp / "checkout"
            try:
                gitsafe.clone(str(clone), co, "--quiet", "--local", "--no-checkout", local=True)
            except gitsafe.GitError as e:
                raise CorpusError("clone-failed", str(e)) from None
            _git("checkout", "--quiet", "--detach", cwd=co, revs=(sha,))
            replace_dir(co, wt)
    return wt


# ---------------------------------------------------------------- materialise


def _check_files(gold: Gold, root: Path) -> None:
    missing = [p for p, r in gold.edited.items() if r and contain.file_key(root, p) is None]  # inside, regular
    if missing:
        raise CorpusError("file-missing", "missing: " + ", ".join(missing))


def _filter_viewed(t: Task, root: Path) -> None:
    if t.gold.viewed is not None:
        keep = {p for p in t.gold.viewed if contain.file_key(root, p) is not None}
        t.meta["viewed_not_in_corpus"] = len(t.gold.viewed) - len(keep)
        t.gold.viewed = keep


def materialize(task: Task, mode: str | None = None, method: str = "auto") -> Task:
    """A copy of ``task`` with ``root`` set to its corpus and the gold placed on it.

    ``mode``: ``offline`` (PyPI sdist, gold relocated), ``online`` (git worktree at base_commit) or
    None: ``FASBENCH_CORPUS_MODE`` if set, else offline when a release is picked for the task,
    else online. Raises ``CorpusError`` (``.reason`` in ``DROP_REASONS``) when the task is dropped."""
    mode = mode or os.environ.get("FASBENCH_CORPUS_MODE") or ("offline" if pick_for(task) else "online")
    if mode not in ("offline", "online"):
        raise ValueError(f"unknown corpus mode {mode!r}; choose offline or online")
    t = copy.deepcopy(task)
    if mode == "online":
        root = git_worktree(t)
        _check_files(t.gold, root)
        _filter_viewed(t, root)
        t.root = str(root)
        t.meta["corpus"] = {"mode": "online", "commit": t.base_commit, "status": "exact"}
        return _place_extra(task, t, root, exact=True)
    pk = pick_for(t)
    if pk is None:
        raise CorpusError("no-pick", f"no release picked for ({t.repo}, {t.version})")
    patch = t.meta.get("patch")
    if not patch:
        raise CorpusError("no-patch", f"task {t.id} has no meta['patch'] to relocate")
    root = sdist_tree(*pk, method=method)
    files = parse_diff(patch)
    rel = relocate(files, root)
    if not rel.located:
        raise CorpusError(rel.status, rel.detail)
    hunk = rel.variants["hunk"]
    variants = dict(rel.variants)
    t.gold = Gold(
        edited={p: hunk[p] for p in t.gold.edited},
        viewed=t.gold.viewed,
        source=t.gold.source,
        variants={k: {p: v[p] for p in t.gold.edited} for k, v in variants.items()},
    )
    _filter_viewed(t, root)
    t.root = str(root)
    t.meta["corpus"] = {
        "mode": "offline",
        "package": pk[0],
        "release": pk[1],
        "status": rel.status,
        "max_fuzz": rel.max_fuzz,
        "offsets": rel.offsets,
    }
    anchors = {f.path: hunk_anchors(f, rel.offsets[f.path]) for f in files if f.path in rel.offsets}
    return _place_extra(task, t, root, exact=False, anchors=anchors, files=files, offsets=rel.offsets)


def _place_extra(
    task: Task,
    t: Task,
    root: Path,
    exact: bool,
    anchors: dict | None = None,
    files: list | None = None,
    offsets: dict | None = None,
) -> Task:
    """Entity gold (from the patch's changed lines on this tree), SWE-Explore read regions
    (``relocate.place_explore``: anchored by the gold and test patches' hunks, matched on the base
    text of a cached online checkout) and ContextBench's gold context (``relocate.place_context``:
    placed by content, else by hunk offsets); imported entity lists are checked against the tree."""
    t.gold.explore = task.gold.explore
    if t.gold.explore is not None:
        ex = t.gold.explore
        old_texts, anchors = (
            ({}, anchors) if exact else (_base_texts(task, ex), _test_anchors(task, root, anchors or {}))
        )
        placed = place_explore(ex, root, exact=exact, old_texts=old_texts, anchors=anchors)
        t.meta["explore_relocation"] = placed.meta
        if placed.explore is None:
            raise CorpusError("region-not-relocated", placed.detail)
        t.gold.explore = placed.explore
    t.gold.context = task.gold.context
    if t.gold.context is not None:  # ContextBench's gold context: every region placed, or the task is dropped
        contents = (task.meta.get("contextbench") or {}).get("content") or []
        placed_c, meta, detail = place_context(t.gold.context["regions"], contents, root, exact=exact, anchors=anchors)
        t.meta["context_relocation"] = meta
        if placed_c is None:
            raise CorpusError("region-not-relocated", detail)
        t.gold.context = {"regions": placed_c}
    if task.gold.source == "locbench" and task.gold.entities:
        t.gold.entities = task.gold.entities
        for name in task.gold.entities.get("function", []) + task.gold.entities.get("class", []):
            path, _, qual = name.partition(":")
            if qual and qual not in {e.qualname for e in file_entities(root, path)}:
                raise CorpusError("entity-not-found", f"{name} not in {root.name}")
    elif t.meta.get("patch"):
        if files is None:
            try:
                files = parse_diff(t.meta["patch"])
            except ValueError:
                return t
        t.gold.entities = entity_gold(root, files, offsets or {})
    return t


def _test_anchors(task: Task, root: Path, anchors: dict) -> dict:
    """The gold patch's hunk anchors plus those of the record's test patch (``meta["test_patch"]``:
    its hunks' old sides are base-commit text of the test files), located on ``root``."""
    try:
        files = parse_diff(task.meta.get("test_patch") or "")
    except ValueError:
        return anchors
    rel = relocate(files, root)
    out = dict(anchors)
    for f in files:
        if f.path not in out and f.path in rel.offsets:
            out[f.path] = hunk_anchors(f, rel.offsets[f.path])
    return out


def _base_texts(task: Task, ex: dict) -> dict[str, str]:
    """Base-commit texts of the files of ``ex``'s bounded regions from an online checkout already in
    the cache (``git/<owner>__<name>`` holding ``base_commit``; nothing is cloned or fetched here)."""
    try:
        slug, sha = _checked(task)
    except CorpusError:
        return {}
    clone = root_dir() / "git" / slug
    if not (clone / ".git").is_dir():
        return {}
    paths = {r[0] for r in list(ex["core_regions"]) + list(ex.get("optional_regions") or []) if r[2] != -1 and r[1] > 0}
    out = {}
    for p in sorted(paths):
        try:
            out[p] = gitsafe.run("show", revs=(f"{sha}:{p}",), git_dir=clone / ".git", work_tree=clone)
        except gitsafe.GitError:
            continue
    return out


def try_materialize(task: Task, mode: str | None = None, method: str = "auto") -> tuple[Task | None, dict | None]:
    """(the materialised task, None), or (None, ``{"reason", "detail"}``) when the task is dropped:
    a ``CorpusError`` gives its reason; a file-system error (``io-error``) or a task whose patch
    cannot be read (``bad-task``) are dropped too, so that one task never stops a batch. A bad
    ``mode`` is the caller's error and raises."""
    if mode not in (None, "offline", "online"):
        raise ValueError(f"unknown corpus mode {mode!r}; choose offline or online")
    try:
        return materialize(task, mode=mode, method=method), None
    except CorpusError as e:
        return None, {"reason": e.reason, "detail": e.detail[:300]}
    except OSError as e:
        return None, {"reason": "io-error", "detail": f"{type(e).__name__}: {e}"[:300]}
    except ValueError as e:
        return None, {"reason": "bad-task", "detail": f"{type(e).__name__}: {e}"[:300]}


def materialize_many(
    tasks: list[Task],
    mode: str | None = None,
    method: str = "auto",
    manifest: str | Path | None = None,
    progress: bool = True,
) -> tuple[list[Task], list[dict]]:
    """Materialise each task; returns (usable tasks, manifest rows) and appends the rows to
    ``manifest`` when given. Releases are fetched in order of first use. A row's ``root`` is
    relative to the corpora cache (:func:`portable_root`; :func:`resolve_root` gives the path).
    (``fasbench.data.corpora.with_corpora`` is the helper for runs: it stops at a limit, uses the
    shipped manifest and keeps a resumable file of the skipped tasks.)"""
    # local import: tqdm.auto is heavy to import (asyncio, importlib.metadata), paid by every `fasbench`
    # command through the data CLI's imports
    from tqdm.auto import tqdm

    ok, rows = [], []
    for task in tqdm(tasks, desc="corpora", unit="task", disable=not progress):
        pk = pick_for(task)
        row = {
            "id": task.id,
            "repo": task.repo,
            "version": task.version,
            "corpus": f"{pk[0]}=={pk[1]}" if pk else None,
            "root": None,
            "located": False,
        }
        t, why = try_materialize(task, mode=mode, method=method)
        if t is not None:
            ok.append(t)
            row.update(
                root=portable_root(t.root), located=True, status=t.meta["corpus"]["status"], reason=None, detail=""
            )
        else:
            row.update(status="dropped", **why)
        rows.append(row)
        if manifest:
            append_jsonl(manifest, [row])
    return ok, rows
