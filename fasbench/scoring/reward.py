"""Rewards: pure functions of an episode that return the value, its parts and a reason.

Every reward has the one signature ``(gold, report, *, turns=None, root=None, trace=None, query=None,
judge=None, **_) -> Score`` and takes from the episode what it needs (Relace's the turn count,
FastContext's the finish reason, the query and the judge); :data:`REWARDS` is the one registry, name →
:class:`Reward` (the function and whether an LLM judge gives one of its terms). :func:`score_episode`
scores one episode (a Trace and its Task) under a reward by name: the episode table
(``fasbench.evaluation.episodes``), the RL reward function (``fasbench.rl.episode_reward``) and the golden traces call it;
:func:`score_report` scores a bare report (``fasbench score``, best-of-N, SFT filtering). The file
precision/recall of a report is :func:`report_files_prf`, the one computation the rewards and the
episode table's ``file_*`` columns share.

Formulas (see docs/design.md):
- Relace FAS: ``R = A · P`` with ``A2 = 5·P·R / (4·P + R)`` (F2 over edited files, PR-derived
  data) or ``A1 = 2·Ps·R / (Ps + R)`` (soft precision over viewed files, hard recall over edited
  files, agent-trace-derived data), and turn penalty ``P = clip((24 − n) / (24 − 4), 0, 1)``.
- FastContext, as released: ``1[n_cit ≥ 1] · (1 + 1[finish = stop] · (F0.5 − 0.1 · max(0, (n_pred − n_gt)
  / n_gt)) + 2·J)``, 0 for a failed episode, with J = the LLM judge's 0-10 score × 0.1 (fasbench.scoring.judge).
  Paths are compared as released: the workspace path the prompt showed (``/repo/``, the release's
  ``drop_prefix``) is stripped and the rest must equal a gold path (a bullet, a backtick or a leading
  ``/`` is a wrong path). ``fastcontext-lenient`` is the same formula over fasbench's looser reading
  (``parse_final_answer_lenient`` of the answer text, every path normalised): not the release's.
- F0.5 over files, as Cognition reports its searcher.
- ``grounded-NAME`` for every reward NAME: fasbench's own, not published. The report's citations count only
  where the searcher was shown them (``fasbench.scoring.process.ground_report``: each cited file keeps the cited
  lines a call showed before the report; a file with none is dropped), then reward NAME scores what is
  left. It needs the episode's observations (from its ``trace``, or ``shown=``).

``root`` (a workspace directory) lets line ranges resolve against the files: ``[s, -1]`` ends at the
file's last line and every range is clipped to the file's length; without it they are clipped to
``fasbench.base.lines.LINE_CAP`` and ``line-f1`` says so in its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fasbench.base.lines import LINE_CAP, capped_ranges
from fasbench.records import Gold, Report
from fasbench.records.fastcontext_answer import WORK_DIR, parse_final_answer_lenient
from fasbench.scoring.judge import citation_contents, query_message, released_citations
from fasbench.scoring.process import ground_report, shown_before_report
from fasbench.stats.metrics import (
    NONNEGATIVE,
    PRF,
    UNIT,
    Bounds,
    fbeta,
    file_prf,
    line_prf,
    normalize_files,
    normalize_path,
)


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


def report_files_prf(gold: Gold, report: Report | None, root: str | None = None) -> PRF:
    """File precision/recall of the report's cited files against the edited files: the rewards' file
    terms and the episode table's ``file_*`` columns (one computation; paths normalised as
    :func:`fasbench.stats.metrics.normalize_path`)."""
    return file_prf(_files(report, root), gold.edited, root)


def report_lines_prf(gold: Gold, report: Report | None, root: str | None = None) -> PRF:
    """Line precision/recall over (path, line) pairs against the edited lines (``line-f1``, the episode
    table's ``line_*`` columns)."""
    return line_prf(_files(report, root), gold.edited, root)


#: The RL miniature's turn penalty (free, zero) (profiles sft_mini / rl_mini, notebook 06): Relace's
#: P = clip((zero − n)/(zero − free), 0, 1) rescaled from its 24-turn episodes to 6-symbol tasks, where
#: the parallel optimum is 2 turns (free: no penalty, as Relace's n ≤ 4) and one call a turn takes 7
#: (paid 7/12 = 0.58, between Relace's starts: 0.2 at 20 turns, 0.7 at 10); with zero = 14 a
#: one-call-a-turn searcher that stops before its last symbols is never paid more than one that finishes.
MINI_TURNS = (2, 14)

#: The same rescaling for 3-symbol tasks (reward ``relace-mini-k3``, notebook 06 since issue 35): the
#: parallel optimum is 2 turns (free) and one call a turn takes 4, paid (6 − 4)/(6 − 2) = 0.5, between
#: Relace's published starts (0.2 at 20 turns, 0.7 at 10 under P = clip((24 − n)/(24 − 4), 0, 1)).
MINI3_TURNS = (2, 6)


def relace_f2(
    gold: Gold,
    report: Report | None,
    *,
    turns: int | None = None,
    root: str | None = None,
    free: int = 4,
    zero: int = 24,
    **_,
) -> Score:
    """Relace A2 (F2 over edited files) times the turn penalty (``free``/``zero``: its n ≤ 4 and 24)."""
    prf = report_files_prf(gold, report, root)
    a = fbeta(prf.precision, prf.recall, 2.0)
    p = turn_penalty(turns, free, zero)
    reason = (
        f"{prf.n_hit}/{prf.n_gold} edited files found among {prf.n_pred} cited; "
        f"F2={a:.3f}; turns={turns if turns is not None else 'n/a'} -> penalty {p:.2f}"
    )
    if report is None:
        reason = "no report; " + reason
    return Score(a * p, {"accuracy": a, "precision": prf.precision, "recall": prf.recall, "turn_penalty": p}, reason)


def relace_hybrid(
    gold: Gold, report: Report | None, *, turns: int | None = None, root: str | None = None, **_
) -> Score:
    """Relace A1: soft precision against viewed files (a cited file counts when the reference
    agent viewed or edited it), hard recall against edited files; times the turn penalty.
    Without viewed gold it falls back to precision against edited files, and says so."""
    pred = _files(report, root)
    hard = report_files_prf(gold, report, root)
    soft_set = dict.fromkeys(list(gold.edited) + sorted(gold.viewed or ()), [])
    soft = file_prf(pred, soft_set, root)
    ps, r = soft.precision, hard.recall
    a = 2 * ps * r / (ps + r) if ps + r > 0 else 0.0
    p = turn_penalty(turns)
    note = "" if gold.viewed is not None else "gold has no viewed files: soft precision = precision vs edited; "
    reason = (
        f"{note}soft precision {soft.n_hit}/{soft.n_pred}, recall {hard.n_hit}/{hard.n_gold}; "
        f"A1={a:.3f}; penalty {p:.2f}"
    )
    return Score(a * p, {"accuracy": a, "soft_precision": ps, "recall": r, "turn_penalty": p}, reason)


def _status(finish_reason: str | None) -> str:
    """slime's sample status from the last completion's finish reason, as generate_with_fastcontext.py maps it."""
    return {"stop": "completed", "length": "truncated", "abort": "aborted"}.get(finish_reason or "", "failed")


def episode_finish_reason(trace) -> str:
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
    pred = {p[len(pre) :] if p.startswith(pre) else p for p in cited}
    true = set(gold.edited)
    hit = len(pred & true)
    return (hit / len(pred) if pred else 0.0), (hit / len(true) if true else 0.0), len(pred), len(true), hit


_EPISODE = object()  # fastcontext's finish_reason when not given: the episode's (None is a given value)


def fastcontext(
    gold: Gold,
    report: Report | None,
    *,
    turns: int | None = None,
    root: str | None = None,
    trace=None,
    query: str | None = None,
    judge=None,
    finish_reason: str | None | object = _EPISODE,
    lenient: bool = False,
    answer: str | None | object = _EPISODE,
    **_,
) -> Score:
    """FastContext's RL reward as released (``generate_with_fastcontext.py`` ``reward_func``, scores
    from ``utils.py``):

    - a FAILED episode (finish reason other than stop / length / abort) scores 0 outright;
    - no citation (no ``path:N`` / ``path:S-E`` line in the answer) scores 0;
    - otherwise ``1 + score_file + 2·quality``, where ``score_file`` = F0.5 over cited vs gold files
      − 0.1·max(0, (n_cited − n_gold)/n_gold) (``calculate_explore_score``) counts only when the
      episode finished with ``stop`` (truncated/aborted → 0), and ``quality`` = the judge's 0-10 score
      × 0.1, given the query and the contents of the cited lines (:mod:`fasbench.scoring.judge`).

    ``trace`` (the episode) gives the finish reason (:func:`episode_finish_reason`; ``finish_reason``,
    when given, wins, None included: ``fasbench score --finish``; neither: ``stop``) and the query the explorer was
    given (:func:`episode_query`: its generated query, else ``query``, the task's). ``judge`` is a
    :class:`fasbench.scoring.judge.Judge` (or None: the quality term is 0 and the reason says so); ``root`` the
    workspace the citations are read from. Deviations: a gold with no file gives no over-citation term
    (the release divides by 0).

    ``lenient`` (the ``fastcontext-lenient`` reward): the answer text (``answer`` when given, None
    included, else :func:`episode_answer`) is re-read with ``parse_final_answer_lenient`` and paths are
    normalised (fasbench's older reading)."""
    if finish_reason is _EPISODE:
        finish_reason = episode_finish_reason(trace) if trace is not None else "stop"
    query = episode_query(trace, query)
    if lenient and answer is _EPISODE:
        answer = episode_answer(trace)
    if lenient and answer is not None:
        report = parse_final_answer_lenient(answer)
    parts = {"cited": 0.0, "score_file": 0.0, "f0.5": 0.0, "over_penalty": 0.0, "quality": 0.0, "judged": 0.0}
    status = _status(finish_reason)
    if status == "failed":
        return Score(0.0, parts, f"episode failed (finish reason {finish_reason!r}): 0 outright")
    cited = {p: rs for p, rs in (report.files.items() if report is not None else ()) if rs}
    n_cit = sum(len(rs) for rs in cited.values())
    if n_cit < 1:
        return Score(
            0.0,
            parts,
            "no citation with a line range in the answer: 0" + ("" if report is not None else " (no answer)"),
        )
    parts["cited"] = 1.0
    if lenient:
        prf = report_files_prf(gold, Report(files=cited), root)
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
        shown = cited if lenient else judge_citations(trace, cited, answer)
        v = judge.judge(query_message(query), citation_contents(shown, root, released=not lenient))
        parts["quality"], parts["judged"] = v.quality, 1.0
        judge_note = f"judge {v.quality * 10:.0f}/10" + (f" ({v.reason})" if v.reason else "")
    value = 1.0 + parts["score_file"] + 2.0 * parts["quality"]
    reason = (
        f"{n_cit} citations in {n_pred} files ({n_hit}/{n_gold} gold files); {file_note}; "
        f"{judge_note}; 1 + {parts['score_file']:.3f} + 2·{parts['quality']:.2f} = {value:.3f}"
    )
    return Score(value, parts, reason)


def judge_requests(episodes) -> list[tuple[str, str]]:
    """The (query message, cited contents) pairs the ``fastcontext`` reward will send the judge for
    ``episodes`` (``(trace, task)`` pairs), so that a caller can have them judged concurrently first
    (``Judge.score_many``); episodes the reward scores 0 are left out."""
    out = []
    for trace, task in episodes:
        report, query = trace.report, episode_query(trace, task.query)
        cited = {p: rs for p, rs in (report.files.items() if report is not None else ()) if rs}
        if cited and query and _status(episode_finish_reason(trace)) != "failed":
            out.append(
                (query_message(query), citation_contents(judge_citations(trace, cited), task.root, released=True))
            )
    return out


def judge_citations(trace, cited: dict, answer: str | None | object = _EPISODE):
    """The citations the judge reads, as the release gives them (``read_citations_content`` over
    ``parse_final_answer``'s list): in answer order, each range as written, read from the answer text
    (``answer`` when given, else the episode's last reply, :func:`episode_answer`) when its citations
    are the report's ``cited`` ones; else ``cited`` itself (grouped by path: a report without its
    answer text, or one that was edited)."""
    text = episode_answer(trace) if answer is _EPISODE else answer
    listed = released_citations(text) if isinstance(text, str) else None
    if not listed:
        return cited
    grouped: dict[str, list[list[int]]] = {}
    for path, _, s, e in listed:
        grouped.setdefault(path, []).append([s, e])
    same = grouped == {p: [list(r) for r in rs] for p, rs in cited.items()}
    return listed if same else cited


def episode_query(trace, query: str | None) -> str | None:
    """The query the episode's explorer was given (``trace.meta["query"]``, a FastContext generated
    query), else ``query`` (the task's): what the judge is asked about, as the release asks it about
    the rollout's own ``<query>`` message."""
    q = (trace.meta or {}).get("query") if trace is not None else None
    return q if isinstance(q, str) and q else query


def episode_answer(trace) -> str | None:
    """The text of the episode's last reply when the episode ended with it (reported, or stopped
    without an answer block): the one a FastContext answer is read from; None otherwise."""
    if trace is None or not trace.turns or trace.stop_reason not in ("reported", "no_answer"):
        return None
    return trace.turns[-1].text


def fastcontext_lenient(gold: Gold, report: Report | None, **episode) -> Score:
    """:func:`fastcontext` over fasbench's looser answer reading (not the release's; see there)."""
    return fastcontext(gold, report, **{**episode, "lenient": True})


def f05(gold: Gold, report: Report | None, *, root: str | None = None, **_) -> Score:
    """File-level F0.5 (precision-weighted, as Cognition reports)."""
    prf = report_files_prf(gold, report, root)
    v = prf.f(0.5)
    return Score(v, {"precision": prf.precision, "recall": prf.recall}, f"F0.5={v:.3f}")


def file_f1(gold: Gold, report: Report | None, *, root: str | None = None, **_) -> Score:
    """File-level F1."""
    prf = report_files_prf(gold, report, root)
    v = prf.f(1.0)
    return Score(v, {"precision": prf.precision, "recall": prf.recall}, f"file F1={v:.3f}")


def line_f1(gold: Gold, report: Report | None, *, root: str | None = None, **_) -> Score:
    """Line-level F1 over (path, line) pairs against the edited-line gold."""
    prf = report_lines_prf(gold, report, root)
    v = prf.f(1.0)
    reason = f"{prf.n_hit} of {prf.n_gold} gold lines among {prf.n_pred} cited; F1={v:.3f}"
    capped = capped_ranges(report.files, root, lambda p: normalize_path(p, root)) if report is not None else 0
    if capped:
        reason += (
            f"; note: {capped} range(s) end at -1 (end of file) or past line {LINE_CAP} in files of "
            f"unknown length (no workspace root, or the file is not in it): counted up to line "
            f"{LINE_CAP}; give the workspace root (--root) to resolve them"
        )
    return Score(v, {"precision": prf.precision, "recall": prf.recall}, reason)


def relace_mini(gold: Gold, report: Report | None, *, turns: int | None = None, root: str | None = None, **_) -> Score:
    """Relace's A2 reward with the turn penalty of the RL miniature (:data:`MINI_TURNS`)."""
    return relace_f2(gold, report, turns=turns, root=root, free=MINI_TURNS[0], zero=MINI_TURNS[1])


def relace_mini_k3(
    gold: Gold, report: Report | None, *, turns: int | None = None, root: str | None = None, **_
) -> Score:
    """Relace's A2 reward with the turn penalty of the 3-symbol miniature (:data:`MINI3_TURNS`)."""
    return relace_f2(gold, report, turns=turns, root=root, free=MINI3_TURNS[0], zero=MINI3_TURNS[1])


def relace(gold: Gold, report: Report | None, **episode) -> Score:
    """Relace's reward by data source: hybrid A1 for agent-trace gold, F2 otherwise."""
    if gold.source == "agent-trace" and gold.viewed is not None:
        return relace_hybrid(gold, report, **episode)
    return relace_f2(gold, report, **episode)


@dataclass(frozen=True)
class Reward:
    """One registry entry: the reward function (the signature in the module doc) and what the rest of
    fasbench reads about it, declared here and nowhere else:

    - ``judged``: an LLM judge gives one of its terms (``fasbench score --judge`` and the RL profile's
      ``judge`` apply only to those); ``reads_answer``: it re-reads the episode's answer text
      (fastcontext-lenient), not the parsed report;
    - ``bounds``: the range of its value and ``parts`` the range of each part (name → bounds), which the
      intervals of its ``reward_NAME`` / ``reward_NAME__PART`` columns (and of the headline ``reward``
      when it is the headline) are clipped to (``fasbench.evaluation.episodes.column_bounds``); None or
      an undeclared part: no clipping;
    - ``summary``: a row of ``fasbench eval``'s printed summary and a default metric of ``fasbench runs``;
    - ``label``: its name in tables and figures (default: the registry name); ``view``: one of notebook
      04's reward views ("one report, three rewards"), compared on part ``view_part`` (None: the value);
    - ``audit``: scored by the reward-hacking audit (``fasbench.studies.audit.audit_rewards``).
    """

    fn: Callable[..., Score]
    judged: bool = False
    reads_answer: bool = False
    bounds: Bounds | None = None
    parts: Mapping[str, Bounds] = field(default_factory=dict)
    summary: bool = False
    label: str = ""
    view: bool = False
    view_part: str | None = None
    audit: bool = False

    def __call__(self, gold: Gold, report: Report | None, **episode) -> Score:
        return self.fn(gold, report, **episode)


#: The parts of the Relace rewards (all in [0, 1]), of FastContext's (1 + score_file + 2·quality: score_file
#: is F0.5 minus an unbounded over-citation penalty) and of the F-scores.
RELACE_PARTS = dict.fromkeys(("accuracy", "precision", "soft_precision", "recall", "turn_penalty"), UNIT)
FASTCONTEXT_PARTS = {
    "cited": UNIT,
    "score_file": (-float("inf"), 1.0),
    "f0.5": UNIT,
    "over_penalty": NONNEGATIVE,
    "quality": UNIT,
    "judged": UNIT,
}
PR_PARTS = {"precision": UNIT, "recall": UNIT}

#: The one reward registry: name → :class:`Reward`. A new reward is one function and one entry here;
#: the episode table then has its ``reward_NAME`` / ``reward_NAME__PART`` columns, their intervals are
#: clipped to its declared bounds, ``summary=True`` prints it in ``fasbench eval``'s summary, and RL
#: (``reward:``), SFT filtering, best-of-N and ``fasbench score`` take it by name.
REWARDS: dict[str, Reward] = {
    "relace": Reward(relace, bounds=UNIT, parts=RELACE_PARTS),
    "relace-f2": Reward(
        relace_f2,
        bounds=UNIT,
        parts=RELACE_PARTS,
        summary=True,
        label="F2 (Relace A2)",
        view=True,
        view_part="accuracy",
        audit=True,
    ),
    "relace-hybrid": Reward(
        relace_hybrid,
        bounds=UNIT,
        parts=RELACE_PARTS,
        label="hybrid F1 (Relace A1)",
        view=True,
        view_part="accuracy",
        audit=True,
    ),
    "relace-mini": Reward(relace_mini, bounds=UNIT, parts=RELACE_PARTS),
    "relace-mini-k3": Reward(relace_mini_k3, bounds=UNIT, parts=RELACE_PARTS),
    "fastcontext": Reward(fastcontext, judged=True, bounds=(-float("inf"), 3.0), parts=FASTCONTEXT_PARTS, audit=True),
    "fastcontext-lenient": Reward(
        fastcontext_lenient, judged=True, reads_answer=True, bounds=(-float("inf"), 3.0), parts=FASTCONTEXT_PARTS
    ),
    "f0.5": Reward(f05, bounds=UNIT, parts=PR_PARTS, label="F0.5 (Cognition)", view=True, audit=True),
    "file-f1": Reward(file_f1, bounds=UNIT, parts=PR_PARTS),
    "line-f1": Reward(line_f1, bounds=UNIT, parts=PR_PARTS, audit=True),
}

#: The reward of the episode table's headline ``reward`` column, evaluation and RL unless told.
DEFAULT_REWARD = "relace"


def reward_named(name: str) -> Reward:
    """The registry entry of ``name``; a one-line error naming the choices for an unknown one."""
    if name not in REWARDS:
        raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(REWARDS)}")
    return REWARDS[name]


def judged_rewards() -> list[str]:
    """The names of the rewards an LLM judge takes part in."""
    return [n for n, r in REWARDS.items() if r.judged]


def summary_rewards() -> list[str]:
    """The rewards ``fasbench eval``'s summary prints (``summary=True``), in registry order."""
    return [n for n, r in REWARDS.items() if r.summary]


def audit_rewards() -> list[str]:
    """The rewards the reward-hacking audit scores (``audit=True``), in registry order."""
    return [n for n, r in REWARDS.items() if r.audit]


def view_rewards() -> list[str]:
    """The rewards of notebook 04's reward views (``view=True``), in registry order."""
    return [n for n, r in REWARDS.items() if r.view]


def score_episode(name: str, trace, task, judge=None) -> Score:
    """Score one episode (a :class:`~fasbench.records.Trace` of ``task``) under reward ``name``: the
    one scoring of an episode, used by the episode table, the RL reward function and the golden traces."""
    return reward_named(name)(
        task.gold, trace.report, turns=trace.n_turns, root=task.root, trace=trace, query=task.query, judge=judge
    )


GROUNDED = "grounded-"


def grounded(name: str, audit: bool = False) -> Reward:
    """Reward ``name`` over the report's grounded citations (fasbench's own variant; module docstring).
    The lines shown to the searcher before its report come from the episode (``trace``:
    ``process.shown_before_report``) or ``shown`` (path → line ranges); without either the reward
    cannot be computed and says so (a ValueError naming it)."""
    base = REWARDS[name]

    def reward(
        gold: Gold,
        report: Report | None,
        *,
        trace=None,
        root: str | None = None,
        shown=None,
        answer=_EPISODE,
        **episode,
    ) -> Score:
        if shown is None and trace is not None:
            shown = shown_before_report(trace)
        if shown is None:
            raise ValueError(
                f"reward {GROUNDED}{name} needs the episode's observations (shown=); "
                "score a whole episode (fasbench eval / episodes.episode_row), not a bare report"
            )
        if base.reads_answer:  # the lenient reading re-parses the answer: ground that report
            answer = episode_answer(trace) if answer is _EPISODE else answer
            if answer is not None:
                report = parse_final_answer_lenient(answer)
        kept = ground_report(report, shown, root)
        s = base(gold, kept, trace=trace, root=root, answer=None, **episode)
        n = (
            (sum(len(rs) for rs in report.files.values()), sum(len(rs) for rs in kept.files.values()))
            if report is not None
            else (0, 0)
        )
        return Score(
            s.value,
            s.parts,
            f"grounded: {len(kept.files) if kept else 0} of "
            f"{len(report.files) if report else 0} cited files kept ({n[1]} ranges of {n[0]}); {s.reason}",
        )

    reward.__doc__ = f"{GROUNDED}{name}: {name} over the citations the searcher was shown (fasbench's own)."
    return Reward(
        reward,
        judged=base.judged,
        bounds=base.bounds,
        parts=base.parts,
        audit=audit,
        label=f"grounded {base.label or name}",
    )


#: The grounded variants the reward-hacking audit scores (beside the audited rewards themselves).
AUDITED_GROUNDED = ("relace-f2", "fastcontext")
REWARDS.update({GROUNDED + n: grounded(n, audit=n in AUDITED_GROUNDED) for n in list(REWARDS)})


def score_report(
    name: str, gold: Gold, report: Report | None, turns: int | None = None, root: str | None = None, **episode
) -> Score:
    """Score a bare report (no episode) under reward ``name``; ``episode`` may give the other facts
    (``query``, ``judge``, ``finish_reason``, ``trace``)."""
    return reward_named(name)(gold, report, turns=turns, root=root, **episode)


def score_batch(
    name: str, golds: Sequence[Gold], reports: Sequence[Report | None], turns: Sequence[int | None] | None = None, **kw
) -> list[Score]:
    """Score many reports at once (the batched form TRL reward functions use)."""
    if len(golds) != len(reports):
        raise ValueError(f"{len(golds)} golds for {len(reports)} reports")
    ts = list(turns) if turns is not None else [None] * len(golds)
    return [score_report(name, g, r, t, **kw) for g, r, t in zip(golds, reports, ts)]
