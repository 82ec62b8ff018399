"""What the observations of an episode say about each file, for the heuristic policy: a score per
file from the search terms it matched (definitions, uses, messages, names), the lines behind it, the
definitions seen and the lines viewed (:class:`Evidence`), fed from the structured observations
(:func:`fasbench.policies.dialect.observations`)."""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from fasbench.base.lines import merge_ranges
from fasbench.policies.terms import STOP, Term

_DEF = re.compile(r"^\s*(?:async\s+)?(def|class)\s+(\w+)")
_TESTY = re.compile(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*$|_tests?\.py$|(^|/)conftest\.py$")
_DOCSY = re.compile(r"(^|/)(docs?|examples?|benchmarks?|asv_bench|tutorials?|galleries|doc_src)(/|$)")


def _jitter(rng: np.random.Generator | None, n: int, temperature: float) -> np.ndarray:
    if rng is None or temperature <= 0:
        return np.zeros(n)
    return rng.gumbel(size=n) * temperature


def _enclosing_block(lines: dict[int, str], hit: int, max_len: int = 80) -> tuple[int, int] | None:
    """The def/class block around ``hit`` in a numbered view: from the nearest def/class line at or
    above ``hit`` down to the next line indented no deeper (or the view's end)."""
    start = None
    for ln in range(hit, min(lines) - 1, -1):
        t = lines.get(ln)
        if t is not None and _DEF.match(t):
            start = ln
            break
    if start is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start
    for ln in range(start + 1, max(lines) + 1):
        t = lines.get(ln)
        if t is None:
            break
        if t.strip() and len(t) - len(t.lstrip()) <= indent and not t.lstrip().startswith((")", "]", "}", "#", "@")):
            break
        end = ln
    if end - start > max_len:
        lo = max(start, hit - max_len // 2)
        return lo, lo + max_len
    return start, end


class Evidence:
    """What the observations so far say about each file: a score per file, the lines behind it,
    the definitions seen, and the numbered lines of the views."""

    def __init__(self, terms: list[Term]):
        self.terms = terms
        self.weight = {t.text: t.weight for t in terms if t.kind in ("ident", "error")}
        self.words = {t.text: t.weight for t in terms if t.kind == "word"}
        self.file_terms = [t for t in terms if t.kind in ("file", "module")]
        self.score: dict[str, float] = defaultdict(float)
        self.lines: dict[str, dict[int, float]] = defaultdict(dict)  # path -> line -> strength
        self.defs: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.why: dict[str, set[str]] = defaultdict(set)
        self.views: dict[str, dict[int, str]] = defaultdict(dict)
        self.nearby_idents: list[str] = []
        self._term_file: dict[tuple[str, str], float] = {}

    def _prior(self, path: str) -> float:
        f = 1.0
        if _TESTY.search(path):
            f *= 0.15
        if _DOCSY.search(path):
            f *= 0.25
        if not path.endswith((".py", ".pyx", ".pyi")):
            f *= 0.5
        return f

    def _bump(self, path: str, term: str, amount: float, line: int | None, why: str) -> None:
        key = (path, term)
        old = self._term_file.get(key, 0.0)
        new = max(old, amount)  # a term counts once per file, at its strongest evidence
        self._term_file[key] = new
        self.score[path] += new - old
        if line is not None:
            self.lines[path][line] = max(self.lines[path].get(line, 0.0), amount)
        self.why[path].add(why)

    def add_grep(self, hits: list[tuple[str, int, str]]) -> None:
        by_term: dict[str, list[tuple[str, int, str]]] = defaultdict(list)  # term -> (path, line, how)
        for path, line, text in hits:
            m = _DEF.match(text)
            for t in self.weight:
                if t in text and (len(t) > 10 and " " in t or re.search(rf"\b{re.escape(t)}\b", text)):
                    is_def = bool(m and m.group(2) == t) or bool(re.match(rf"^{re.escape(t)}\s*=", text))
                    by_term[t].append((path, line, "def" if is_def else ("msg" if " " in t else "use")))
                    if is_def:
                        self.defs[path].append((line, t))
            if m:
                low = m.group(2).lower()
                for w in self.words:
                    if w in low:
                        by_term["~" + w].append((path, line, "wdef"))
        for t, hs in by_term.items():
            w = self.words[t[1:]] if t.startswith("~") else self.weight[t]
            nfiles = len({p for p, _, _ in hs})
            ndefs = len({p for p, _, h in hs if h == "def"})
            for path, line, how in hs:
                if how == "def":
                    amt = 3.0 / math.sqrt(ndefs)
                elif how == "msg":
                    amt = 2.5 / math.sqrt(nfiles)
                elif how == "wdef":
                    amt = 1.2 / math.sqrt(nfiles)
                else:
                    amt = 0.8 / math.sqrt(nfiles)
                label = {"def": "def ", "wdef": "def ~", "msg": "msg ", "use": ""}[how] + t.lstrip("~")
                self._bump(path, t, w * amt * self._prior(path), line, label)

    def add_found(self, paths: list[str]) -> None:
        """Paths listed by find / Glob: matched against file names, module paths and prose words."""
        matched: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for p in paths:
            base = p.rsplit("/", 1)[-1]
            stem = base.rsplit(".", 1)[0].lower()
            for t in self.file_terms:
                if p == t.text or p.endswith("/" + t.text):
                    matched["@" + t.text].append((p, t.weight * (2.0 if t.kind == "module" else 1.5)))
            for w, wt in self.words.items():
                if w in stem or stem in w and len(stem) >= 4:
                    matched["~" + w].append((p, wt * 1.5))
                elif w in p.lower():
                    matched["~" + w].append((p, wt * 0.6))
        for t, ps in matched.items():
            spec = 1.0 / math.sqrt(len(ps))
            for p, amt in ps:
                self._bump(p, t, amt * spec * self._prior(p), None, "name ~" + t[1:])

    def add_view(self, path: str, lines: list[tuple[int, str]]) -> None:
        """Numbered lines of ``path`` a view showed."""
        if not path or not lines:
            return
        self.views[path].update(dict(lines))
        text = "\n".join(t for _, t in lines)
        present = [t for t in self.weight if len(t) >= 4 and t in text]
        present_w = [w for w in self.words if w in text.lower()]
        if present or present_w:
            bonus = sum(self.weight[t] for t in present) + 0.5 * sum(self.words[w] for w in present_w)
            bonus *= 0.3 / max(1.0, math.sqrt(len(self.weight) + len(self.words)))
            self.score[path] += bonus * self._prior(path)
            self.why[path].add(f"{len(present) + len(present_w)} query terms in view")
            for ln, t in lines:
                if any(term in t for term in present):
                    self.lines[path][ln] = max(self.lines[path].get(ln, 0.0), 0.2)
        seen = set()
        for _, t in lines:
            for w in re.findall(r"\b([A-Za-z_]\w{4,})\s*\(", t):
                if w not in seen and w not in self.weight and w.lower() not in STOP and not w.startswith("_"):
                    seen.add(w)
                    self.nearby_idents.append(w)

    def ranked(self, rng=None, temperature: float = 0.0) -> list[tuple[str, float]]:
        """Files by score; with a temperature, a Gumbel-top-k sample from softmax(log score / T)."""
        items = sorted(((p, s) for p, s in self.score.items() if s > 0), key=lambda x: (-x[1], x[0]))
        if not items or rng is None or temperature <= 0:
            return items
        s = np.array([v for _, v in items])
        keys = np.log(s / s.max()) + _jitter(rng, len(items), temperature)
        return [items[i] for i in np.argsort(-keys, kind="stable")]

    def confidence(self, chosen: list[str]) -> float:
        """Self-confidence of a report in [0, 1] from the evidence alone (not from any gold): the
        share of the total file score held by the reported files (how concentrated the evidence
        is) times a saturating function of its strength, 1 - exp(-best / 3), halved when no
        reported file holds a definition of a query identifier. A heuristic, uncalibrated."""
        scores = [s for s in self.score.values() if s > 0]
        if not scores or not chosen:
            return 0.0
        mass = sum(self.score.get(p, 0.0) for p in chosen) / sum(scores)
        best = max(self.score.get(p, 0.0) for p in chosen)
        c = mass * (1.0 - math.exp(-best / 3.0))
        if not any(self.defs.get(p) for p in chosen):
            c *= 0.5
        return round(min(1.0, max(0.0, c)), 4)

    def best_line(self, path: str) -> int:
        ls = self.lines.get(path) or {}
        if not ls:
            return 1
        return max(ls.items(), key=lambda x: (x[1], -x[0]))[0]

    def ranges(self, path: str, pad: int = 15, max_ranges: int = 3) -> list[list[int]]:
        """Line ranges around the strongest evidence: the enclosing def/class block when viewed."""
        ls = sorted((self.lines.get(path) or {}).items(), key=lambda x: (-x[1], x[0]))[:max_ranges]
        view = self.views.get(path)
        out = []
        for ln, _ in ls:
            blk = _enclosing_block(view, ln) if view and ln in view else None
            out.append(list(blk) if blk else [max(1, ln - 5), ln + pad])
        return merge_ranges(out) or [[1, 50]]
