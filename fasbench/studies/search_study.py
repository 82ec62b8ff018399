"""The search-baselines study behind notebooks 03 and 04: pick test tasks with offline corpora, run
a grid of policies through ``fasbench.evaluation.evaluate``, and build the tables and figures (accuracy vs
latency and vs turns, per-repository breakdown, the acceptance check, the reward landscape)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go
import polars as pl
from tqdm.auto import tqdm

from fasbench.base.markup import html
from fasbench.base.paths import cache_dir
from fasbench.data.corpora import with_corpora
from fasbench.data.corpus import pick_for, root_dir
from fasbench.data.tasksets import corpus_kind_of, load_task_set, task_set_label
from fasbench.evaluation.episodes import view_columns
from fasbench.evaluation.evaluate import aggregate, compare, run_eval
from fasbench.evaluation.rundir import run_name
from fasbench.harness import Limits
from fasbench.policies.rag import corpus_files
from fasbench.policies.toy import ISSUES, make_corpus, toy_tasks
from fasbench.records import Task
from fasbench.scoring.reward import turn_penalty
from fasbench.stats.figures import HEIGHT_META, PALETTE, bottom_legend, log_axis


def study_tasks(
    n: int,
    split: str = "test",
    sources: Sequence[str] = ("swebench-lite", "swebench-verified"),
    per_repo: int | None = None,
    seed: int = 0,
    download: bool = False,
    max_corpora: int | None = None,
) -> list[Task]:
    """Up to ``n`` tasks of ``split`` with their offline corpus (``fasbench.data.corpora``), drawn at random
    (fixed ``seed``) and balanced over repositories (at most ``per_repo`` each). Without
    ``download`` only corpora already in the cache are used, so a CPU smoke run does not fetch;
    ``max_corpora`` keeps the tasks of at most that many corpora (fewer indexes to build on CPU). Offline
    (PyPI unreachable) a ``download`` draw goes on with the cached corpora, saying so in one line."""
    have = {p.name.lower() for p in (root_dir() / "sdist").iterdir()} if (root_dir() / "sdist").exists() else set()
    pool, seen = [], set()
    for s in sources:
        for t in load_task_set(s, split=split):
            iid = t.meta.get("instance_id", t.id)
            if iid not in seen:
                seen.add(iid)
                pool.append(t)
    random.Random(seed).shuffle(pool)
    out, count, corpora = [], defaultdict(int), set()
    bar = tqdm(total=n, desc="study tasks (corpora fetched from PyPI)" if download else "study tasks", unit="task")
    for t in pool:
        if len(out) >= n:
            break
        if per_repo and count[t.repo] >= per_repo:
            continue
        pk = pick_for(t)
        if pk is None or (not download and f"{pk[0]}-{pk[1]}".lower() not in have):
            continue
        if max_corpora and pk not in corpora and len(corpora) >= max_corpora:
            continue
        got = with_corpora([t], "offline", progress=False)  # one at a time: the caps count usable tasks
        if got.tasks:
            out.append(got.tasks[0])
            count[t.repo] += 1
            corpora.add(pk)
            bar.update(1)
            bar.set_postfix(corpora=len(corpora), refresh=False)
        elif download and any(r.get("reason") == "offline" for r in got.skipped):
            download = False  # PyPI cannot be reached: the rest of the draw uses the cached corpora only
            bar.write(
                f"{got.skipped[0].get('detail', 'PyPI cannot be reached')[:160]}: the draw goes on with cached corpora only"
            )
    bar.close()
    return out


def task_source_of(tasks: Sequence[Task], note: str = "") -> str:
    """The task-set name of drawn study tasks, e.g. ``swebench-lite+swebench-verified:fasbench-test (8 drawn)``
    (the SWE-bench sets they belong to and their split), or ``toy corpus (5 tasks)``."""
    sets = sorted({f"swebench-{s}" for t in tasks for s in t.meta.get("sets", [])})
    splits = {t.split for t in tasks}
    note = f", {note}" if note else ""
    if not sets:
        return f"toy corpus ({len(tasks)} tasks{note})"
    sp = f":fasbench-{splits.pop()}" if len(splits) == 1 and None not in splits else ""
    return f"{'+'.join(sets)}{sp} ({len(tasks)} drawn{note})"


def tasks_label(tasks: Sequence[Task]) -> str:
    """The task-set label of study tasks (``fasbench.data.tasksets.task_set_label``: split, how many of the
    upstream tasks, corpus kind), for tables and figure titles."""
    return task_set_label(task_source_of(tasks), corpus_kind_of(tasks))


def study_run_name(notebook: str, tasks: Sequence[Task], **params) -> str:
    """The default run folder name of a study notebook: the notebook and a key of its parameters and
    of the task ids, so notebooks 03 and 04 (or two parameter sets) never share run directories."""
    return run_name(notebook, {**params, "tasks": sorted(t.id for t in tasks)})


def run_grid(
    tasks: Sequence[Task],
    specs: Sequence[str],
    out_root: str | Path,
    toolset: str = "relace",
    max_turns: int = 6,
    workers: int | None = None,
    task_limits: dict[str, int] | None = None,
    turn_limits: dict[str, int] | None = None,
) -> pl.DataFrame:
    """Run every policy spec (resuming), return all summaries stacked. ``task_limits`` caps the
    number of tasks and ``turn_limits`` the episode turns for slow policies (e.g. ``{"hf": 3}``).
    Each run records its task source (:func:`task_source_of`) and corpus kind; a spec folder that
    holds a run on other tasks or limits is refused (``fasbench.evaluation.evaluate``)."""
    frames = []
    for spec in specs:
        name = spec.split(":", 1)[0]
        ts = list(tasks)
        if name == "dense":  # embeddings cost grows with the corpus: cap on the smallest corpora first
            ts.sort(key=lambda t: corpus_size(t.root))
        ts = ts[: (task_limits or {}).get(name, len(tasks))]
        d = run_dir(out_root, spec)
        turns = (turn_limits or {}).get(name, max_turns)
        src = task_source_of(ts, f"capped at {len(ts)} of {len(tasks)} for {name}" if len(ts) < len(tasks) else "")
        df = run_eval(
            ts, spec, toolset, d, Limits(max_turns=turns), workers=workers, task_source=src, corpus=corpus_kind_of(ts)
        )
        frames.append(df)
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def corpus_size(root: str | None) -> int:
    """Number of code files in a corpus (what retrieval has to index)."""
    return len(corpus_files(root)) if root else 0


def run_dir(out_root: str | Path, spec: str) -> Path:
    """The run directory of a policy spec under ``out_root``."""
    return Path(out_root) / spec.replace(":", "_").replace(",", "_").replace("=", "-")


def family(policy: str) -> str:
    """``heuristic:turns=3`` → ``heuristic``; ``bm25:k=3`` → ``bm25``."""
    return policy.split(":", 1)[0]


def results_table(
    df: pl.DataFrame,
    metrics=(
        "file_f2",
        "file_recall",
        "file_precision",
        "line_f1",
        "all_gold_at_5",
        "reward_relace_f2",
        "turns",
        "calls_per_turn",
        "wall_s",
    ),
) -> pl.DataFrame:
    """Macro means with 95% intervals per policy, the median episode time and ``resumed``: how many of
    the policy's episodes the last run call found on disk (run by an earlier call) rather than ran."""
    agg = aggregate(df, metrics)
    extra = [pl.col("wall_s").median().alias("median_wall_s")]
    if "resumed" in df.columns:
        extra.append(pl.col("resumed").fill_null(False).sum().cast(pl.Int64).alias("resumed"))
    med = df.group_by("policy").agg(extra)
    return agg.join(med, on="policy").sort("file_f2", descending=True)


def per_repo_table(df: pl.DataFrame, policies: Sequence[str], metric: str = "file_f2") -> pl.DataFrame:
    """Mean ``metric`` per repository (rows) and policy (columns), with task counts."""
    sub = df.filter(pl.col("policy").is_in(list(policies)))
    wide = sub.group_by(["repo", "policy"]).agg(pl.col(metric).mean()).pivot(on="policy", index="repo", values=metric)
    n = sub.group_by("repo").agg((pl.len() / len(policies)).cast(pl.Int64).alias("n"))
    return wide.join(n, on="repo").sort("n", descending=True)


def acceptance(df: pl.DataFrame, max_turns: int = 4, margin: float = 0.10, bm25: str = "bm25") -> dict:
    """Does the best heuristic in ≤ ``max_turns`` turns beat bm25 by ≥ ``margin`` file-level F2 on
    the shared tasks, with its median episode under 2 s? Returns the numbers and the verdict (on the
    point estimate, the target's definition), with the paired sign-flip test of the difference
    (``p``; ``paired``: the whole :func:`fasbench.stats.metrics.paired_test` result, for the findings' words).
    Heuristics tied on mean F2 go to the one with fewer turns; ``tied`` names the others."""
    heur = [p for p in df["policy"].unique().to_list() if family(p) == "heuristic"]
    heur = [p for p in heur if df.filter(pl.col("policy") == p)["turns"].max() <= max_turns]
    if not heur or bm25 not in df["policy"].to_list():
        raise ValueError(f"acceptance needs a heuristic run in <= {max_turns} turns and a {bm25!r} run")
    best = max(
        heur,
        key=lambda p: (
            round(df.filter(pl.col("policy") == p)["file_f2"].mean(), 9),
            -df.filter(pl.col("policy") == p)["turns"].mean(),
        ),
    )  # ties: fewer turns
    top = round(df.filter(pl.col("policy") == best)["file_f2"].mean(), 9)
    tied = sorted(p for p in heur if p != best and round(df.filter(pl.col("policy") == p)["file_f2"].mean(), 9) == top)
    a, b = df.filter(pl.col("policy") == best), df.filter(pl.col("policy") == bm25)
    c = compare(a, b, "file_f2")
    med = float(a["wall_s"].median())
    return {
        "heuristic": best,
        "tied": tied,
        "n_tasks": c["n"],
        "f2_heuristic": float(a["file_f2"].mean()),
        "f2_bm25": float(b["file_f2"].mean()),
        "diff": c["diff"],
        "diff_lo": c["lo"],
        "diff_hi": c["hi"],
        "p": c["p"],
        "paired": {k: c[k] for k in ("diff", "lo", "hi", "p", "n", "n_nonzero", "p_min", "test", "ci", "level")},
        "median_wall_s": med,
        "passes": bool(c["diff"] >= margin and med < 2.0),
    }


#: Marker symbols of the points of a policy's sweep (one per setting, e.g. the heuristic's turn budget).
SWEEP_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon", "star", "hexagon")


def _setting(policy: str) -> str:
    """The turn budget in a policy's name (``heuristic:turns=4`` → ``4 turns``), else ``""``."""
    if "turns=" not in policy:
        return ""
    n = policy.split("turns=", 1)[1].split(",")[0]
    return f"{n} turn" + ("" if n == "1" else "s")


def pareto_figure(table: pl.DataFrame, x: str, y: str = "file_f2", title: str = "", tasks: str = ""):
    """Relace Fig. 1 style: accuracy (with its 95% interval) against latency or turns, one point per
    policy, the heuristic's turn sweep joined by a line. ``tasks``: the task-set label
    (:func:`tasks_label`), shown under the title.

    No text on the points (labels of close points overprinted each other and the markers): a family is a
    colour, and the points of a sweep (turn budgets) are told apart by their marker symbol, named in the
    legend under the plot (grey entries; not on the turns axis, where x says it)."""
    fig = go.Figure()
    fams = sorted({family(p) for p in table["policy"]})
    settings = sorted({_setting(p) for p in table["policy"]} - {""}, key=lambda s: int(s.split()[0]))
    symbol = {s: SWEEP_SYMBOLS[i % len(SWEEP_SYMBOLS)] for i, s in enumerate(settings)}
    for i, fam in enumerate(fams):
        sub = table.filter(pl.col("policy").map_elements(family, return_dtype=pl.Utf8) == fam).sort(x)
        fig.add_trace(
            go.Scatter(
                x=sub[x].to_list(),
                y=sub[y].to_list(),
                name=fam,
                mode="lines+markers" if sub.height > 1 else "markers",
                hovertext=sub["policy"].to_list(),
                marker=dict(
                    size=9,
                    color=PALETTE[i % len(PALETTE)],
                    symbol=[symbol.get(_setting(p), "circle") if x != "turns" else "circle" for p in sub["policy"]],
                    line=dict(color="white", width=0.5),
                ),
                line=dict(width=1.5),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=(sub[f"{y}_hi"] - sub[y]).to_list(),
                    arrayminus=(sub[y] - sub[f"{y}_lo"]).to_list(),
                    thickness=1.2,
                    width=3,
                ),
            )
        )
    for s in settings if x != "turns" else []:  # on the turns axis the x value says it already
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=s.split()[0],
                legend="legend2",
                marker=dict(size=9, color="#777", symbol=symbol[s]),
                hoverinfo="skip",
            )
        )
    if tasks:
        title = html("{}<br><sup>{}</sup>", title, tasks) if title else tasks
    fig.update_layout(
        title=title,
        xaxis_title={"wall_s": "mean episode wall time (s)", "turns": "turns"}.get(x, x),
        yaxis_title={"file_f2": "file-level F2"}.get(y, y),
        legend=dict(itemwidth=30),
        meta={HEIGHT_META: {"single": 3.0}},  # room for both legends beside and under a narrow plot
        legend2=bottom_legend(title=dict(text="heuristic turns:", side="left"), itemwidth=30),
    )
    if x == "wall_s":
        log_axis(fig, "x")
    return fig


def toy_study_tasks(n: int = 5) -> list[Task]:
    """The toy corpus's issues (a fallback when no SWE-bench corpus is cached, e.g. a fresh CI clone)."""
    return toy_tasks(make_corpus(cache_dir("toy-corpus")))[: min(n, len(ISSUES))]


def reward_vs_turns(accuracies: Sequence[float] = (0.5, 0.8, 1.0), turns: Sequence[int] = range(1, 31)) -> pl.DataFrame:
    """Relace's R = A · P(n) for fixed accuracies over turn counts (the penalty's shape)."""
    return pl.DataFrame([{"accuracy": a, "turns": n, "reward": a * turn_penalty(n)} for a in accuracies for n in turns])


def reward_views(df: pl.DataFrame) -> pl.DataFrame:
    """The same reports under the rewards the registry marks ``view`` (F2 (Relace A2), hybrid F1 (Relace
    A1) and F0.5: ``fasbench.evaluation.episodes.view_columns``), one row per episode, a column per
    reward named by its label."""
    return df.select(
        "task_id",
        "policy",
        *(pl.col(c).alias(label) for label, c in view_columns().items()),
        "n_files_reported",
        "gold_files",
    )
