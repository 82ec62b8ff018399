"""A task on a perturbed corpus (``fasbench.data.perturb``): its gold and text relocated exactly.

Every line a gold range holds goes where the record says (``reorders`` blocks, else the same number)
in the file's new path (``moves``): no search, so nothing is placed by similarity. A range split
by a reorder becomes several ranges. Files (``edited``, ``variants``, ``viewed``, ``entities``,
read regions of ``explore``) follow the moves; entity names follow the private renames. The task
text names the new paths, dotted module names, file names and private names where it named the old
ones. :func:`gold_line_mismatches` checks that every relocated gold line holds the same code (read
back through the renames); :func:`verify_corpus` that the modules the perturbation touched still
import, and its test files still collect, wherever they did on the original corpus. The corpus's code
runs only in the sandbox of :mod:`fasbench.base.untrusted`: the corpus read-only, the virtual environment
and its base Python read-only (so that the corpus and pytest import), an unprivileged user, limits,
no network, none of the caller's environment.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from pathlib import Path

from fasbench.base import contain
from fasbench.base.lines import line_set
from fasbench.base.untrusted import SandboxError, SandboxLimits, check_sandbox, run_sandboxed, sandbox_env
from fasbench.data.perturb import PerturbError, PerturbSpec, dotted_name, parse_perturb, perturb_corpus, read_back
from fasbench.records import Gold, Task

CHECK_TIMEOUT = 300  # seconds for one import or collection check of a tree
# a corpus's imports may pull in large packages of the environment (address space), pytest writes nothing
CHECK_LIMITS = SandboxLimits(processes=256, address_space=8 << 30, file_size=64 << 20, tmp_bytes=256 << 20)
CHECK_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
IMPORTED = "FASBENCH-IMPORTED "  # the line of the import check's answer


class PerturbMap:
    """Line and path maps of one perturbation record."""

    def __init__(self, rec: dict):
        self.rec = rec
        self.moves: dict[str, str] = rec.get("moves", {})
        self.blocks = {p: sorted(b) for p, b in rec.get("reorders", {}).items()}
        self.private = {r["old"]: r["new"] for r in rec.get("renames", []) if r["kind"] == "private"}

    def path(self, p: str) -> str:
        return self.moves.get(p, p)

    def line(self, p: str, n: int) -> int:
        blocks = self.blocks.get(p)
        if not blocks:
            return n
        i = bisect_right([b[0] for b in blocks], n) - 1
        if i >= 0 and blocks[i][0] <= n <= blocks[i][1]:
            return blocks[i][2] + n - blocks[i][0]
        return n

    def ranges(self, p: str, ranges: Sequence[Sequence[int]]) -> list[list[int]]:
        """The ranges' lines in the perturbed file, as sorted maximal ranges."""
        if p not in self.blocks:
            return [list(r) for r in ranges]
        lines = sorted({self.line(p, n) for n in line_set(ranges)})  # [1, 10**9]: LINE_CAP lines
        out: list[list[int]] = []
        for n in lines:
            if out and n == out[-1][1] + 1:
                out[-1][1] = n
            else:
                out.append([n, n])
        return out

    def regions(self, regions: Sequence[Sequence], root: Path) -> list[list]:
        out = []
        for path, s, e in regions:
            if e == -1 and path in self.blocks:  # end of file: a reorder stays inside the file
                e = len(_lines(root, self.path(path)))
            if e == -1:
                out.append([self.path(path), s, e])
            else:
                out.extend([self.path(path), a, b] for a, b in self.ranges(path, [[s, e]]))
        return out

    def entity(self, name: str) -> str:
        path, sep, qual = name.partition(":")
        qual = ".".join(self.private.get(q, q) for q in qual.split(".")) if sep else ""
        return self.path(path) + (sep + qual if sep else "")

    def text(self, text: str) -> str:
        """``text`` naming the new paths, modules and private names where it named the old ones."""
        for r in self.rec.get("renames", []):
            if r["kind"] == "private":
                text = re.sub(rf"(?<!\w){re.escape(r['old'])}(?!\w)", r["new"], text)
                continue
            for a, b in ((r["old"], r["new"]), (r["old"].replace(".", "/"), r["new"].replace(".", "/"))):
                text = re.sub(rf"(?<![\w.]){re.escape(a)}(?!\w)", b, text)
            if r["kind"] == "module":  # the file named alone: "in models.py"
                text = re.sub(rf"(?<![\w/.]){re.escape(r['old_name'])}\.py(?!\w)", r["new_name"] + ".py", text)
        return text


def perturb_gold(gold: Gold, reloc: PerturbMap, root: Path) -> Gold:
    g = copy.deepcopy(gold)
    g.edited = {reloc.path(p): reloc.ranges(p, r) for p, r in gold.edited.items()}
    g.variants = {k: {reloc.path(p): reloc.ranges(p, r) for p, r in v.items()} for k, v in gold.variants.items()}
    if gold.viewed is not None:
        g.viewed = {reloc.path(p) for p in gold.viewed}
    g.entities = {k: [reloc.entity(n) for n in v] for k, v in gold.entities.items()}
    if gold.explore is not None:
        ex = dict(gold.explore)
        for k in ("core_files", "optional_files", "modified_files"):
            if k in ex:
                ex[k] = [reloc.path(p) for p in ex[k]]
        for k in ("core_regions", "optional_regions"):
            if k in ex:
                ex[k] = reloc.regions(ex[k], root)
        g.explore = ex
    return g


def focus_files(task: Task) -> list[str]:
    """The files a perturbation of this task's corpus moves first: its gold files."""
    files = set(task.gold.edited)
    if task.gold.explore is not None:
        files.update(task.gold.explore.get("core_files", []))
    return sorted(files)


def perturb_task(task: Task, spec: PerturbSpec | str) -> Task:
    """A copy of the materialised ``task`` on its perturbed corpus, with gold and text relocated and
    ``meta["perturb"]`` (spec, record file, the original root). Raises PerturbError."""
    if not task.root or not Path(task.root).is_dir():
        raise PerturbError(f"task {task.id} has no corpus to perturb (materialise it first)")
    spec = parse_perturb(spec) if isinstance(spec, str) else spec
    new_root, rec = perturb_corpus(task.root, spec, focus_files(task))
    reloc = PerturbMap(rec)
    t = copy.deepcopy(task)
    t.root = str(new_root)
    t.query = reloc.text(task.query)
    t.gold = perturb_gold(task.gold, reloc, new_root)
    if "created_files" in t.meta:
        t.meta["created_files"] = [reloc.path(p) for p in t.meta["created_files"]]
    if "patch" in t.meta:  # its paths and lines are the original corpus's
        t.meta["original_patch"] = t.meta.pop("patch")
    t.meta["perturb"] = {
        "spec": spec.text(),
        "record": str(new_root) + ".json",
        "original_root": task.root,
        "renames": len(rec["renames"]),
        "reordered_files": len(rec["reorders"]),
        "gold_files_moved": sum(p in reloc.moves for p in task.gold.edited),
    }
    return t


def perturb_tasks(tasks: Sequence[Task], spec: str) -> tuple[list[Task], list[dict]]:
    """(perturbed tasks, excluded rows ``{id, reason, detail}``) for a batch (a bad spec raises)."""
    ok, bad = [], []
    spec_ = parse_perturb(spec)
    for t in tasks:
        try:
            ok.append(perturb_task(t, spec_))
        except (PerturbError, OSError) as e:
            bad.append({"id": t.id, "reason": "not-perturbed", "detail": str(e)[:300]})
    return ok, bad


# ---------------------------------------------------------------- checks


def _lines(root: str | Path, path: str) -> list[str]:
    """The lines of a task's gold file (a path the task names: read through fasbench.base.contain)."""
    data, _ = contain.read_bytes(root, path)
    return data.decode("utf-8", errors="replace").split("\n")


def _gold_spans(gold: Gold) -> list[tuple[str, list[list[int]]]]:
    spans = [(p, r) for p, r in gold.edited.items()]
    spans += [(p, r) for v in gold.variants.values() for p, r in v.items()]
    if gold.explore is not None:
        spans += [
            (p, [[s, e]])
            for k in ("core_regions", "optional_regions")
            for p, s, e in gold.explore.get(k, [])
            if e != -1
        ]
    return spans


def gold_line_mismatches(original: Task, perturbed: Task) -> list[dict]:
    """Every gold line of ``original`` whose relocated line on ``perturbed`` holds other code (read
    back through the renames); [] when the relocation is exact."""
    rec = contain.read_json(perturbed.meta["perturb"]["record"], want=dict)  # a task names it: bounded, no FIFO
    reloc = PerturbMap(rec)
    back = [(r["new_name"], r["old_name"]) if r["kind"] != "private" else (r["new"], r["old"]) for r in rec["renames"]]
    out = []
    for path, ranges in _gold_spans(original.gold):
        if not ranges:
            continue
        old, new = _lines(original.root, path), _lines(perturbed.root, reloc.path(path))
        for s, e in ranges:
            for n in range(max(1, s), min(e, len(old)) + 1):  # a gold start of -10**9 walks nothing
                m = reloc.line(path, n)
                got = new[m - 1] if 0 < m <= len(new) else None
                if got != old[n - 1] and (got is None or read_back(got, back) != old[n - 1]):
                    out.append(
                        {
                            "path": path,
                            "line": n,
                            "new_path": reloc.path(path),
                            "new_line": m,
                            "original": old[n - 1],
                            "perturbed": got,
                        }
                    )
    return out


_IMPORTS = """import importlib, json, sys
sys.path[:0] = json.loads(sys.argv[2])
ok = []
for m in json.loads(sys.argv[1]):
    try:
        importlib.import_module(m)
        ok.append(m)
    except BaseException:
        pass
print("FASBENCH-IMPORTED " + json.dumps(ok), flush=True)
"""


class CheckError(PerturbError):
    """The corpus's code could not be run in the sandbox at all (bwrap missing, the corpus unreadable)."""


def _python_paths() -> list[str]:
    """This interpreter's prefixes (the virtual environment and its base Python), bound read-only."""
    return sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})


def _run(args: list[str], cwd: str | Path, bwrap: str) -> tuple[int, str]:
    """(exit status, output) of ``args`` run on the corpus ``cwd`` in the sandbox (read-only)."""
    r = run_sandboxed(
        bwrap,
        cwd,
        args,
        sandbox_env(CHECK_ENV),
        CHECK_TIMEOUT,
        writable=False,
        ro_paths=_python_paths(),
        limits=CHECK_LIMITS,
    )
    if r["returncode"] == 126 and "cd: " in r["output"][:2000]:
        raise CheckError(f"the sandbox's user cannot enter the corpus {cwd} (its mode lets no other user read it)")
    return r["returncode"], r["output"]


def _importable(root: str | Path, files: list[str], bwrap: str) -> set[str]:
    """The import names of ``files`` that import in a fresh interpreter with the corpus's source
    roots first on ``sys.path``."""
    names = [dotted_name(Path(root), f) for f in files]
    roots = sorted(
        {
            str(Path(f).parents[len(n.split(".")) - (0 if f.endswith("/__init__.py") else 1)])
            for f, n in zip(files, names)
        }
    )
    rc, out = _run([sys.executable, "-c", _IMPORTS, json.dumps(names), json.dumps(roots)], root, bwrap)
    lines = [x[len(IMPORTED) :] for x in out.splitlines() if x.startswith(IMPORTED)]
    try:
        got = json.loads(lines[-1]) if rc == 0 and lines else []
    except ValueError:
        return set()
    return {m for m in got if isinstance(m, str)} if isinstance(got, list) else set()


def _collected(root: str | Path, files: list[str], bwrap: str) -> int | None:
    """Tests pytest collects from ``files`` (None when collection fails)."""
    if not files:
        return 0
    rc, out = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--rootdir",
            ".",
            *files,
        ],
        root,
        bwrap,
    )
    n = sum(1 for line in out.splitlines() if "::" in line)
    return n if rc == 0 else None


def verify_corpus(original_root: str | Path, perturbed_root: str | Path, rec: dict) -> dict:
    """The modules the perturbation changed or moved, imported on both trees, and their test files
    collected by pytest on both, in the sandbox: ``{"modules", "import_original", "import_perturbed",
    "lost_imports", "tests_original", "tests_perturbed", "ok"}``; ``ok`` when nothing that worked stopped
    working. Raises CheckError (one line) when the sandbox cannot run the corpus's code."""
    try:
        bwrap = check_sandbox()
    except SandboxError as e:
        raise CheckError(f"perturb's check runs the corpus's code only in the sandbox: {e}") from None
    reloc = PerturbMap(rec)
    changed = set(rec.get("changed", [])) | set(reloc.moves) | set(reloc.blocks)
    changed |= {r["file"] for r in rec.get("renames", []) if r["kind"] == "private"}
    py = sorted(p for p in changed if p.endswith(".py") and all(s.isidentifier() for s in p[:-3].split("/")))
    mods = [dotted_name(Path(original_root), p) for p in py]
    new_mods = {m: dotted_name(Path(perturbed_root), reloc.path(p)) for m, p in zip(mods, py)}
    a = _importable(original_root, py, bwrap)
    b = _importable(perturbed_root, [reloc.path(p) for p in py], bwrap)
    lost = sorted(m for m in a if new_mods[m] not in b)
    tests = [p for p in py if Path(p).name.startswith("test_") or Path(p).stem.endswith("_test")]
    ta, tb = _collected(original_root, tests, bwrap), _collected(perturbed_root, [reloc.path(p) for p in tests], bwrap)
    return {
        "modules": len(mods),
        "import_original": len(a),
        "import_perturbed": len(b & set(new_mods.values())),
        "lost_imports": lost,
        "test_files": len(tests),
        "tests_original": ta,
        "tests_perturbed": tb,
        "ok": not lost and (ta is None or ta == tb),
    }


def perturb_many(
    tasks: Sequence[Task], spec: PerturbSpec, check: bool = False
) -> Iterator[tuple[str, Task | None, bool]]:
    """``fasbench data perturb``'s batch: per task ``(line, perturbed task or None, failed the check)``. A
    task that cannot be perturbed gives ``None`` and its reason (the batch goes on); with ``check`` each
    line also says how many gold lines came back wrong (:func:`gold_line_mismatches`) and whether the
    touched modules import and their tests collect (:func:`verify_corpus`)."""
    for t in tasks:
        try:
            p = perturb_task(t, spec)
        except (PerturbError, OSError) as e:
            yield f"{t.id}\tnot perturbed\t{e}", None, False
            continue
        m = p.meta["perturb"]
        line = (
            f"{t.id}\t{p.root}\trenames {m['renames']}, reordered files {m['reordered_files']}, "
            f"gold files moved {m['gold_files_moved']}/{len(t.gold.edited)}"
        )
        bad = False
        if check:
            wrong = gold_line_mismatches(t, p)
            try:
                v = verify_corpus(t.root, p.root, contain.read_json(m["record"], want=dict))
            except (
                PerturbError,
                ValueError,
            ) as e:  # the sandbox cannot run this corpus's code, or its record is unreadable
                bad, line = True, line + f"; gold lines wrong {len(wrong)}; check failed: {e}"
            else:
                bad = bool(wrong) or not v["ok"]
                line += (
                    f"; gold lines wrong {len(wrong)}; imports {v['import_perturbed']}/{v['import_original']}"
                    f" (of {v['modules']}), tests collected {v['tests_perturbed']}/{v['tests_original']}"
                )
        yield line, p, bad
