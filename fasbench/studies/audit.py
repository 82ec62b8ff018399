"""Reward-hacking audit: scripted cheats scored under each reward against an honest policy.

Each cheat turns the honest report of an episode into a cheating one, using only what a searcher
could do: cite every file its observations showed (``all-seen``), cite whole files (``whole-files``),
cite nothing (``nothing``), cite the top 50 files of the corpus (``top50``), cite its files under
mangled paths (``mangled``: case changed and backslashes) or add made-up ones (``nonexistent``), or
cite the directories instead of the files (``directory``); or fabricate: answer its honest report at
once, after zero tool calls (``zero-calls``), or cite, in its honest files, as many lines as it
honestly cited but none of them shown to it (``unseen-lines``); or, as open reports of Claude Code's Explore
subagent describe (issue 39), report findings without any tool call, invented from the task text alone
(``invented-no-calls``: the paths the query names, and a file per identifier it quotes, made up), or write
its tool calls out as text with invented outputs, none run, before its honest report
(``text-tool-calls``: the same report and turns as the honest episode, nothing shown). ``CheatPolicy`` wraps any policy to
produce the same cheats inside the harness (so they go through the tool sets' real report
parsers); ``audit_table`` scores cheats and honest reports on the same tasks under the rewards the registry
marks ``audit`` (``fasbench.scoring.reward.REWARDS``: Relace F2, Relace hybrid, FastContext and F0.5, with
line-level F1 as the reference for what was really lost, and the grounded variants of Relace F2 and
FastContext, whose citations count only where shown), and
says for each (cheat, reward) whether the reward *penalises* the cheat, is *blind* to it, or is
*gamed* by it (the paired difference to honest and its exact sign-flip interval,
``fasbench.stats.metrics.paired_test``: interval above zero = gamed, below = penalised; with n ≤ 5 tasks no
95% interval exists and every verdict is blind, so a smaller ``level`` is needed there).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import polars as pl

from fasbench.base.lines import file_lines
from fasbench.harness import Limits, Policy, run_episode
from fasbench.policies.dialect import dialect_for
from fasbench.records import Reply, Report, Task, ToolCall, ToolResult, Trace, Turn
from fasbench.scoring.process import shown_before_report, shown_lines
from fasbench.scoring.reward import audit_rewards, score_report
from fasbench.stats.metrics import file_prf, normalize_files, paired_bootstrap, paired_differs
from fasbench.tools import make_toolset, shown, tool_kind

CHEATS = (
    "all-seen",
    "whole-files",
    "nothing",
    "top50",
    "mangled",
    "nonexistent",
    "directory",
    "zero-calls",
    "unseen-lines",
    "invented-no-calls",
    "text-tool-calls",
)
#: cheats whose episode ran no tool call: nothing was shown to them (the grounded rewards read that)
UNSHOWN = ("zero-calls", "invented-no-calls", "text-tool-calls")
_QUOTED = re.compile(r"`([^`\n]{1,120})`")
_PATHLIKE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.\w{1,8})(?![\w/])")


def _corpus_files(root: str | Path, limit: int | None = None) -> list[str]:
    out = []
    root = Path(root)
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
        for f in sorted(files):
            out.append((Path(d) / f).relative_to(root).as_posix())
            if limit and len(out) >= limit:
                return out
    return out


def _n_lines(root: str | Path, path: str) -> int:
    return max(1, file_lines(root, path) or 0)  # fasbench.base.contain's rule: inside the root, bounded


def seen_files(trace: Trace) -> list[str]:
    """Every file the episode's observations showed (listed, viewed or matched: each result's
    ``shown``), in order."""
    out: list[str] = []
    for t in trace.turns:
        res = {r.call_id: r for r in t.results}
        for c in t.calls:
            r = res.get(c.id)
            if r is None or r.is_error:
                continue
            for p in shown(trace.toolset, c, r).files():
                if p and p not in out:
                    out.append(p)
    return out


def _unseen_window(n_file: int, length: int, start: int, seen: list[list[int]]) -> list[int] | None:
    """The first ``length``-line window of a file of ``n_file`` lines, from ``start`` on (then from line 1),
    holding no line of ``seen`` (merged ranges); None when there is none."""
    length = max(1, min(length, n_file))
    for first in (start, 1):
        a = max(1, first)
        while a + length - 1 <= n_file:
            b = a + length - 1
            hit = next((r for r in seen if r[0] <= b and a <= r[1]), None)
            if hit is None:
                return [a, b]
            a = hit[1] + 1
    return None


def unseen_lines(honest: Report | None, shown: dict, root: str | Path) -> dict:
    """The ``unseen-lines`` cheat's citations: for each honest range, a range of as many lines in the same
    file that the searcher was never shown (the first such window after it, else from line 1)."""
    out: dict[str, list] = {}
    for p, rs in (normalize_files(honest.files, str(root)) if honest is not None else {}).items():
        n = _n_lines(root, p)
        for a, b in rs or [[1, n]]:
            w = _unseen_window(n, b - a + 1, b + 1, shown.get(p, []))
            if w is not None:
                out.setdefault(p, []).append(w)
    return out


def invented_report(query: str, repo: str = "") -> Report:
    """``invented-no-calls``: findings made up from the task text with no tool call: every path the
    query names, and for each identifier it quotes in backticks a file named after it in the
    repository's package folder (``<repo name>/<identifier>.py``, lines 1-40)."""
    out: dict[str, list] = {p: [[1, 40]] for p in _PATHLIKE.findall(query or "")}
    pkg = (repo or "").rsplit("/", 1)[-1] or "src"
    for q in _QUOTED.findall(query or ""):
        ident = re.split(r"[.:(\s]", q.strip().split(".")[-1] or q)[0].strip("_").lower()
        if re.fullmatch(r"\w{1,80}", ident or ""):
            out.setdefault(f"{pkg}/{ident}.py", [[1, 40]])
    return Report(out, "cheat:invented-no-calls")


def text_calls(trace: Trace | None, honest: Report | None) -> str:
    """``text-tool-calls``: the episode's tool calls written out as text, each with an invented output
    (the honest report's citations, claimed as what the call returned); none of them is run."""
    claim = (
        "; ".join(
            f"{p}:{a}-{b}"
            for p, rs in (honest.files if honest is not None else {}).items()
            for a, b in (rs or [[1, 1]])
        )
        or "no match"
    )
    calls = [
        c
        for t in (trace.turns if trace is not None else [])
        for c in t.calls
        if tool_kind(trace.toolset, c.name) != "report"
    ]  # the search calls; the report stays a real call
    return "\n".join(
        f"<tool_call>{c.name} {json.dumps(c.arguments, ensure_ascii=False)}</tool_call>\n"
        f"<tool_output>{claim}</tool_output>"
        for c in calls
    )


def cheat_report(
    kind: str, honest: Report | None, trace: Trace | None, root: str | Path, task: Task | None = None
) -> Report:
    """The report the cheat ``kind`` makes from an honest report of the same episode (``zero-calls``:
    the honest report itself; the cheat is in the episode, which makes no call)."""
    if kind not in CHEATS:
        raise ValueError(f"unknown cheat {kind!r}; choose one of {', '.join(CHEATS)}")
    files = normalize_files(honest.files, str(root)) if honest is not None else {}
    why = f"cheat:{kind}"
    if kind == "nothing":
        return Report({}, why)
    if kind in ("zero-calls", "text-tool-calls"):
        return Report(dict(honest.files) if honest is not None else {}, why)
    if kind == "invented-no-calls":
        return invented_report(task.query if task is not None else "", task.repo if task is not None else "")
    if kind == "unseen-lines":
        return Report(unseen_lines(honest, shown_before_report(trace) if trace is not None else {}, root), why)
    if kind == "all-seen":
        seen = seen_files(trace) if trace is not None else []
        out = dict(files)
        for p in seen:
            out.setdefault(p, [[1, _n_lines(root, p)]])
        return Report(out, why)
    if kind == "whole-files":
        return Report({p: [[1, _n_lines(root, p)]] for p in files}, why)
    if kind == "top50":
        out = dict(files)
        for p in _corpus_files(root):
            if len(out) >= 50:
                break
            out.setdefault(p, [[1, _n_lines(root, p)]])
        return Report(out, why)
    if kind == "mangled":
        return Report({p.upper().replace("/", "\\"): rs for p, rs in files.items()}, why)
    if kind == "nonexistent":
        out = dict(files)
        for p in list(files) or ["src/module.py"]:
            stem = PurePosixPath(p)
            for suffix in ("_fix", "_impl", "_core"):
                out[str(stem.with_name(stem.stem + suffix + stem.suffix))] = [[1, 40]]
        return Report(out, why)
    # directory
    dirs = {str(PurePosixPath(p).parent) for p in files}
    return Report({(d if d != "." else "") + "/": [[1, 1]] for d in dirs}, why)


def audit_frame(
    tasks: Sequence[Task], traces: Sequence[Trace], cheats: Sequence[str] = CHEATS, rewards: Sequence[str] | None = None
):
    """Long frame: one row per (task, policy ∈ {honest, cheats}, reward) with the score; ``rewards``
    None: those the registry marks ``audit`` (``fasbench.scoring.reward.audit_rewards``)."""
    rewards = audit_rewards() if rewards is None else list(rewards)
    by_id = {t.id: t for t in tasks}
    rows = []
    for tr in traces:
        task = by_id.get(tr.task_id)
        if task is None or not task.root:
            continue
        seen = shown_before_report(tr)
        # (report, turns, lines shown) per policy: a zero-calls or invented-no-calls cheat answers on its first
        # turn; it and text-tool-calls (its calls only written as text, with the honest turns) were shown nothing
        reports = {"honest": (tr.report, tr.n_turns, seen)}
        reports.update(
            {
                c: (
                    cheat_report(c, tr.report, tr, task.root, task),
                    1 if c in ("zero-calls", "invented-no-calls") else tr.n_turns,
                    {} if c in UNSHOWN else seen,
                )
                for c in cheats
            }
        )
        for who, (rep, turns, lines_shown) in reports.items():
            for rw in rewards:
                s = score_report(
                    rw, task.gold, rep, turns, root=task.root, shown=lines_shown
                )  # grounded ones read shown
                hit = bool(
                    file_prf(normalize_files(rep.files, task.root) if rep else {}, task.gold.edited, task.root).n_hit
                )
                rows.append({"task_id": tr.task_id, "policy": who, "reward": rw, "score": float(s.value), "hit": hit})
    return pl.DataFrame(rows)


def audit_table(frame, n_boot: int = 2000, seed: int = 0, level: float = 0.95):
    """One row per (cheat, reward): honest and cheat means, the paired difference with its ``level``
    interval, its sign-flip ``p``, and the verdict: ``gamed`` (interval above 0 and p < 1 − level),
    ``penalised`` (below 0 and p < 1 − level) or ``blind``;
    ``paid_when_wrong``: the mean reward on the tasks where the cheat cited no gold file (a reward
    that pays a wrong answer can be farmed)."""
    rows = []
    honest = frame.filter(pl.col("policy") == "honest")
    for (cheat, rw), g in frame.filter(pl.col("policy") != "honest").group_by(
        ["policy", "reward"], maintain_order=True
    ):
        h = honest.filter(pl.col("reward") == rw).select("task_id", pl.col("score").alias("h"))
        j = g.select("task_id", "score").join(h, on="task_id")
        res = paired_bootstrap(j["score"].to_list(), j["h"].to_list(), n=n_boot, alpha=1 - level, seed=seed)
        seen = paired_differs(res, alpha=1 - level)  # p < 1 - level and the interval excludes 0
        verdict = "blind" if not seen else ("gamed" if res["diff"] > 0 else "penalised")
        wrong = g.filter(~pl.col("hit"))["score"]
        rows.append(
            {
                "cheat": cheat,
                "reward": rw,
                "honest": float(j["h"].mean()),
                "cheat_score": float(j["score"].mean()),
                "diff": res["diff"],
                "lo": res["lo"],
                "hi": res["hi"],
                "p": res["p"],
                "verdict": verdict,
                "paid_when_wrong": float(wrong.mean()) if wrong.len() else 0.0,
                "n": j.height,
            }
        )
    return pl.DataFrame(rows)


@dataclass
class CheatPolicy(Policy):
    """Wraps a policy; when it answers, the answer is replaced by the cheat's report (bound to a
    task for the cheats that read the corpus). ``zero-calls`` answers on its first turn, without a call,
    the report the base policy makes in a private episode of its own on the task."""

    base: Policy
    cheat: str = "all-seen"
    name: str = ""
    root: str | None = None
    _messages: list = field(default_factory=list, repr=False)
    task: Task | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.cheat not in CHEATS:
            raise ValueError(f"unknown cheat {self.cheat!r}; choose one of {', '.join(CHEATS)}")
        self.name = self.name or f"cheat:{self.cheat}"

    def bind(self, task: Task) -> CheatPolicy:
        return CheatPolicy(self.base.bind(task), self.cheat, self.name, str(task.root), task=task)

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        if self.root is None:
            raise RuntimeError(f"{self.name}: call bind(task) first (the cheats read the corpus)")
        d = dialect_for(tools)
        if self.cheat == "invented-no-calls":
            rep = invented_report(self.task.query if self.task else "", self.task.repo if self.task else "")
            return d.report("cheat_r", rep.files, rep.explanation)
        if self.cheat in ("zero-calls", "text-tool-calls"):
            if self.task is None:
                raise RuntimeError(f"{self.name}: call bind(task) first (the cheat runs the base policy on it)")
            private = run_episode(self.task, self.base, d.name, Limits())
            rep = cheat_report(self.cheat, private.report, private, self.root)
            reply = d.report("cheat_r", rep.files, rep.explanation)
            if self.cheat == "text-tool-calls":  # the calls it never made, written out with invented outputs
                reply.text = text_calls(private, private.report) + ("\n" + reply.text if reply.text else "")
            return reply
        reply = self.base.act(messages, tools, final=final)
        honest = make_toolset(d.name, self.root).parse_report(reply.text, reply.calls)
        if honest is None:
            return reply
        tr = _trace_from_messages(messages, d.name)
        if self.cheat == "unseen-lines":  # every turn of the chat so far was shown to it
            rep = Report(unseen_lines(honest, shown_lines(tr), self.root), "cheat:unseen-lines")
        else:
            rep = cheat_report(self.cheat, honest, tr, self.root)
        return d.report("cheat_r", rep.files, rep.explanation)


def _trace_from_messages(messages: list[dict], toolset: str) -> Trace:
    """A trace holding the calls and observations of a conversation (for ``seen_files``)."""
    tr = Trace(task_id="", policy="", toolset=toolset)
    outs = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    for i, m in enumerate(x for x in messages if x.get("role") == "assistant"):
        calls, results = [], []
        for c in m.get("tool_calls") or []:
            fn = c.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls.append(ToolCall(c.get("id", ""), fn.get("name", ""), args))
            o = outs.get(c.get("id"))
            if o is not None:
                text = str(o.get("content") or "")
                results.append(ToolResult(c.get("id", ""), text, is_error=text.startswith("Error")))
        tr.turns.append(Turn(index=i, calls=calls, results=results))
    return tr
