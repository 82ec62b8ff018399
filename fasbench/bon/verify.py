"""A cheap verifier of a search report: the search analogue of the seed's test agent.

Seed 003's strongest stop signal for SWE agents is a test agent that writes tests and runs them on
every candidate patch. A search report has no tests to run, but it can be checked against the
repository, cheaply and without a model, the way a reviewer would check a colleague's pointers:

- ``exists``: the cited file is in the tree and every cited range starts inside it;
- ``query_ident``: the cited lines contain an identifier (or literal message) of the query;
- ``query_def``: the cited lines define (``def``/``class``/assignment) an identifier of the query;
- ``grep_led``: the cited lines contain a line that one of the rollout's own grep hits pointed to
  (the report follows from evidence it saw; ``None`` without the trace);
- ``independent``: an independent search (one ripgrep pass, no sampling, for definitions of the
  query's identifiers and its literal messages; run through the tools' sandbox like every ``rg``)
  ranks the file among its best files.

Per rollout the result is ``{"files": {path: [exists, query_ident, query_def, grep_led,
independent]}, "score": mean check value over files, "pass": 0/1, "indep_recall": share of the
independent search's best files that the report cites}``. A report *passes* when every cited file
exists and at least one of them defines a query identifier or is among the independent search's
best files. The verifier is deterministic and costs one ripgrep pass per task plus reading the cited
files; it never sees the gold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fasbench.base import contain
from fasbench.policies.terms import extract_terms
from fasbench.records import Task, Trace
from fasbench.tools import observation
from fasbench.tools.base import ToolLimits, Workspace
from fasbench.tools.bash.pipeline import Stage, decode, run_pipeline
from fasbench.tools.rg import ignore_flags, rg_argv

CHECKS = ("exists", "query_ident", "query_def", "grep_led", "independent")
MAX_TERMS = 16  # identifiers searched by the independent pass (the query's most distinctive first)
INDEPENDENT_TOP = 5  # files kept from the independent search
RG_TIMEOUT_S = 30
RG_MAX_BYTES = 16 << 20  # output of the independent search read at most (the tools' rg cap)
MAX_FILE_BYTES = 8 << 20  # bytes of a cited file the verifier reads (fasbench.base.contain bounds every read)


@dataclass
class TaskProbe:
    """What the verifier needs of one task, computed once per task (``probe``)."""

    root: Path
    idents: list[str]
    messages: list[str]
    independent: list[str]  # the independent search's best files, best first
    _lines: dict = field(default_factory=dict, repr=False)
    _ident_re: re.Pattern | None = field(default=None, repr=False)
    _def_re: re.Pattern | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.idents or self.messages:
            alts = [rf"\b{re.escape(t)}\b" for t in self.idents] + [re.escape(m) for m in self.messages]
            self._ident_re = re.compile("|".join(alts))
        if self.idents:
            alt = "|".join(re.escape(t) for t in self.idents)
            self._def_re = re.compile(rf"^\s*(async\s+)?(def|class)\s+({alt})\b|^\s*({alt})\s*=")

    def lines(self, path: str) -> list[str] | None:
        """The file's lines (cached), or None when it is not a file inside the root."""
        if path not in self._lines:
            try:  # fasbench.base.contain: inside the root, a regular file, at most MAX_READ_BYTES read
                data, _ = contain.read_bytes(self.root, path, MAX_FILE_BYTES)
                self._lines[path] = data.decode("utf-8", errors="replace").splitlines()
            except contain.PathRefused:
                self._lines[path] = None
        return self._lines[path]


def _terms(query: str) -> tuple[list[str], list[str]]:
    terms = extract_terms(query)
    idents = [t.text for t in sorted(terms, key=lambda t: -t.weight) if t.kind == "ident"][:MAX_TERMS]
    msgs = [t.text for t in terms if t.kind == "error" and len(t.text) >= 8][:2]
    return idents, msgs


def independent_search(
    root: Path, idents: Sequence[str], messages: Sequence[str], top: int = INDEPENDENT_TOP
) -> list[str]:
    """Files ranked by how many distinct query identifiers they define plus literal messages they
    contain (one ripgrep pass over ``*.py``), best ``top`` first; ties by path."""
    pats = []
    if idents:
        alt = "|".join(re.escape(t) for t in idents)
        pats.append(rf"^\s*(async\s+)?(def|class)\s+({alt})\b|^({alt})\s*=")
    pats += [re.escape(m) for m in messages]
    if not pats:
        return []
    argv = rg_argv(
        *ignore_flags(root), "-n", "--no-heading", "--null", "-g", "*.py", *[a for p in pats for a in ("-e", p)], "."
    )
    # the tools' sandbox: confined process (rlimits, seccomp, Landlock where enforced), stripped env
    r = run_pipeline(Workspace(root, ToolLimits(timeout_s=RG_TIMEOUT_S)), [Stage(argv)], max_bytes=RG_MAX_BYTES)
    if r.timed_out:
        return []
    out = decode(r.stdout)
    if r.cut:
        out = out[: out.rfind("\n") + 1]  # a partial last line
    found: dict[str, set[str]] = {}
    for row in out.splitlines():  # `path NUL line:text` (--null: the path ends at the NUL)
        path, nul, rest = row.partition("\0")
        line, colon, text = rest.partition(":")
        if not (nul and colon and line.isdigit()):
            continue
        path = path.removeprefix("./")
        hit = {t for t in idents if re.search(rf"\b{re.escape(t)}\b", text)} | {m for m in messages if m in text}
        found.setdefault(path, set()).update(hit or {"?"})
    ranked = sorted(found, key=lambda p: (-len(found[p]), p))
    return ranked[:top]


def probe(task: Task) -> TaskProbe:
    """Compute the per-task part of the verifier (the query's terms and the independent search)."""
    if not task.root:
        raise ValueError(f"verify: task {task.id} has no corpus root")
    root = Path(task.root)
    idents, msgs = _terms(task.query)
    return TaskProbe(root, idents, msgs, independent_search(root, idents, msgs))


def match_lines(trace: Trace | None) -> set[tuple[str, int]] | None:
    """(path, line) of every search match line the episode saw (its results' ``shown.hits``); None
    without a trace."""
    if trace is None:
        return None
    out = set()
    for t in trace.turns:
        by_id = {r.call_id: r for r in t.results}
        for c in t.calls:
            out.update((p, ln) for p, ln in observation(trace.toolset, c, by_id.get(c.id), lines=False).shown.hits)
    return out


def check_file(pr: TaskProbe, path: str, ranges: Sequence[Sequence[int]], hits: set | None) -> list:
    """The five check values (1/0, or None when not computable) of one cited file."""
    lines = pr.lines(path)
    indep = int(path in pr.independent)
    if lines is None:
        return [0, 0, 0, 0 if hits is not None else None, indep]
    n = len(lines)
    rs = [(int(a), n if int(b) == -1 else int(b)) for a, b in (ranges or [[1, n]])]
    exists = int(n > 0 and all(1 <= a <= n for a, _ in rs))
    cited = [(i, lines[i - 1]) for a, b in rs for i in range(max(1, a), min(n, b) + 1)]
    qi = int(pr._ident_re is not None and any(pr._ident_re.search(t) for _, t in cited))
    qd = int(pr._def_re is not None and any(pr._def_re.search(t) for _, t in cited))
    gl = None if hits is None else int(any((path, i) in hits for i, _ in cited))
    return [exists, qi, qd, gl, indep]


def verify_report(pr: TaskProbe, files: dict | None, trace: Trace | None = None) -> dict:
    """The verifier's result for one report (``files``: normalised path → ranges; None = no report)."""
    if not files:
        return {"files": {}, "score": 0.0, "pass": 0, "indep_recall": 0.0}
    hits = match_lines(trace)
    per = {p: check_file(pr, p, rs, hits) for p, rs in files.items()}
    scores = [sum(v for v in c if v is not None) / max(1, sum(v is not None for v in c)) for c in per.values()]
    passed = all(c[0] for c in per.values()) and any(c[2] or c[4] for c in per.values())
    recall = sum(p in files for p in pr.independent) / len(pr.independent) if pr.independent else 0.0
    return {
        "files": per,
        "score": round(sum(scores) / len(scores), 4),
        "pass": int(passed),
        "indep_recall": round(recall, 4),
    }


def file_score(checks: Sequence) -> float:
    """Mean of a cited file's computable check values."""
    vals = [v for v in checks if v is not None]
    return sum(vals) / len(vals) if vals else 0.0
