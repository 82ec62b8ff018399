"""The "What we found" cell that ends each notebook: Markdown generated from the computed numbers.

A notebook builds one :class:`Findings` from the objects it computed and shows it as the last
expression of its last cell (tagged ``findings``; the HTML report hides that cell's code)::

    f = Findings("03 · Search baselines", n=len(tasks))
    f.metric("file-level F2, heuristic ≤ 4 turns", row["file_f2"], row["file_f2_lo"], row["file_f2_hi"],
             n=row["n"], seed=None)
    f.seed("search share of tokens", ours=0.41, seed=0.566, source="Relace")
    f.paired("heuristic − BM25, file-level F2", compare_row)  # words follow the test, with n
    f.caveat("CPU defaults: 12 tasks from 3 corpora; the full study uses every usable task.")
    f

Every number is passed in, never typed: the cell re-renders with the run it belongs to. Intervals
are written ``mean [lo, hi]`` with their level and ``n``; differences carry an explicit sign; seed
values (the published numbers of the three reproduced systems) sit in their own column, with their
source, beside ours. A paired difference (a :func:`fasbench.stats.metrics.paired_test` result, or a row
of ``fasbench.evaluation.runs.compare_runs``) is written by :meth:`Findings.paired` / :func:`paired_sentence`:
"differ at p < 0.05 (exact sign-flip, n = N)" only when p < 0.05 and the interval excludes 0,
otherwise "no difference detectable with n = N" with the smallest p those N tasks could give.

This is the one builder of every notebook's "What we found": a notebook's last cell ends with the
bare name ``f`` of a :class:`Findings` it built there or got from a study's ``findings(...)``
(``fasbench.trajectories.findings``, ``fasbench.rl.turn_curves``, ``fasbench.bon.findings``,
``fasbench.studies.field``, ``fasbench.e2e.findings``), each of which fills one with :meth:`Findings.add`,
:meth:`Findings.table` (a table of its own columns), :meth:`Findings.text` (a paragraph or a
sub-heading), :meth:`Findings.resumed` (a line when a result was read from an earlier call of its run,
not computed in this one) and :meth:`Findings.caveat`; ``tests/test_report.py`` checks every notebook's last cell.

Smoke settings: a run below its study's size (``Findings(..., study_n=40)`` or :meth:`Findings.study_size`) or
under ``FASBENCH_SHORT=1`` records ``smoke`` and its findings open with a **Smoke settings** line, which the
report's header gathers into a banner (:mod:`fasbench.mainjob.header`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fasbench.base.markup import markdown_text
from fasbench.stats.metrics import SMALL_N, fmt_p, paired_differs, paired_words

SMOKE_MARK = "Smoke settings"  # the words the report looks for in a findings output (its banner)


def _bad(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def num(v, digits: int = 2, pct: bool = False, signed: bool = False) -> str:
    """A number for prose: ``0.68``, ``68%`` (``pct``: the value is a share), ``+0.21`` (``signed``);
    ``–`` for missing values."""
    if _bad(v):
        return "–"
    if isinstance(v, int) and not pct:
        return f"{v:+d}" if signed else f"{v:,}"
    sign = "+" if signed else ""
    return f"{100 * v:{sign}.{max(0, digits - 2)}f}%" if pct else f"{v:{sign}.{digits}f}"


def ci(mean, lo, hi, digits: int = 2, pct: bool = False, signed: bool = False) -> str:
    """``mean [lo, hi]``, the one way fasbench prints an interval (findings, run tables, comparisons,
    studies); ``mean [–]`` when an interval was asked for but none exists (a missing or NaN bound: n too
    small for the level); ``mean`` alone when no interval was given (both bounds ``None``: a count, a
    single value); ``–`` when the mean is missing; a string (several values already formatted) is kept
    as it is."""
    if isinstance(mean, str):
        return mean
    if _bad(mean):
        return "–"
    if lo is None and hi is None:
        return num(mean, digits, pct, signed)
    if _bad(lo) or _bad(hi):
        return f"{num(mean, digits, pct, signed)} [–]"
    return f"{num(mean, digits, pct, signed)} [{num(lo, digits, pct, signed)}, {num(hi, digits, pct, signed)}]"


def ci_of(row: Mapping, key: str, digits: int = 2, pct: bool = False, signed: bool = False) -> str:
    """:func:`ci` of ``row[key]`` with ``row[key_lo]`` and ``row[key_hi]`` (absent bounds: no interval),
    the layout of every row of intervals (metrics' summaries, before/after tables, study totals)."""
    return ci(row[key], row.get(f"{key}_lo"), row.get(f"{key}_hi"), digits, pct, signed)


def paired_phrase(res: dict, digits: int = 3, alpha: float = 0.05) -> str:
    """``+0.244 [+0.161, +0.286]: differ at p < 0.05 (p = 0.0039, exact sign-flip, n = 9)`` or
    ``+0.244 [no 95% interval at n = 4]: no difference detectable with n = 4 (…)``."""
    d = ci(res.get("diff"), res.get("lo"), res.get("hi"), digits, signed=True)
    if not _bad(res.get("diff")) and (_bad(res.get("lo")) or _bad(res.get("hi"))):
        d = f"{num(res.get('diff'), digits, signed=True)} [no {res.get('level', 0.95):.0%} interval at n = {res.get('n', 0)}]"
    return f"{d}: {paired_words(res, alpha)}"


def paired_sentence(what: str, rows: Sequence[dict], name: str = "run", digits: int = 3, alpha: float = 0.05) -> str:
    """One sentence over several paired comparisons against one reference (e.g. the ``file_f2`` rows
    of ``compare_runs``): how many differ by :func:`fasbench.stats.metrics.paired_differs` (p < ``alpha`` AND
    the interval excludes 0), those with difference, interval, p and n, and the others with their n
    and p (and the smallest p their n allows, when that is what stopped them)."""
    rows = list(rows)
    sig = [r for r in rows if paired_differs(r, alpha)]
    rest = [r for r in rows if not paired_differs(r, alpha)]
    level = rows[0].get("level", 1 - alpha) if rows else 1 - alpha
    out = (
        f"{what}: {len(sig)} of {len(rows)} differ at p < {alpha:g} with a {level:.0%} interval excluding 0 "
        "(two-sided sign-flip test over the tasks each pair shares)"
    )
    if sig:
        out += ": " + "; ".join(
            f"{r[name]} {ci(r['diff'], r['lo'], r['hi'], digits, signed=True)} ({fmt_p(r['p'])}, n = {r['n']})"
            for r in sig
        )
    if rest:
        out += ". No difference detectable for " + "; ".join(
            f"{r[name]} ({fmt_p(r.get('p'))}, n = {r.get('n', 0)}"
            + (
                f", smallest attainable p = {r['p_min']:.3g}"
                if not _bad(r.get("p_min")) and r["p_min"] >= alpha
                else ""
            )
            + ")"
            for r in rest
        )
    return out + "."


def _resumed_parts(state, name: str = "") -> list[str]:
    pre = f"{name}: " if name else ""
    if isinstance(state, dict) and ("steps_resumed" in state or "steps_this_call" in state or "note" in state):
        done, this = int(state.get("steps_resumed") or 0), state.get("steps_this_call")
        if not done:
            return []
        if state.get("note"):
            return [pre + str(state["note"])]
        total = state.get("max_steps") or state.get("global_step")
        return [
            pre
            + f"resumed at step {done}"
            + (f" of {total}" if total else "")
            + (
                "; no step trained in this call (the model is the earlier call's)"
                if this == 0
                else f"; {this} steps trained in this call"
            )
        ]
    if isinstance(state, dict):
        return [p for k, v in state.items() for p in _resumed_parts(v, str(k))]
    if isinstance(state, bool) or state is None or (isinstance(state, float) and math.isnan(state)):
        return []
    if isinstance(state, (int, float)):
        return [pre + f"{int(state)} episodes from an earlier call"] if state else []
    return [pre + str(state)] if str(state).strip() else []


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


@dataclass
class Findings:
    """Findings of one notebook run: measured values (with intervals and n), seed values beside them,
    sentences, and caveats. Renders as Markdown (``markdown()``, or by displaying it)."""

    title: str = ""
    n: int | None = None  # the population the notebook measured (tasks, episodes, trajectories)
    unit: str = "tasks"  # what n counts
    level: float = 0.95  # the confidence level of the intervals passed in
    sentences: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    paired_tests: bool = False  # a sentence reports a paired test (the head then names the method)
    blocks: list[tuple[str, str]] = field(default_factory=list)  # ("item" | "text", Markdown), in order
    study_n: int | None = None  # the study's size: n below it is a smoke run (see :attr:`smoke`)
    smoke: bool | None = None  # None: FASBENCH_SHORT=1 or n < study_n (or :meth:`study_size`); shown in markdown()

    def __post_init__(self) -> None:
        self._small: list[str] = []  # why the run is below its study's size
        if self.study_n is not None and self.n is not None:
            self.study_size(self.n, self.study_n, self.unit)
        if self.smoke is None:
            self.smoke = os.environ.get("FASBENCH_SHORT") == "1"

    def study_size(self, n: int, study_n: int, unit: str = "tasks") -> Findings:
        """Mark the run as smoke-sized when ``n`` (e.g. the tasks drawn) is below ``study_n``, the study's
        size (for a notebook whose ``n`` counts something else, e.g. episodes)."""
        if n < study_n:
            self.smoke = True
            self._small.append(f"n = {n:,} {unit}, below the study size of {study_n:,}")
        return self

    def smoke_line(self) -> str:
        """The line every findings under smoke settings shows (empty otherwise): why, and what it means."""
        if not self.smoke:
            return ""
        why = (
            ["FASBENCH_SHORT=1 (the shortened parameter set)"] if os.environ.get("FASBENCH_SHORT") == "1" else []
        ) + self._small
        what = (
            "This run checks that the pipeline works; below the study size its intervals are too wide to support a claim."
            if self._small
            else "Parts of this notebook ran shortened: read each number with its n (`make run` runs the study sizes)."
        )
        return f"**{SMOKE_MARK}**: {'; '.join(why) or 'set by the notebook'}. {what}"

    def add(self, sentence: str) -> Findings:
        """A finding in words (built with f-strings from computed values): one bullet."""
        self.sentences.append(sentence)
        self.blocks.append(("item", sentence))
        return self

    def text(self, markdown: str) -> Findings:
        """A paragraph (or a sub-heading) of its own, in order among the bullets."""
        self.blocks.append(("text", markdown))
        return self

    def table(self, header: Sequence[str], rows: Sequence[Sequence], intro: str = "") -> Findings:
        """A table of a study's own columns (cells already formatted), after an optional sentence."""
        t = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
        t += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
        return self.text((intro + "\n\n" if intro else "") + "\n".join(t))

    def paired(self, what: str, res: dict, digits: int = 3, alpha: float = 0.05) -> Findings:
        """A paired difference in words that follow the test (:func:`paired_phrase`), always with n."""
        self.paired_tests = True
        return self.add(f"{what}: {paired_phrase(res, digits, alpha)}.")

    def compared(
        self, what: str, rows: Sequence[dict], name: str = "run", digits: int = 3, alpha: float = 0.05
    ) -> Findings:
        """Several paired comparisons against one reference in one sentence (:func:`paired_sentence`)."""
        self.paired_tests = True
        return self.add(paired_sentence(what, rows, name, digits, alpha))

    def metric(
        self,
        label: str,
        mean,
        lo=None,
        hi=None,
        n: int | None = None,
        digits: int = 2,
        pct: bool = False,
        signed: bool = False,
        seed=None,
        seed_source: str = "",
        seed_note: str = "",
    ) -> Findings:
        """A measured value with its interval and n, and optionally the published (seed) value."""
        ours = ci(mean, lo, hi, digits, pct, signed)
        self.rows.append(
            {
                "label": label,
                "ours": ours,
                "has_ci": not (_bad(mean) or _bad(lo) or _bad(hi)),
                "n": "–" if n is None else f"{n:,}",
                "seed": "–" if _bad(seed) else (num(seed, digits, pct, signed) if not isinstance(seed, str) else seed),
                "source": " ".join(x for x in (seed_source, seed_note) if x) or "–",
            }
        )
        return self

    def seed(
        self,
        label: str,
        ours,
        seed,
        source: str,
        n: int | None = None,
        lo=None,
        hi=None,
        digits: int = 2,
        pct: bool = False,
        note: str = "",
    ) -> Findings:
        """A published number beside ours (same as :meth:`metric` with a seed)."""
        return self.metric(label, ours, lo, hi, n, digits, pct, seed=seed, seed_source=source, seed_note=note)

    def resumed(self, what: str, state) -> Findings:
        """A line saying that ``what`` was (partly) read from an earlier call of its run rather than computed
        in this one; nothing when it was not. ``state``: a count of resumed episodes; a note
        (``rundir.resume_note``, the ``resumed`` column of ``runs_table``); a training state
        (``sft.train.read_state``, RL's summary: ``steps_resumed``, ``steps_this_call``, ``note``); or a
        mapping of names (policies, runs) to any of these."""
        parts = _resumed_parts(state)
        if parts:
            self.add(
                f"**Resumed, not computed in this run**: {what}: {'; '.join(parts)} (a new run name or an "
                "empty run folder computes it afresh)."
            )
        return self

    def caveat(self, text: str) -> Findings:
        """A limit of what was measured: the population, the corpus kind, CPU defaults vs full runs."""
        self.caveats.append(text)
        return self

    def markdown(self) -> str:
        head = "## What we found" + (f": {self.title}" if self.title else "")
        if self.n is not None:
            head += f"\n\n*Measured on n = {self.n:,} {self.unit}"
            if any(r["has_ci"] for r in self.rows) or any("[" in x for x in self.sentences):
                head += (
                    f"; intervals [lo, hi] are {self.level:.0%} intervals over {self.unit} (percentile bootstrap; "
                    f"Student t below {SMALL_N} {self.unit}, none for one)"
                )
            if self.paired_tests:
                head += (
                    "; paired differences: two-sided sign-flip test (exact up to 20 differing tasks) and its "
                    "exact interval (percentile bootstrap above 20 tasks)"
                )
            head += ".*"
        parts = [head] + ([self.smoke_line()] if self.smoke else [])
        last = None
        for kind, md in self.blocks:  # consecutive bullets make one list
            if kind == "item" and last == "item":
                parts[-1] += f"\n- {md}"
            else:
                parts.append(f"- {md}" if kind == "item" else md)
            last = kind
        if self.rows:
            t = ["| measure | ours: mean [CI] | n | seed value | seed source |", "|---|---|---|---|---|"]
            t += [
                f"| {_cell(r['label'])} | {_cell(r['ours'])} | {r['n']} | {_cell(r['seed'])} | {_cell(r['source'])} |"
                for r in self.rows
            ]
            parts.append("\n".join(t))
        if self.caveats:
            parts.append("**Caveats**\n\n" + "\n".join(f"- {c}" for c in self.caveats))
        return "\n\n".join(parts) + "\n"

    def _repr_markdown_(self) -> str:
        """What a notebook (and so the report) shows: :meth:`markdown` with no raw HTML in it (values in
        the sentences come from data: :func:`fasbench.base.markup.markdown_text`)."""
        return markdown_text(self.markdown())

    def __str__(self) -> str:
        return self.markdown()
