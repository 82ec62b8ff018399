"""Does delegating search pay? Per-trajectory measures of each hand-off arm on the counterfactual path
(issue 39 item 2), side by side with intervals.

Arms (one column group each, ``ARMS``):

- ``none``: the real trajectory as it ran (no subagent).
- ``citations``: the free-form hand-off (paths and ranges, ``fasbench.studies.handoff`` ``citations``). The
  main agent still has to read the cited code, so only a pre-edit call whose looks are all *search*
  looks (``search-hit`` / ``search-file``) and all covered is replaced; a covered display is read again.
- ``ids``: the ID-grounded hand-off: the ``citations`` rendering of a search run under the ``ids``
  report contract (``fasbench.tools.contract``: the searcher names IDs of ranges it was shown and
  fasbench writes the paths and ranges, so no handed-off line is unseen), replaced as ``citations``.
  Measured where the study has an ids run's hand-off for the trajectory (``ids_handoff``).
- ``code``: the hand-off with the cited code (``handoff.py``'s ``code`` rendering): every covered call is
  replaced (the ``strict`` rule of ``counterfactual.py``).

Measures per arm (hand-worked in tests/test_e2e_pays.py):

- ``reread_share``: of the handed-off lines (the report's cited ranges merged per file; a file cited
  without ranges has no line count and is left out), the share that a pre-edit read/search call the
  arm keeps showed the agent again (a file-level look, ``cat F``, re-reads every cited line of F); for
  ``none`` it is the share of the report's lines the agent read on its own.
- ``input``: the main model's input tokens, Σ over kept turns of (1 − w_t)·p'_t with
  p'_t = p_t + h − Σ_{s<t} w_s(c_s − r_s + o_s) (the hand-off of h tokens in every prompt).
- ``cache_share``: the share of those input tokens a prefix cache would serve: each prompt's tokens
  that equal the previous prompt's prefix. The chat is append-only, so that prefix is the whole previous
  prompt: cached_t = (1 − w_t)·p'_{t⁻} where t⁻ is the previous turn the arm keeps (the first prompt
  is uncached; a partly removed turn, 0 < w < 1, counts as kept: an approximation).
- ``turns_to_edit`` / ``tokens_to_edit``: turns, and prompt + completion tokens, before the first edit.

Per hand-off (``citations``: the free-form search run, ``ids``: the ids run; ``GROUNDING``):
``unseen_share``, the share of the cited lines never shown to the searcher before its report
(``scoring.process``'s ``cited_lines_unseen``; 0 by construction under ``ids``), ``file_f1`` and
``line_f1``, the report's file- and line-level F1 against the task's edited files and lines; compared ids − citations on the same tasks
(``arms_table(..., base="citations")``).

Resolution is the real run's (``resolved``): the counterfactual does not rerun the agent, so it cannot
change it (stated). The live path (``runner.py``) measures its own arms end to end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from fasbench.base.lines import merge_ranges, overlap, total
from fasbench.e2e.counterfactual import Handoff, TurnTokens, covered
from fasbench.e2e.looked import Look, call_looks
from fasbench.evaluation.runs import paired_diff
from fasbench.stats.metrics import mean_ci
from fasbench.trajectories.agent_paths import ROOT
from fasbench.trajectories.raw import shell_calls

ARMS = ("none", "citations", "ids", "code")
MEASURES = ("reread_share", "input", "cache_share", "turns_to_edit", "tokens_to_edit")
SEARCH_LOOKS = ("search-hit", "search-file")
RULE = {"citations": "citations", "ids": "citations", "code": "code"}  # how an arm's hand-off replaces calls
RENDERING = {"citations": "citations", "ids": "citations", "code": "code"}  # the hand-off's rendering (tokens)
GROUNDING = ("unseen_share", "file_f1", "line_f1")  # per hand-off: citations (the free run) and ids (the ids run)


def replaced_by(arm: str, looks: Sequence[Look], files: Mapping[str, Sequence[Sequence[int]]] | None) -> bool:
    """Whether ``arm``'s hand-off replaces a call with these looks (see the module doc)."""
    if arm == "none" or files is None or not looks:
        return False
    if RULE.get(arm, arm) == "citations" and any(lk.how not in SEARCH_LOOKS for lk in looks):
        return False
    return all(covered(lk, files) for lk in looks)


def handed_lines(files: Mapping[str, Sequence[Sequence[int]]]) -> dict[str, list[list[int]]]:
    """The handed-off lines per file: cited ranges merged; files cited without ranges left out."""
    out = {}
    for p, rs in files.items():
        m = merge_ranges(rs) if rs else []
        if m:
            out[p] = m
    return out


def reread_share(looks: Sequence[Look], files: Mapping[str, Sequence[Sequence[int]]]) -> float | None:
    """Share of the handed-off lines that ``looks`` show again; None when no line was handed off."""
    hand = handed_lines(files)
    n = sum(total(rs) for rs in hand.values())
    if not n:
        return None
    seen: dict[str, list] = {}
    for lk in looks:
        if lk.path in hand:
            seen.setdefault(lk.path, []).extend(lk.lines if lk.lines else hand[lk.path])
    return sum(overlap(hand[p], merge_ranges(rs)) for p, rs in seen.items()) / n


def arm_tokens(turns: Sequence[TurnTokens], w: Sequence[float], h: float, before: int) -> dict:
    """Input tokens, prefix-cache share and tokens/turns to the first edit (``before``: the number of
    turns before it) when turn t is removed by the weight ``w[t]`` and ``h`` hand-off tokens sit in every prompt."""
    dropped, prev, inp, cached, to_edit = 0.0, None, 0.0, 0.0, 0.0
    for i, (t, x) in enumerate(zip(turns, w)):
        p = t.p + h - dropped
        keep = 1.0 - x
        inp += keep * p
        if prev is not None:
            cached += keep * prev
        if keep > 0:
            prev = p
        if i < before:
            to_edit += keep * (p + t.c)
        dropped += x * (t.c - t.r + t.o)
    return {
        "input": inp,
        "cache_share": cached / inp if inp else None,
        "turns_to_edit": before - sum(w[:before]),
        "tokens_to_edit": to_edit,
    }


def arm_columns(
    turns: Sequence[TurnTokens],
    turn_ids: Sequence[int],
    first_edit: int,
    looks_by_call: Mapping[tuple[int, int], Sequence[Look]],
    weight: Mapping[tuple[int, int], float],
    handoff: Handoff | None,
    ids_handoff: Handoff | None = None,
) -> dict:
    """One trajectory's ``<arm>_<measure>`` columns (``none`` always; ``citations`` and ``code`` with a
    report, ``ids`` with ``ids_handoff``, the ids run's report on the same task) and the hand-offs'
    ``<arm>_<grounding>`` columns; the ``extra`` of :func:`fasbench.e2e.counterfactual.trajectory_row`."""
    before = sum(1 for t in turn_ids if t < first_edit)
    row = {}
    for arm in ARMS:
        h_arm = ids_handoff if arm == "ids" else handoff
        if arm != "none" and h_arm is None:
            continue
        files = h_arm.files if h_arm is not None else None
        if arm == "none":  # the agent's own reading of the free-form report's lines
            files = handoff.files if handoff is not None else None
        w = dict.fromkeys(turn_ids, 0.0)
        kept: list[Look] = []
        for key, lks in looks_by_call.items():
            if replaced_by(arm, lks, files):
                w[key[0]] += weight[key]
            else:
                kept.extend(lks)
        h = 0.0 if arm == "none" else float(h_arm.tokens[RENDERING[arm]])
        m = arm_tokens(turns, [w[t] for t in turn_ids], h, before)
        m["reread_share"] = reread_share(kept, files) if files is not None else None
        row.update({f"{arm}_{k}": v for k, v in m.items()})
    for arm, h_arm in (("citations", handoff), ("ids", ids_handoff)):
        if h_arm is not None:
            row.update({f"{arm}_{k}": v for k, v in grounding(h_arm).items()})
    return row


def grounding(h: Handoff) -> dict:
    """A hand-off's ``GROUNDING`` measures (None where its file did not record them)."""
    n, unseen = h.cited_lines, h.unseen_lines
    return {
        "unseen_share": unseen / n if n and unseen is not None else None,
        "file_f1": h.file_f1,
        "line_f1": h.line_f1,
    }


def arms_table(
    df: pl.DataFrame,
    by: Sequence[str] = ("dataset",),
    n_boot: int = 2000,
    arms: Sequence[str] = ARMS,
    measures: Sequence[str] = MEASURES,
    base: str = "none",
) -> pl.DataFrame:
    """Per group, arm and measure: the mean over trajectories with a report and its 95% interval
    (``metrics.mean_ci``), and the paired difference arm − ``base`` (``runs.paired_diff``); the
    hand-offs' grounding: ``arms_table(df, arms=("citations", "ids"), measures=GROUNDING, base="citations")``."""
    d = df.filter(pl.col("has_search")) if "has_search" in df.columns else df
    rows = []
    if d.height == 0 or not any(f"{a}_{m}" in d.columns for a in arms for m in measures):
        return pl.DataFrame()
    for key, g in d.group_by(list(by), maintain_order=True):
        for arm in arms:
            for m in measures:
                c = f"{arm}_{m}"
                if c not in g.columns:
                    continue
                vals = g.select(c).drop_nulls()[c].to_list()
                bounds = (0.0, 1.0) if m.endswith("share") else None
                mean, lo, hi = mean_ci(vals, n_boot, bounds=bounds) if vals else (None, None, None)
                r = {
                    **dict(zip(by, key)),
                    "arm": arm,
                    "measure": m,
                    "n": len(vals),
                    "mean": mean,
                    "lo": lo,
                    "hi": hi,
                    "diff": None,
                    "diff_lo": None,
                    "diff_hi": None,
                    "p": None,
                }
                if arm != base and f"{base}_{m}" in g.columns:
                    j = g.select(
                        pl.col(c).cast(pl.Float64).alias("a"), pl.col(f"{base}_{m}").cast(pl.Float64).alias("b")
                    ).drop_nulls()
                    if j.height:
                        pd = paired_diff(j["b"].to_list(), j["a"].to_list(), n_boot=n_boot)
                        r.update(diff=pd.get("diff"), diff_lo=pd.get("lo"), diff_hi=pd.get("hi"), p=pd.get("p"))
                rows.append(r)
    return pl.DataFrame(rows, infer_schema_length=None)


def live_measures(raw: dict, report: Mapping[str, Sequence[Sequence[int]]] | None, workdir: str = "") -> dict:
    """The live path's measures of one main-agent run (mini-swe-agent's trajectory dict ``raw``): the
    re-read share of the hand-off's cited lines over every shell call the agent made (``looked.call_looks``;
    the agent's ``workdir`` read as the trajectories' ``/testbed``; None without a report), input tokens (Σ prompt tokens of the endpoint's ``usage``) and the share a
    prefix cache would serve (each call's prompt up to the previous call's prompt length: append-only chat)."""
    prompts = []
    for m in raw.get("messages") or []:
        u = ((m.get("extra") or {}).get("response") or {}).get("usage") if isinstance(m, dict) else None
        if isinstance(u, dict):
            prompts.append(float(u.get("prompt_tokens") or 0))
    inp = sum(prompts)
    cached = sum(min(a, b) for a, b in zip(prompts, prompts[1:]))
    fix = (lambda x: x.replace(workdir, ROOT)) if workdir else (lambda x: x)  # noqa: E731
    looks = [lk for c in shell_calls(raw) for lk in call_looks(fix(c.command), fix(c.output))] if report else []
    return {
        "input_tokens": inp,
        "cache_share": cached / inp if inp else None,
        "reread_share": reread_share(looks, report) if report else None,
    }


#: the live records' measures compared per arm (``runner.run_live_arms``)
LIVE_MEASURES = ("reread_share", "input_tokens", "cache_share", "turns", "tokens", "handoff_tokens")


def live_arms_table(records: pl.DataFrame, n_boot: int = 2000, measures: Sequence[str] = LIVE_MEASURES) -> pl.DataFrame:
    """:func:`arms_table` of the live path: the records of ``runner.run_live_arms`` (one per task and arm)
    made one row per task with ``<arm>_<measure>`` columns; means with intervals per arm, arm − none paired
    over the tasks both finished."""
    if records.height == 0 or "arm" not in records.columns:
        return pl.DataFrame()
    arms = ["none", *[a for a in dict.fromkeys(records["arm"].to_list()) if a != "none"]]
    have = [m for m in measures if m in records.columns]
    wide = None
    for arm in arms:
        part = records.filter(pl.col("arm") == arm).select(
            "task_id", *[pl.col(m).cast(pl.Float64).alias(f"{arm}_{m}") for m in have]
        )
        wide = part if wide is None else wide.join(part, on="task_id", how="full", coalesce=True)
    wide = wide.with_columns(pl.lit("live").alias("path"))
    return arms_table(wide, ("path",), n_boot, arms, have)
