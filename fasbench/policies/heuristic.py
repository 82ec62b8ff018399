"""An LLM-free parallel searcher: the strong CPU baseline.

From the query it extracts identifiers (CamelCase, snake_case, dotted paths), file names, quoted
strings, error messages and traceback frames. Turn 1 runs several greps / file finds in parallel;
(turn 2, with ≥ 4 turns: follow-up greps for definitions of the symbols turn 1 found only in use;)
then it views the most promising files around the evidence, and reports ranked files with line
ranges around the evidence (the enclosing ``def``/``class`` block when the view shows it).

Everything is recomputed from the conversation each turn, so one instance serves any number of
episodes and threads. ``temperature > 0`` makes it stochastic: files are ranked by Gumbel-perturbed
scores (sampling without replacement from softmax(score / temperature)) and the terms to search are
sampled the same way; ``seed`` (with the query) fixes the draw, so rollout ``k`` of a pool is
``HeuristicPolicy(temperature=t, seed=k)``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from fasbench.policies.dialect import (Dialect, assistant_calls, dialect_for, parse_grep, parse_paths, parse_view,
                                       tool_outputs, user_query)
from fasbench.records import Reply

# Identifiers too common to say anything about where a bug lives.
STOP = set("""
self cls None True False print import from return def class with as for while if else elif try except
raise assert lambda yield pass break continue and or not is in len str int float list dict set tuple
type object super init __init__ __call__ __name__ __main__ args kwargs kw arg value values key keys items
name names data result results test tests example examples error errors warning file files path line
lines code issue bug fix python version expected actual output input return_value self_ main setup
true false none this that the and when then there should would could using used use get set
numpy np pd plt pandas matplotlib array range open append format join split strip isinstance
getattr setattr hasattr repr string number function method module package class_ obj x y z
""".split())
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_FILE = re.compile(r"\b[\w./-]*[\w-]+\.(?:py|pyx|pyi|c|h|cfg|toml|ini|txt|rst|js|html|css|json|yaml|yml)\b")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>]+)')
_ERROR = re.compile(r"\b(?P<exc>[A-Z][A-Za-z]*(?:Error|Exception|Warning))\s*:\s*(?P<msg>[^\n]{6,200})")
_QUOTED = re.compile(r"`([^`\n]{3,80})`|'([^'\n]{4,80})'|\"([^\"\n]{4,80})\"")
_CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$|^[a-z]+[A-Z][A-Za-z0-9]*$")
_DEF = re.compile(r"^\s*(?:async\s+)?(def|class)\s+(\w+)")
_TESTY = re.compile(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*$|_tests?\.py$|(^|/)conftest\.py$")
_DOCSY = re.compile(r"(^|/)(docs?|examples?|benchmarks?|asv_bench|tutorials?|galleries|doc_src)(/|$)")


@dataclass
class Term:
    text: str  # what to search for (an identifier, a file name, or a literal)
    kind: str  # ident | file | frame | error | quoted | module
    weight: float


ENGLISH = set("""
about above after again against also although always another anyone anything because been before being
below between both cannot could currently does doing done down during each either else even every
example expected following from further have having here however instead into itself just like made
make many might more most much must need never none nothing only other otherwise over perhaps please
rather really same seems should since some something still such than that their them then there these
they thing think this those though through under unless until used useful user users using very want
what when where whether which while will with within without would your actually already issue issues
problem problems error errors result results return returns value values following works working
description modified last possible correct correctly wrong behaviour behavior case cases change changes
changed default time times simple able instead right look looks seem code line lines file files test
tests testing version versions call calls called support supported documentation docs django python
raise raises raised true false none class method methods function functions object objects type types
name names data allow allows allowed first second third add added adding remove removed fails failed
""".split())


def _code_words(query: str) -> set[str]:
    """Words seen in a code context: backticks, code blocks / indented lines, tracebacks, calls,
    attribute access."""
    out: set[str] = set()
    in_block = False
    for line in query.splitlines():
        if line.strip().startswith("```"):
            in_block = not in_block
            continue
        if in_block or line.startswith(("\t", "    ", ">>>", "+", "-")) or _FRAME.search(line):
            out.update(_WORD.findall(line))
    for m in re.finditer(r"`([^`\n]+)`", query):
        out.update(_WORD.findall(m.group(1)))
    out.update(re.findall(r"\b([A-Za-z_]\w*)\s*\(", query))
    out.update(re.findall(r"\.([A-Za-z_]\w*)", query))
    out.update(re.findall(r"\b([A-Za-z_]\w*)\.[A-Za-z_]", query))
    return out


def _is_ident_worth(w: str, code: set[str] | None = None) -> bool:
    if len(w) < 4 or w.lower() in STOP or w.isdigit():
        return False
    if "_" in w.strip("_") or _CAMEL.match(w):
        return True
    # a plain capitalised or all-caps word is an identifier only where it reads as code
    return code is not None and w in code and (w[0].isupper() or len(w) >= 6) and w.lower() not in ENGLISH


_QUERY_TAGS = (("<user_query>\n", "\n</user_query>"),  # Relace's published user prompt
               ("<query>", "</query>"))  # FastContext's released user message


def task_text(user_message: str) -> str:
    """The task inside a tool set's user prompt: between Relace's ``<user_query>`` tags, inside
    FastContext's ``<query>``, or (older fasbench prompts) after ``Task:``; else the whole message."""
    s = user_message
    for start, end in _QUERY_TAGS:
        i = s.find(start)
        if i >= 0:
            j = s.find(end, i + len(start))
            if j >= 0:
                return s[i + len(start):j]
    if "Task:\n" in s:
        s = s.split("Task:\n", 1)[1]
        cut = s.rfind("\n\nFind the relevant")
        if cut >= 0:
            s = s[:cut]
    return s


def extract_terms(query: str) -> list[Term]:
    """Search terms of a problem statement, strongest first (one per text and kind).

    Kinds: ``ident`` (identifiers; words in the title weigh more), ``file`` (file names),
    ``module`` (path suffixes from dotted names), ``error`` (literal error messages), ``word``
    (distinctive lowercase prose words, matched against file and definition names)."""
    terms: dict[tuple[str, str], float] = defaultdict(float)
    code = _code_words(query)
    lines = [ln for ln in query.splitlines() if ln.strip()]
    title = set(_WORD.findall(lines[0])) if lines else set()
    for m in _FRAME.finditer(query):
        p = m.group("path").replace("\\", "/")
        terms[(p.rsplit("/", 1)[-1], "file")] += 1.0
        parts = p.split("/")
        if len(parts) >= 2:
            terms[("/".join(parts[-2:]), "module")] += 1.0
        if m.group("func") != "<module>" and len(m.group("func")) >= 4 and m.group("func") not in STOP:
            terms[(m.group("func"), "ident")] += 1.5
    for m in _ERROR.finditer(query):
        msg = m.group("msg").strip()
        lit = re.split(r"['\"`{}()\[\]%<>]|\d", msg)[0].strip(" .:")
        if len(lit) >= 12 and len(lit.split()) >= 2:
            terms[(lit[:60], "error")] += 2.0
    for m in _FILE.finditer(query):
        f = m.group(0).strip("./")
        if f and not f.startswith("http") and "test" not in f.rsplit("/", 1)[-1]:
            terms[(f.rsplit("/", 1)[-1], "file")] += 1.5
            if "/" in f:
                terms[("/".join(f.split("/")[-2:]), "module")] += 1.5
    for m in _DOTTED.finditer(query):
        parts = m.group(0).split(".")
        if parts[-1] in ("py", "txt", "rst", "com", "org", "html", "io", "net") or parts[0] in ("e", "i"):
            continue
        if len(parts) >= 3:
            for j in (len(parts) - 1, len(parts)):  # a.b.c.func -> a/b/c.py ; a.b.c -> a/b/c.py
                mod = parts[:j]
                if len(mod) >= 2 and all(x.islower() or "_" in x for x in mod):
                    terms[("/".join(mod[-3:]) + ".py", "module")] += 1.0
        for p in parts[1:]:
            if _is_ident_worth(p, code) or (len(p) >= 5 and p.lower() not in STOP and p.lower() not in ENGLISH):
                terms[(p, "ident")] += 1.0 * (1.5 if p in title else 1.0)
    counts: dict[str, int] = defaultdict(int)
    for w in _WORD.findall(query):
        counts[w] += 1
    for w, c in counts.items():
        if _is_ident_worth(w, code):
            bonus = (1.8 if w in title else 1.0) * (1.3 if w in code else 1.0)
            terms[(w, "ident")] += (1.0 + 0.25 * min(c - 1, 4)) * bonus
    # distinctive prose words (title first): matched against file and definition names
    prose = []
    for w in _WORD.findall(" ".join(lines[:1]) + " " + " ".join(lines[1:6])):
        lw = w.lower().strip("_")
        if len(lw) >= 5 and lw.isalpha() and lw not in ENGLISH and lw not in STOP and lw not in prose:
            prose.append(lw)
    for i, w in enumerate(prose[:8]):
        terms[(w, "word")] += (1.0 if w in {x.lower() for x in title} else 0.6) / (1 + 0.1 * i)
    out = [Term(t, k, w) for (t, k), w in terms.items()]
    out.sort(key=lambda t: -t.weight)
    return out


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


@dataclass
class HeuristicPolicy:
    """Parameters (all settable from ``make_policy("heuristic:turns=3,k=3")``):"""

    turns: int = 3  # turns it plans to use (it reports on this turn, or earlier when told it is the last)
    calls: int = 8  # parallel calls per search turn
    k: int = 3  # most files reported
    view_files: int = 4  # files viewed in the view turn
    view_lines: int = 120  # lines viewed per file
    rel_cut: float = 0.35  # report files scoring at least this share of the best one
    temperature: float = 0.0  # > 0: sample terms and file ranks (Gumbel-top-k) instead of argmax
    seed: int = 0  # with the query, fixes the random draw
    name: str = "heuristic"

    def __post_init__(self):
        for f in ("turns", "calls", "k", "view_files", "view_lines"):
            if int(getattr(self, f)) < 1:
                raise ValueError(f"heuristic: {f} must be >= 1, got {getattr(self, f)}")
        if self.temperature < 0:
            raise ValueError(f"heuristic: temperature must be >= 0, got {self.temperature}")
        if not 0 <= self.rel_cut <= 1:
            raise ValueError(f"heuristic: rel_cut must be in [0, 1], got {self.rel_cut}")

    # ------------------------------------------------------------------ episode
    def _rng(self, query: str, turn: int) -> np.random.Generator | None:
        if self.temperature <= 0:
            return None
        h = int(hashlib.sha1(f"{self.seed}|{turn}|{query}".encode()).hexdigest()[:12], 16)
        return np.random.default_rng(h)

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        d = dialect_for(tools)
        query = task_text(user_query(messages))
        done = assistant_calls(messages)
        turn = len(done)
        last = final or turn >= self.turns - 1
        terms = extract_terms(query)
        ev = self._evidence(messages, done, terms)
        if last:
            return self._report(d, ev, turn, query)
        if turn == 0:
            return Reply(text="Searching for the identifiers, names and messages in the issue.",
                         calls=self._search_calls(d, terms, self._rng(query, turn), query))
        if turn == 1 and self.turns >= 4:
            calls = self._refine_calls(d, terms, ev)
            if calls:
                return Reply(text="Looking up definitions of symbols found only in use.", calls=calls)
        calls = self._view_calls(d, ev, self._rng(query, turn), turn)
        if not calls:
            return self._report(d, ev, turn, query)
        return Reply(text="Viewing the most promising files.", calls=calls)

    # ------------------------------------------------------------------ calls
    def _search_calls(self, d: Dialect, terms: list[Term], rng, query: str = "") -> list:
        idents = [t for t in terms if t.kind == "ident"]
        files = [t for t in terms if t.kind in ("file", "module")]
        errors = [t for t in terms if t.kind == "error"]
        words = [t for t in terms if t.kind == "word"]
        if rng is not None:  # sample the order of terms (Gumbel-top-k on log-weights)
            def shuffle(ts):
                if not ts:
                    return ts
                keys = np.log([t.weight for t in ts]) + rng.gumbel(size=len(ts)) * self.temperature
                return [ts[i] for i in np.argsort(-keys)]
            idents, words, files = shuffle(idents), shuffle(words), shuffle(files)
        n = self.calls
        calls: list = []

        def cid() -> str:
            return f"c0_{len(calls)}"

        # 1. definitions of the identifiers, in groups (one alternation per call)
        groups = [idents[i:i + 8] for i in range(0, min(len(idents), 16), 8)]
        for g in groups:
            alt = "|".join(re.escape(t.text) for t in g)
            calls.append(d.grep(cid(), rf"^\s*(async\s+)?(def|class)\s+({alt})\b|^({alt})\s*="))
        # 2. file and definition names that contain the distinctive words
        if words:
            ws = [t.text for t in words[:6]]
            calls.append(d.find_any(cid(), ws))
            calls.append(d.grep(cid(), rf"^\s*(async\s+)?(def|class)\s+\w*({'|'.join(ws)})", ignore_case=True))
        # 3. literal error messages
        for t in errors[:1]:
            calls.append(d.grep(cid(), re.escape(t.text), include=None))
        # 4. file names and module paths
        if files:
            calls.append(d.find_any(cid(), [t.text for t in files[:4]], exact=True))
        # 5. uses of the strongest identifiers
        for t in idents:
            if len(calls) >= n:
                break
            calls.append(d.grep(cid(), rf"\b{re.escape(t.text)}\b"))
        if not calls:  # nothing code-like in the query: grep its longest words
            longest = sorted({w for w in _WORD.findall(query) if len(w) > 5 and w.lower() not in STOP}, key=len,
                             reverse=True)
            calls = [d.grep(f"c0_{i}", rf"\b{re.escape(w)}\b", ignore_case=True) for i, w in enumerate(longest[:n])]
        return calls[:n]

    def _refine_calls(self, d: Dialect, terms: list[Term], ev: "Evidence") -> list:
        defined = {name for hits in ev.defs.values() for _, name in hits}
        todo = [t.text for t in terms if t.kind == "ident" and t.text not in defined][:16]
        extra = [w for w in ev.nearby_idents if w not in defined][: 8 * self.calls]
        calls = []
        for names in ([todo[i:i + 8] for i in range(0, len(todo), 8)] + [extra[i:i + 8] for i in range(0, len(extra), 8)]):
            if len(calls) >= self.calls // 2 or not names:
                break
            alt = "|".join(re.escape(w) for w in names)
            calls.append(d.grep(f"c1_{len(calls)}", rf"^\s*(async\s+)?(def|class)\s+({alt})\b"))
        calls += self._view_calls(d, ev, None, 1, limit=self.calls - len(calls))
        return calls

    def _view_calls(self, d: Dialect, ev: "Evidence", rng, turn: int, limit: int | None = None) -> list:
        ranked = ev.ranked(rng, self.temperature)
        calls = []
        limit = min(self.view_files, limit if limit is not None else self.view_files)
        for path, _ in ranked:
            if len(calls) >= limit:
                break
            if path in ev.views:
                continue
            centre = ev.best_line(path)
            lo = max(1, centre - self.view_lines // 4)
            calls.append(d.view(f"c{turn}_{len(calls)}", path, lo, lo + self.view_lines - 1))
        return calls

    # ------------------------------------------------------------------ evidence and report
    def _evidence(self, messages: list[dict], done: list[list[dict]], terms: list[Term]) -> "Evidence":
        outs = tool_outputs(messages)
        ev = Evidence(terms)
        for calls in done:
            for c in calls:
                fn = c.get("function", {})
                name, out = fn.get("name", ""), outs.get(c.get("id", ""), "")
                if out.startswith("Error"):
                    continue
                args = fn.get("arguments", "{}")
                if name in ("grep_search", "Grep"):
                    ev.add_grep(parse_grep(out))
                elif name in ("bash", "Glob"):
                    ev.add_found(parse_paths(out))
                elif name in ("view_file", "Read"):
                    ev.add_view(args, parse_view(out))
        return ev

    def _report(self, d: Dialect, ev: "Evidence", turn: int, query: str) -> Reply:
        ranked = ev.ranked(self._rng(query, 99), self.temperature)
        if not ranked:
            return d.report(f"c{turn}_r", {}, "no candidate file found")
        best = max(s for _, s in ranked)
        chosen = [(p, s) for p, s in ranked[: self.k] if s >= self.rel_cut * best] or ranked[:1]
        files = {p: ev.ranges(p) for p, _ in chosen}
        why = "; ".join(f"{p}: {', '.join(sorted(ev.why[p])[:4])}" for p, _ in chosen)
        return d.report(f"c{turn}_r", files, f"Files matching the issue's symbols ({why})"[:1000],
                        confidence=ev.confidence([p for p, _ in chosen]))


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

    def add_view(self, args, lines: list[tuple[int, str]]) -> None:
        import json

        try:
            a = json.loads(args) if isinstance(args, str) else dict(args)
        except (ValueError, TypeError):
            return
        path = str(a.get("path", "")).removeprefix("/repo/").removeprefix("./")
        if not path or not lines:
            return
        self.views[path].update(dict(lines))
        text = "\n".join(t for _, t in lines)
        present = [t for t in self.weight if len(t) >= 4 and t in text]
        present_w = [w for w in self.words if w in text.lower()]
        if present or present_w:
            bonus = (sum(self.weight[t] for t in present) + 0.5 * sum(self.words[w] for w in present_w))
            bonus *= 0.3 / max(1.0, math.sqrt(len(self.weight) + len(self.words)))
            self.score[path] += bonus * self._prior(path)
            self.why[path].add(f"{len(present) + len(present_w)} query terms in view")
            for ln, t in lines:
                if any(term in t for term in present):
                    self.lines[path][ln] = max(self.lines[path].get(ln, 0.0), 0.2)
        seen = set()
        for ln, t in lines:
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
        out.sort()
        merged: list[list[int]] = []
        for a, b in out:
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return merged or [[1, 50]]
