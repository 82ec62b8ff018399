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
import re
from dataclasses import dataclass

import numpy as np

from fasbench.base.lines import line_set
from fasbench.harness import Policy
from fasbench.policies.dialect import Dialect, assistant_calls, dialect_for, observations, turn_observations, user_query
from fasbench.policies.evidence import Evidence
from fasbench.policies.terms import STOP, WORD, Term, extract_terms, task_text
from fasbench.records import Reply, Turn

__all__ = ["Evidence", "HeuristicPolicy", "Term", "extract_terms", "task_text"]


@dataclass
class HeuristicPolicy(Policy):
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
    # the harness passes the episode's recorded turns (act(..., turns=...)) to a policy that sets this:
    # the structured observations as recorded; without them they are parsed from the tool messages
    observes_turns = True
    backend = "thread"  # its time is spent in ripgrep subprocesses: measured faster than a process pool
    # (benchmarks/eval_throughput.py)

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

    def act(self, messages: list[dict], tools: list[dict], *, final: bool, turns: list[Turn] | None = None) -> Reply:
        d = dialect_for(tools, messages)
        query = task_text(user_query(messages))
        done = assistant_calls(messages)
        turn = len(done)
        last = final or turn >= self.turns - 1
        terms = extract_terms(query)
        obs = turn_observations(turns, d.name) if turns is not None else observations(messages, d.name)
        ev = self._evidence(obs, terms)
        if last:
            return self._report(d, ev, turn, query)
        if turn == 0:
            return Reply(
                text="Searching for the identifiers, names and messages in the issue.",
                calls=self._search_calls(d, terms, self._rng(query, turn), query),
            )
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
        groups = [idents[i : i + 8] for i in range(0, min(len(idents), 16), 8)]
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
            longest = sorted(
                {w for w in WORD.findall(query) if len(w) > 5 and w.lower() not in STOP}, key=len, reverse=True
            )
            calls = [d.grep(f"c0_{i}", rf"\b{re.escape(w)}\b", ignore_case=True) for i, w in enumerate(longest[:n])]
        return calls[:n]

    def _refine_calls(self, d: Dialect, terms: list[Term], ev: Evidence) -> list:
        defined = {name for hits in ev.defs.values() for _, name in hits}
        todo = [t.text for t in terms if t.kind == "ident" and t.text not in defined][:16]
        extra = [w for w in ev.nearby_idents if w not in defined][: 8 * self.calls]
        calls = []
        for names in [todo[i : i + 8] for i in range(0, len(todo), 8)] + [
            extra[i : i + 8] for i in range(0, len(extra), 8)
        ]:
            if len(calls) >= self.calls // 2 or not names:
                break
            alt = "|".join(re.escape(w) for w in names)
            calls.append(d.grep(f"c1_{len(calls)}", rf"^\s*(async\s+)?(def|class)\s+({alt})\b"))
        calls += self._view_calls(d, ev, None, 1, limit=self.calls - len(calls))
        return calls

    def _view_calls(self, d: Dialect, ev: Evidence, rng, turn: int, limit: int | None = None) -> list:
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
    def _evidence(self, obs: list, terms: list[Term]) -> Evidence:
        """The evidence of every successful call so far, from what each one showed: match lines
        (with their text), listed files, and viewed lines."""
        ev = Evidence(terms)
        for turn in obs:
            for o in turn:
                if o.is_error:
                    continue
                if o.shown.hits:
                    ev.add_grep([(p, n, o.text.get(p, {}).get(n, "")) for p, n in o.shown.hits])
                files = [p for p in o.shown.paths if not p.endswith("/")]
                if files:
                    ev.add_found(files)
                for path, ranges in o.shown.ranges.items():
                    got = o.text.get(path, {})
                    ev.add_view(path, [(n, got[n]) for n in sorted(line_set(ranges, max(got, default=0))) if n in got])
        return ev

    def _report(self, d: Dialect, ev: Evidence, turn: int, query: str) -> Reply:
        ranked = ev.ranked(self._rng(query, 99), self.temperature)
        if not ranked:
            return d.report(f"c{turn}_r", {}, "no candidate file found")
        best = max(s for _, s in ranked)
        chosen = [(p, s) for p, s in ranked[: self.k] if s >= self.rel_cut * best] or ranked[:1]
        files = {p: ev.ranges(p) for p, _ in chosen}
        why = "; ".join(f"{p}: {', '.join(sorted(ev.why[p])[:4])}" for p, _ in chosen)
        return d.report(
            f"c{turn}_r",
            files,
            f"Files matching the issue's symbols ({why})"[:1000],
            confidence=ev.confidence([p for p, _ in chosen]),
        )
