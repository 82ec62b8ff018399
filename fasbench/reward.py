"""Rewards: pure functions of (gold, report, turns) that return the value, its parts and a reason.

Formulas (see docs/design.md):
- Relace FAS: ``R = A · P`` with ``A2 = 5·P·R / (4·P + R)`` (F2 over edited files, PR-derived
  data) or ``A1 = 2·Ps·R / (Ps + R)`` (soft precision over viewed files, hard recall over edited
  files, agent-trace-derived data), and turn penalty ``P = clip((24 − n) / (24 − 4), 0, 1)``.
- FastContext, as released: ``1[n_cit ≥ 1] · (1 + 1[finish = stop] · (F0.5 − 0.1 · max(0, (n_pred − n_gt)
  / n_gt)) + 2·J)``, 0 for a failed episode, with J = the LLM judge's 0-10 score × 0.1 (fasbench.judge).
  Paths are compared as released: the workspace path the prompt showed (``/repo/``, the release's
  ``drop_prefix``) is stripped and the rest must equal a gold path (a bullet, a backtick or a leading
  ``/`` is a wrong path). ``fastcontext-lenient`` is the same formula over fasbench's looser reading
  (``parse_final_answer_lenient`` of the answer text, every path normalised): not the release's.
- F0.5 over files, as Cognition reports its searcher.

``root`` (a workspace directory) lets line ranges resolve against the files: ``[s, -1]`` ends at the
file's last line and every range is clipped to the file's length; without it they are clipped to
``fasbench.lines.LINE_CAP`` and ``line-f1`` says so in its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from fasbench.judge import citation_contents, query_message
from fasbench.lines import LINE_CAP, capped_ranges
from fasbench.metrics import fbeta, file_prf, line_prf, normalize_files, normalize_path
from fasbench.records import Gold, Report
from fasbench.tools.fastcontext import parse_final_answer_lenient
from fasbench.tools.fastcontext_published import WORK_DIR


@dataclass
class Score:
    value: float
    parts: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict:
        return {"score": self.value, "parts": self.parts, "reason": self.reason}


def turn_penalty(n: int | None, free: int = 4, zero: int = 24) -> float:
    """Relace's turn penalty P = clip((zero − n) / (zero − free), 0, 1): 1 for n ≤ free, 0 for n ≥ zero."""
    if n is None:
        return 1.0
    return min(1.0, max(0.0, (zero - n) / (zero - free)))


def _files(report: Report | None, root: str | None) -> dict[str, list]:
    return normalize_files(report.files, root) if report is not None else {}


#: The RL miniature's turn penalty (free, zero) (profiles sft_mini / rl_mini, notebook 06): Relace's
#: P = clip((zero − n)/(zero − free), 0, 1) rescaled from its 24-turn episodes to 6-symbol tasks, where
#: the parallel optimum is 2 turns (free: no penalty, as Relace's n ≤ 4) and one call a turn takes 7
#: (paid 7/12 = 0.58, between Relace's starts: 0.2 at 20 turns, 0.7 at 10); with zero = 14 a
#: one-call-a-turn searcher that stops before its last symbols is never paid more than one that finishes.
MINI_TURNS = (2, 14)


def relace_f2(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None,
              free: int = 4, zero: int = 24) -> Score:
    """Relace A2 (F2 over edited files) times the turn penalty (``free``/``zero``: its n ≤ 4 and 24)."""
    pred = _files(report, root)
    prf = file_prf(pred, gold.edited, root)
    a = fbeta(prf.precision, prf.recall, 2.0)
    p = turn_penalty(turns, free, zero)
    reason = (f"{prf.n_hit}/{prf.n_gold} edited files found among {prf.n_pred} cited; "
              f"F2={a:.3f}; turns={turns if turns is not None else 'n/a'} -> penalty {p:.2f}")
    if report is None:
        reason = "no report; " + reason
    return Score(a * p, {"accuracy": a, "precision": prf.precision, "recall": prf.recall, "turn_penalty": p}, reason)


def relace_hybrid(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None) -> Score:
    """Relace A1: soft precision against viewed files (a cited file counts when the reference
    agent viewed or edited it), hard recall against edited files; times the turn penalty.
    Without viewed gold it falls back to precision against edited files, and says so."""
    pred = _files(report, root)
    hard = file_prf(pred, gold.edited, root)
    soft_set = dict.fromkeys(list(gold.edited) + sorted(gold.viewed or ()), [])
    soft = file_prf(pred, soft_set, root)
    ps, r = soft.precision, hard.recall
    a = 2 * ps * r / (ps + r) if ps + r > 0 else 0.0
    p = turn_penalty(turns)
    note = "" if gold.viewed is not None else "gold has no viewed files: soft precision = precision vs edited; "
    reason = (f"{note}soft precision {soft.n_hit}/{soft.n_pred}, recall {hard.n_hit}/{hard.n_gold}; "
              f"A1={a:.3f}; penalty {p:.2f}")
    return Score(a * p, {"accuracy": a, "soft_precision": ps, "recall": r, "turn_penalty": p}, reason)


def _status(finish_reason: str | None) -> str:
    """slime's sample status from the last completion's finish reason, as generate_with_fastcontext.py maps it."""
    return {"stop": "completed", "length": "truncated", "abort": "aborted"}.get(finish_reason or "", "failed")


def finish_reason(trace) -> str:
    """The release's finish reason for a fasbench episode: ``stop`` when the model answered (a report
    was parsed), ``tool_calls`` when the turn limit came while it was still calling tools (the
    release's loop ends there; that status is FAILED), ``error`` when the policy failed."""
    if trace.stop_reason in ("reported", "no_answer"):  # no_answer: the model stopped without an answer block
        return "stop"
    return "error" if trace.stop_reason == "policy_error" or trace.error else "tool_calls"


def _released_files(cited: dict, gold: Gold) -> tuple[float, float, int, int, int]:
    """``calculate_score_file`` @5fb8c1d on path sets: (precision, recall, n_pred, n_gold, n_hit),
    the cited paths with the shown workspace (``drop_prefix``) stripped and compared exactly."""
    pre = WORK_DIR.rstrip("/") + "/"
    pred = {p[len(pre):] if p.startswith(pre) else p for p in cited}
    true = set(gold.edited)
    hit = len(pred & true)
    return (hit / len(pred) if pred else 0.0), (hit / len(true) if true else 0.0), len(pred), len(true), hit


def fastcontext(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None,
                judge=None, query: str | None = None, finish_reason: str | None = "stop",
                lenient: bool = False, answer: str | None = None) -> Score:
    """FastContext's RL reward as released (``generate_with_fastcontext.py`` ``reward_func``, scores
    from ``utils.py``):

    - a FAILED episode (finish reason other than stop / length / abort) scores 0 outright;
    - no citation (no ``path:N`` / ``path:S-E`` line in the answer) scores 0;
    - otherwise ``1 + score_file + 2·quality``, where ``score_file`` = F0.5 over cited vs gold files
      − 0.1·max(0, (n_cited − n_gold)/n_gold) (``calculate_explore_score``) counts only when the
      episode finished with ``stop`` (truncated/aborted → 0), and ``quality`` = the judge's 0-10 score
      × 0.1, given the query and the contents of the cited lines (:mod:`fasbench.judge`).

    ``judge`` is a :class:`fasbench.judge.Judge` (or None: the quality term is 0 and the reason says
    so); ``query`` the task's query (needed by a judge); ``root`` the workspace the citations are read
    from. Deviations: a gold with no file gives no over-citation term (the release divides by 0).

    ``lenient`` (the ``fastcontext-lenient`` reward): ``answer`` (the answer text, when given) is
    re-read with ``parse_final_answer_lenient`` and paths are normalised (fasbench's older reading)."""
    if lenient and answer is not None:
        report = parse_final_answer_lenient(answer)
    parts = {"cited": 0.0, "score_file": 0.0, "f0.5": 0.0, "over_penalty": 0.0, "quality": 0.0,
             "judged": 0.0}
    status = _status(finish_reason)
    if status == "failed":
        return Score(0.0, parts, f"episode failed (finish reason {finish_reason!r}): 0 outright")
    cited = {p: rs for p, rs in (report.files.items() if report is not None else ()) if rs}
    n_cit = sum(len(rs) for rs in cited.values())
    if n_cit < 1:
        return Score(0.0, parts, "no citation with a line range in the answer: 0"
                     + ("" if report is not None else " (no answer)"))
    parts["cited"] = 1.0
    if lenient:
        prf = file_prf(normalize_files(cited, root), gold.edited, root)
        prec, rec, n_pred, n_gold, n_hit = prf.precision, prf.recall, prf.n_pred, prf.n_gold, prf.n_hit
    else:
        prec, rec, n_pred, n_gold, n_hit = _released_files(cited, gold)
    f05 = fbeta(prec, rec, 0.5)
    over = 0.1 * max(0.0, (n_pred - n_gold) / n_gold) if n_gold else 0.0
    parts["f0.5"], parts["over_penalty"] = f05, over
    if status == "completed":
        parts["score_file"] = f05 - over
        file_note = f"score_file = F0.5 {f05:.3f} - over-citation {over:.3f}"
    else:
        file_note = f"score_file 0 (finish reason {finish_reason!r}, not 'stop')"
    if judge is None:
        judge_note = "no judge given: quality 0 (pass --judge openai:model=NAME,base_url=URL)"
    elif not query:
        judge_note = "no query given to the judge: quality 0"
    else:
        v = judge.judge(query_message(query), citation_contents(cited, root, released=not lenient))
        parts["quality"], parts["judged"] = v.quality, 1.0
        judge_note = f"judge {v.quality * 10:.0f}/10" + (f" ({v.reason})" if v.reason else "")
    value = 1.0 + parts["score_file"] + 2.0 * parts["quality"]
    reason = (f"{n_cit} citations in {n_pred} files ({n_hit}/{n_gold} gold files); {file_note}; "
              f"{judge_note}; 1 + {parts['score_file']:.3f} + 2·{parts['quality']:.2f} = {value:.3f}")
    return Score(value, parts, reason)


def judge_requests(items) -> list[tuple[str, str]]:
    """The (query message, cited contents) pairs the ``fastcontext`` reward will send the judge for
    ``items`` = (report, root, query, finish reason) tuples, so that a caller can have them judged
    concurrently first (``Judge.score_many``); episodes the reward scores 0 are left out. Give the
    query as :func:`episode_query` returns it."""
    out = []
    for report, root, query, fr in items:
        cited = {p: rs for p, rs in (report.files.items() if report is not None else ()) if rs}
        if cited and query and _status(fr) != "failed":
            out.append((query_message(query), citation_contents(cited, root, released=True)))
    return out


def episode_query(trace, query: str | None) -> str | None:
    """The query the episode's explorer was given (``trace.meta["query"]``, a FastContext generated
    query), else ``query`` (the task's): what the judge is asked about, as the release asks it about
    the rollout's own ``<query>`` message."""
    q = (trace.meta or {}).get("query") if trace is not None else None
    return q if isinstance(q, str) and q else query


def _answer_text(trace) -> str | None:
    """The text of the episode's last reply (the one a FastContext answer is read from)."""
    return trace.turns[-1].text if trace is not None and trace.turns else None


def episode_kwargs(reward: str, trace, query: str | None = None, judge=None) -> dict:
    """The keyword arguments a reward takes from the episode itself (FastContext's: the finish
    reason, the query the explorer was given and the judge; the lenient one also the answer text);
    ``{}`` for the others."""
    if reward not in ("fastcontext", "fastcontext-lenient"):
        return {}
    kw = {"finish_reason": finish_reason(trace), "query": episode_query(trace, query), "judge": judge}
    if reward == "fastcontext-lenient":
        kw["answer"] = _answer_text(trace) if trace is not None and trace.stop_reason in ("reported", "no_answer") \
            else None
    return kw


def fastcontext_lenient(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None,
                        judge=None, query: str | None = None, finish_reason: str | None = "stop",
                        answer: str | None = None) -> Score:
    """:func:`fastcontext` over fasbench's looser answer reading (not the release's; see there)."""
    return fastcontext(gold, report, turns, root, judge=judge, query=query, finish_reason=finish_reason,
                       lenient=True, answer=answer)


def f05(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None) -> Score:
    """File-level F0.5 (precision-weighted, as Cognition reports)."""
    prf = file_prf(_files(report, root), gold.edited, root)
    v = prf.f(0.5)
    return Score(v, {"precision": prf.precision, "recall": prf.recall}, f"F0.5={v:.3f}")


def file_f1(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None) -> Score:
    prf = file_prf(_files(report, root), gold.edited, root)
    v = prf.f(1.0)
    return Score(v, {"precision": prf.precision, "recall": prf.recall}, f"file F1={v:.3f}")


def line_f1(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None) -> Score:
    """Line-level F1 over (path, line) pairs against the edited-line gold."""
    prf = line_prf(_files(report, root), gold.edited, root)
    v = prf.f(1.0)
    reason = f"{prf.n_hit} of {prf.n_gold} gold lines among {prf.n_pred} cited; F1={v:.3f}"
    capped = capped_ranges(report.files, root, lambda p: normalize_path(p, root)) if report is not None else 0
    if capped:
        reason += (f"; note: {capped} range(s) end at -1 (end of file) or past line {LINE_CAP} in files of "
                   f"unknown length (no workspace root, or the file is not in it): counted up to line "
                   f"{LINE_CAP}; give the workspace root (--root) to resolve them")
    return Score(v, {"precision": prf.precision, "recall": prf.recall}, reason)


def relace_mini(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None) -> Score:
    """Relace's A2 reward with the turn penalty of the RL miniature (:data:`MINI_TURNS`)."""
    return relace_f2(gold, report, turns, root, *MINI_TURNS)


def relace(gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None) -> Score:
    """Relace's reward by data source: hybrid A1 for agent-trace gold, F2 otherwise."""
    if gold.source == "agent-trace" and gold.viewed is not None:
        return relace_hybrid(gold, report, turns, root)
    return relace_f2(gold, report, turns, root)


REWARDS: dict[str, Callable[..., Score]] = {
    "relace": relace,
    "relace-f2": relace_f2,
    "relace-hybrid": relace_hybrid,
    "relace-mini": relace_mini,
    "fastcontext": fastcontext,
    "fastcontext-lenient": fastcontext_lenient,
    "f0.5": f05,
    "file-f1": file_f1,
    "line-f1": line_f1,
}


def score_report(name: str, gold: Gold, report: Report | None, turns: int | None = None,
                 root: str | None = None, **kw) -> Score:
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(REWARDS)}")
    return REWARDS[name](gold, report, turns, root, **kw)


def score_batch(name: str, golds: Sequence[Gold], reports: Sequence[Report | None],
                turns: Sequence[int | None] | None = None, **kw) -> list[Score]:
    """Score many reports at once (the batched form TRL reward functions use)."""
    if len(golds) != len(reports):
        raise ValueError(f"{len(golds)} golds for {len(reports)} reports")
    ts = list(turns) if turns is not None else [None] * len(golds)
    return [score_report(name, g, r, t, **kw) for g, r, t in zip(golds, reports, ts)]
