"""``run_e2e``: the live main agent on the same tasks with and without the search subagent.

Layout of ``out/`` (append-only, resumable):

- ``run.json``: the configuration; a resumed run must match it.
- ``records.jsonl``: one line per finished (task, arm), written after the episode; a resumed run
  repairs a truncated last line and skips the (task, arm) pairs it holds, so nothing is lost or run twice.
- ``search_traces.jsonl``: the subagent's fasbench traces, one per task, appended before the main agent
  starts; a resumed run reuses a task's trace instead of searching again.
- ``trajs/<arm>/<task>.traj.json``: mini-swe-agent's own trajectory file (``fasbench trajectories
  analyze out/trajs/<arm>`` reads it); rewritten when an interrupted episode is rerun.
- ``skipped.jsonl``: the tasks whose corpus could not be built, one row each with its reason
  (``fasbench.data.corpora.with_corpora``); their episodes are not run.
- ``work/<arm>/<task>/``: the episode's directory, removed after the episode unless ``keep_work``:
  ``repo/``, the corpus copy the agent works in (a git repository at its base state, the only path its
  sandbox can write; owned by the sandbox's user, mode 0700: ``fasbench.base.untrusted``), and ``base.git``,
  fasbench's own git directory of the same base commit, outside the sandbox, from which the final
  ``git diff`` is read (``fasbench.e2e.workcopy``: the agent's ``.git`` config, hooks and attributes
  never reach fasbench's git).

Arms: ``none`` (the main agent alone) always; ``search`` (the subagent's handoff in the task text) when
``search`` is a policy spec. Metrics per record: exit status, patch (the agent's submission and the
working tree's ``git diff`` of tracked files, by fasbench's own git; ``diff_error`` when git could not
read it, or naming the tracked paths it refused to read: ``e2e.workcopy.bounded_diff``), tokens (the
endpoint's usage), model calls (turns), wall time (the subagent's included in the search arm), and the
localisation proxy (``localize.py``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from tqdm.auto import tqdm

from fasbench.base.paths import Names, UnsafeName, child, name_key
from fasbench.base.untrusted import give_to_sandbox, strip_setid
from fasbench.data.corpora import with_corpora
from fasbench.e2e.live import MainConfig, check_main_sandbox, parse_main, run_main
from fasbench.e2e.localize import localization
from fasbench.e2e.pays import live_measures
from fasbench.e2e.workcopy import SandboxGitError, base_repository, bounded_diff
from fasbench.evaluation.rundir import check_config
from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.records import Task, Trace, append_jsonl, iter_jsonl, iter_traces, repair_jsonl
from fasbench.scoring.process import ids_dropped
from fasbench.stats.metrics import normalize_files, paired_bootstrap
from fasbench.studies.handoff import FORMATS, render, token_counter
from fasbench.trajectories.parsers import TrajectoryError, load

ARMS = ("none", "search")
BASE_GIT = "base.git"
COMPARE = (
    "edits_gold_file",
    "gold_file_recall",
    "gold_function_recall",
    "tokens",
    "turns",
    "wall_s",
    "input_tokens",
    "cache_share",
)


@dataclass
class E2EConfig:
    """What an e2e run directory holds; a resumed run must match it."""

    main: str  # the main agent's spec, openai:model=…,base_url=…
    search: str  # the subagent's policy spec, or "none"
    toolset: str = "relace"  # the subagent's tool set
    handoff: str = "code+search"  # handoff rendering (fasbench.studies.handoff.FORMATS)
    search_turns: int = 6  # the subagent's turn limit
    report_contract: str = "free"  # how the subagent cites (fasbench.tools.contract): free | ids (ID-grounded)


def task_key(task_id: str) -> str:
    """The folder and file name of a task's episode (``work/<arm>/<key>``, ``trajs/<arm>/<key>.traj.json``):
    :func:`fasbench.base.paths.name_key`, one safe path component distinct for distinct ids (an id ``..``
    deleted ``OUT/work`` before; ``a/b`` and ``a_b`` shared one folder)."""
    return name_key(task_id, "e2e task id")


def _claim_keys(tasks: Sequence[Task], skipped: Path) -> set[str]:
    """The ids whose key another task of the run already names (an id crafted as another's key):
    refused, with one row in ``skipped`` each, so that no episode writes over another's files."""
    keys, refused = Names("e2e task key"), set()
    old = {r.get("task_id") for r in iter_jsonl(skipped)} if skipped.exists() else set()
    for tid in dict.fromkeys(t.id for t in tasks):
        try:
            keys.claim(task_key(tid))
        except UnsafeName as e:
            refused.add(tid)
            if tid not in old:
                append_jsonl(skipped, [{"task_id": tid, "reason": "task-key", "detail": str(e)}])
    return refused


def prepare_copy(root: str | Path, episode: Path) -> Path:
    """A fresh copy of the corpus at ``episode/repo`` with the base commit in fasbench's own
    ``episode/base.git`` (and a copy of it as the agent's ``.git``); returns the copy."""
    if episode.exists():
        shutil.rmtree(episode)
    dest = episode / "repo"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    base_repository(dest, episode / BASE_GIT)
    give_to_sandbox(dest)  # the sandbox's user's (not root's), mode 0700
    return dest


def worktree_diff(episode: Path) -> tuple[str, str | None]:
    """(diff, refusal): the copy's tracked changes against the base, by fasbench's git only (nothing the
    agent wrote runs), without the tracked paths it refuses to read (named in ``refusal``)."""
    strip_setid(episode / "repo")  # also after each command; once more before the copy is read or kept
    return bounded_diff(episode / BASE_GIT, episode / "repo")


def done_pairs(records: Path) -> set[tuple[str, str]]:
    repair_jsonl(records)
    return {(d["task_id"], d["arm"]) for d in iter_jsonl(records)} if records.exists() else set()


def _search_traces(path: Path) -> dict[str, Trace]:
    repair_jsonl(path)
    return {tr.task_id: tr for tr in iter_traces(path)} if path.exists() else {}


def _measures(traj: Path, report: dict | None, work: Path) -> dict:
    """``pays.live_measures`` of the saved trajectory; a file the reader refuses gives none (recorded)."""
    try:
        return live_measures(load(traj)[0], report, str(work))
    except TrajectoryError as e:
        return {"input_tokens": None, "cache_share": None, "reread_share": None, "measures_error": str(e)[:300]}


def run_e2e(
    tasks: Sequence[Task],
    main: str,
    search: str,
    out: str | Path,
    toolset: str = "relace",
    handoff: str = "code+search",
    search_turns: int = 6,
    keep_work: bool = False,
    progress: bool = True,
    tokenizer=None,
    report_contract: str = "free",
    with_none: bool = True,
) -> list[dict]:
    """Run every (task, arm) not yet in ``out/records.jsonl``; return all records. ``report_contract``:
    the subagent's (``ids``: its report names IDs of what it was shown, fasbench renders the paths and
    ranges); ``with_none=False`` runs the search arm only (another run holds the main agent alone)."""
    cfg: MainConfig = parse_main(main)
    if handoff not in FORMATS:
        raise ValueError(f"unknown handoff rendering {handoff!r}; choose one of {', '.join(FORMATS)}")
    policy = None if search == "none" else make_policy(search)  # fails early on a bad spec
    check_main_sandbox()  # no episode without the sandbox: one line naming what to install
    out = Path(out)
    limits = Limits(max_turns=search_turns, report_contract=report_contract)  # checks the contract's name
    check_config(out, E2EConfig(main, search, toolset, handoff, search_turns, report_contract))
    records, traces_f = out / "records.jsonl", out / "search_traces.jsonl"
    arms = ARMS if policy is not None else ("none",)
    arms = arms if with_none else tuple(a for a in arms if a != "none")
    done = done_pairs(records)
    if not keep_work:  # copies left by a run killed between an episode's record and its clean-up
        for tid, arm in done:
            if arm in ARMS and isinstance(tid, str):  # both from records.jsonl: never a path of their own
                shutil.rmtree(out / "work" / arm / task_key(tid), ignore_errors=True)
    refused = _claim_keys(tasks, out / "skipped.jsonl")
    todo = [(t, a) for t in tasks for a in arms if (t.id, a) not in done and t.id not in refused]
    rooted = {
        t.id: t
        for t in with_corpora(
            list({t.id: t for t, _ in todo}.values()),
            skipped=out / "skipped.jsonl",
            progress=progress,
            desc="e2e corpora",
        ).tasks
    }
    count = token_counter(tokenizer) if policy is not None else None
    bar = tqdm(total=len(todo), desc="e2e", unit="episode", disable=not progress)
    for task, arm in todo:
        t = rooted.get(task.id)
        if t is None:
            bar.update()
            continue
        key = task_key(t.id)
        episode = out / "work" / arm / key
        work = prepare_copy(t.root, episode)
        rec = {
            "task_id": t.id,
            "arm": arm,
            "instance_id": t.meta.get("instance_id", t.id),
            "repo": t.repo,
            "main": main,
            "search": search if arm == "search" else "none",
            "started_at": time.time(),
        }
        hand, search_info = None, {}
        if arm == "search":
            known = _search_traces(traces_f)
            tr = known.get(t.id)
            if tr is None:
                local = Task.from_dict({**t.to_dict(), "root": str(work)})
                tr = run_episode(local, policy.bind(local), toolset, limits)
                append_jsonl(traces_f, [tr])
            hand = render(tr, work, handoff)
            search_info = {
                "search_trace_id": tr.trace_id,
                "search_turns": tr.n_turns,
                "search_calls": tr.n_calls,
                "search_wall_s": tr.wall_time,
                "search_stop": tr.stop_reason,
                "search_tokens": sum((x.prompt_tokens or 0) + (x.completion_tokens or 0) for x in tr.turns),
                "handoff_format": handoff,
                "handoff_tokens": count(hand),
                "report_contract": report_contract,
                "cited_ids_dropped": ids_dropped(tr),
                "report_files": sorted(tr.report.files) if tr.report else [],
                "report_ranges": normalize_files(tr.report.files, str(work)) if tr.report else {},
            }
        traj = child(out / "trajs" / arm, key, ".traj.json")
        res = run_main(t.query, work, cfg, traj, t.id, hand, {"arm": arm, **search_info})
        try:
            diff, diff_error = worktree_diff(episode)
        except SandboxGitError as e:  # the agent left something git cannot diff: recorded, the run goes on
            diff, diff_error = "", str(e)
        patch = res["submission"] if res["submission"].strip() else diff
        rec.update(
            res,
            **search_info,
            diff=diff,
            diff_error=diff_error,
            patch_source="submission" if res["submission"].strip() else "worktree",
            wall_s=res["main_wall_s"] + search_info.get("search_wall_s", 0.0),
            trajectory=str(traj.relative_to(out)),
            **localization(patch, t.gold, t.root),
            **_measures(traj, search_info.get("report_ranges"), work),
        )
        if not keep_work:
            shutil.rmtree(episode, ignore_errors=True)
        append_jsonl(records, [rec])  # the commit point: an episode killed before it is run again
        bar.update()
    bar.close()
    return list(iter_jsonl(records))


def load_records(out: str | Path):
    f = Path(out) / "records.jsonl"
    repair_jsonl(f)
    return pl.DataFrame(list(iter_jsonl(f)), infer_schema_length=None) if f.exists() else pl.DataFrame()


def compare_arms(df, metrics: Sequence[str] = COMPARE, n_boot: int = 2000) -> list[dict]:
    """Paired bootstrap (search − none) per metric over the tasks both arms finished; a missing value
    (e.g. no gold function) drops the task for that metric only."""
    if df.height == 0 or "arm" not in df.columns:
        return []
    a = df.filter(pl.col("arm") == "search")
    b = df.filter(pl.col("arm") == "none")
    rows = []
    for m in metrics:
        if m not in df.columns:
            continue
        j = (
            a.select("task_id", pl.col(m).cast(pl.Float64).alias("a"))
            .join(b.select("task_id", pl.col(m).cast(pl.Float64).alias("b")), on="task_id")
            .drop_nulls()
        )
        r = paired_bootstrap(j["a"].to_list(), j["b"].to_list(), n=n_boot)
        rows.append(
            {
                "metric": m,
                "search": float(j["a"].mean()) if j.height else None,
                "none": float(j["b"].mean()) if j.height else None,
                **r,
            }
        )
    return rows


#: the live hand-off arms beside ``none``: arm -> (hand-off rendering, the subagent's report contract)
LIVE_ARMS = {"citations": ("citations", "free"), "ids": ("citations", "ids"), "code": ("code", "free")}


def run_live_arms(
    tasks: Sequence[Task],
    main: str,
    search: str,
    out: str | Path,
    toolset: str = "relace",
    arms: dict = LIVE_ARMS,
    search_turns: int = 6,
    progress: bool = True,
    tokenizer=None,
) -> pl.DataFrame:
    """The main agent alone and with each hand-off arm (``LIVE_ARMS``: free-form citations, ID-grounded
    citations, citations with code) on the same tasks: one resumable :func:`run_e2e` folder per arm
    (``out/<arm>``; the first also runs ``none``). Returns the records, ``arm`` = ``none`` or the hand-off
    arm. A ``none`` record's ``reread_share`` is the share of the first arm's report that the agent read
    on its own (``pays.live_measures`` of its trajectory against that report)."""
    frames, first = [], None
    for i, (arm, (fmt, contract)) in enumerate(arms.items()):
        d = child(Path(out), arm)
        run_e2e(
            tasks,
            main,
            search,
            d,
            toolset,
            fmt,
            search_turns,
            progress=progress,
            tokenizer=tokenizer,
            report_contract=contract,
            with_none=i == 0,
        )
        df = load_records(d)
        if not df.height:
            continue
        first = first or d
        frames.append(
            df.with_columns(pl.when(pl.col("arm") == "search").then(pl.lit(arm)).otherwise(pl.col("arm")).alias("arm"))
        )
    if not frames:
        return pl.DataFrame()
    df = pl.concat(frames, how="diagonal_relaxed")
    return _none_reread(df, first, next(iter(arms)))


def _none_reread(df: pl.DataFrame, run: Path, arm: str) -> pl.DataFrame:
    reports = {r["task_id"]: r.get("report_ranges") for r in df.filter(pl.col("arm") == arm).iter_rows(named=True)}
    share = []
    for r in df.iter_rows(named=True):
        rep = reports.get(r["task_id"]) if r["arm"] == "none" else None
        if not rep:
            share.append(r.get("reread_share"))
            continue
        key = task_key(r["task_id"])  # where run_e2e wrote the episode (not a path read from the record)
        work = (run / "work" / "none" / key / "repo").resolve()
        share.append(_measures(child(run / "trajs" / "none", key, ".traj.json"), rep, work)["reread_share"])
    return df.with_columns(pl.Series("reread_share", share, dtype=pl.Float64))
