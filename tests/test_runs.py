"""Runs table, multi-run comparison (functions and CLI), run provenance, lazy retrieval indexes,
and the replay of a named run with its gold."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import polars as pl
import pytest

from fasbench.evaluation import runs as R
from fasbench.evaluation.evaluate import run_eval
from fasbench.evaluation.rundir import read_run
from fasbench.policies.rag import corpus_key
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import iter_jsonl, read_traces
from fasbench.replay import RunsBrowser, example_run, load_run_episodes, pick_episode


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two real runs (heuristic, bm25) of 6 toy tasks on two corpora, in one folder."""
    base = tmp_path_factory.mktemp("runs")
    cache = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("FASBENCH_CACHE", str(cache))
    a = toy_tasks(make_corpus(base / "corpus-a"))[:3]
    b = [replace(t, id=t.id + "-b") for t in toy_tasks(make_corpus(base / "corpus-b"))[:3]]
    tasks = a + b
    run_eval(
        tasks,
        "heuristic:turns=3",
        "relace",
        base / "all" / "heur",
        workers=1,
        progress=False,
        task_source="toy (6 tasks)",
    )
    run_eval(tasks, "bm25:k=3", "relace", base / "all" / "bm25", workers=1, backend="serial", progress=False)
    yield {"dir": base / "all", "tasks": tasks, "cache": cache}
    mp.undo()


def test_run_records_task_source_code_version_and_tasks(runs):
    meta = read_run(runs["dir"] / "heur")
    assert meta.task_source == "toy (6 tasks)" and meta.policy == "heuristic:turns=3"
    assert meta.describe() and meta.created.endswith("Z") and meta.reward == "relace" and meta.layout == 2
    kept = [d["id"] for d in iter_jsonl(runs["dir"] / "heur" / "tasks.jsonl")]
    assert kept == [t.id for t in runs["tasks"]]


def test_bm25_builds_each_index_just_before_its_first_episode(runs):
    """Lazy: the second corpus's index is written after the first corpus's episodes finished."""
    traces = read_traces(runs["dir"] / "bm25" / "traces.jsonl")
    roots = [t.root for t in runs["tasks"]]
    idx_b = runs["cache"] / "rag" / corpus_key(roots[3]) / "bm25"
    assert idx_b.exists()
    first_a_end = min(tr.ended_at for tr in traces[:3])
    assert idx_b.stat().st_mtime > first_a_end
    assert min(tr.started_at for tr in traces[3:]) >= idx_b.stat().st_mtime - 1e-3


def test_runs_table_has_one_row_per_run_with_intervals(runs):
    t = R.runs_table([runs["dir"]], ["file_f2", "turns"])
    assert sorted(t["run"]) == ["bm25", "heur"] and (t["n"] == 6).all()
    h = t.filter(pl.col("run") == "heur").row(0, named=True)
    assert h["file_f2_lo"] <= h["file_f2"] <= h["file_f2_hi"] and h["turns"] == 3.0
    # 6 tasks: Student t (mean ± t(0.975; 5) · s/√6, t = 2.570582), not the percentile bootstrap
    f2 = pl.read_parquet(runs["dir"] / "heur" / "summary.parquet")["file_f2"].to_numpy()
    half = 2.570582 * f2.std(ddof=1) / 6**0.5
    assert h["interval"] == "Student t (n = 6)" and half > 0
    assert (h["file_f2_lo"], h["file_f2_hi"]) == pytest.approx(
        (f2.mean() - half, min(f2.mean() + half, 1.0)), abs=1e-6
    )  # F2 clipped to [0, 1]
    assert h["task_source"] == "toy (6 tasks; local corpora)" and h["code"]  # the label names the corpus kind
    text = R.format_table(R.display_runs(t, ["file_f2", "turns"]))
    assert "heuristic:turns=3" in text and "[" in text


def test_the_shipped_example_runs_older_acc_at_k_columns_read_as_all_gold_at_k():
    """The shipped run's summary predates the name all_gold_at_k (it wrote acc_at_k, a name that
    read as LocAgent's Acc@k); the default runs table still shows the metric, values unchanged."""
    ex = example_run().path
    raw = pl.read_parquet(ex / "summary.parquet")
    assert "acc_at_5" in raw.columns and "all_gold_at_5" not in raw.columns
    t = R.runs_table([ex])
    assert t["all_gold_at_5"][0] == pytest.approx(raw["acc_at_5"].mean())


def test_compare_runs_paired_several_metrics(runs):
    d = runs["dir"]
    c = R.compare_runs([d / "bm25", d / "heur"], ["file_f2", "turns"], level=0.9)
    assert c["metric"].to_list() == ["file_f2", "turns"] and (c["n"] == 6).all()
    turns = c.filter(pl.col("metric") == "turns").row(0, named=True)
    assert turns["diff"] == pytest.approx(turns["run_mean"] - turns["reference_mean"]) and turns["diff"] > 0
    # heur takes more turns than bm25 on all 6 tasks: exact sign-flip p = 2/2^6, not the bootstrap's 0
    assert turns["p"] == 2 / 64 == turns["p_min"] and turns["test"] == "exact sign-flip (all 2^6 flips)"
    with pytest.raises(R.RunError, match="unknown metric 'nope'"):
        R.compare_runs([d / "bm25", d / "heur"], ["nope"])
    with pytest.raises(R.RunError, match="no such run"):
        R.compare_runs([d / "bm25", d / "missing"])


@pytest.mark.slow
def test_cli_runs_and_compare_tables_and_one_line_errors(runs):
    from typer.testing import CliRunner

    from fasbench.cli import app

    d, cli = runs["dir"], CliRunner()
    r = cli.invoke(app, ["runs", str(d)])
    assert (
        r.exit_code == 0
        and "heuristic:turns=3" in r.stdout
        and "95% interval over tasks: percentile bootstrap from 10 tasks, Student t below" in r.stdout
    )
    r = cli.invoke(
        app,
        [
            "compare",
            str(d / "bm25"),
            str(d / "heur"),
            "--metric",
            "file_f2,line_f1",
            "--metric",
            "turns",
            "--level",
            "0.9",
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert "reference: bm25" in r.stdout and "90% interval" in r.stdout
    assert all(m in r.stdout for m in ("file_f2", "line_f1", "turns"))
    r = cli.invoke(app, ["compare", str(d / "bm25"), str(d / "nosuch")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "no such run" in r.stderr
    r = cli.invoke(app, ["compare", str(d / "bm25"), str(d / "heur"), "--json"])
    assert json.loads(r.stdout.splitlines()[0])["reference"] == "bm25"
    # the real command line: one line on stderr, exit status 2, no traceback
    r = subprocess.run(
        [sys.executable, "-m", "fasbench.cli", "compare", str(d / "bm25"), str(d / "heur"), "--metric", "nonexistent"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown metric 'nonexistent'" in r.stderr
    assert "Traceback" not in r.stderr


def _head_run(src, dst, k: int):
    """A run directory holding the first ``k`` tasks of a real run (compare reads summary.parquet)."""
    dst.mkdir(parents=True)
    R.load_summary(src).head(k).write_parquet(dst / "summary.parquet")
    return dst


def test_cli_compare_prints_n_and_the_exact_p_on_a_tiny_run_pair(runs, tmp_path):
    """4 tasks that all move one way: the exact two-sided p is 2/2^4 = 0.125 (the old bootstrap printed
    p < 0.001), printed beside n = 4; no 95% interval exists at n = 4 and the table says so."""
    from typer.testing import CliRunner

    from fasbench.cli import app

    d = runs["dir"]
    a, b = _head_run(d / "bm25", tmp_path / "bm25", 4), _head_run(d / "heur", tmp_path / "heur", 4)
    r = CliRunner().invoke(app, ["compare", str(a), str(b), "--metric", "turns"])
    assert r.exit_code == 0, r.stderr
    head, row = r.stdout.splitlines()[-3], r.stdout.splitlines()[-1].split()
    assert head.split()[-8:] == ["ref)", "p", "n", "min", "p", "test", "noise", "floor"]  # n right beside p
    cols = dict(
        zip(
            ["run", "vs", "metric", "reference", "run_mean", "diff", "ci", "p", "n", "min_p", "test", "noise_floor"],
            row,
        )
    )
    assert cols["noise_floor"] == "–" and "no repeated runs" in r.stdout  # two policies, each run once
    assert (cols["metric"], cols["p"], cols["n"], cols["min_p"], cols["test"]) == (
        "turns",
        "0.125",
        "4",
        "0.125",
        "exact",
    )
    assert cols["ci"] == "[–]" and "no 95% interval exists for n ≤ 5" in r.stdout
    assert "sign-flip" in r.stdout and "<0.001" not in r.stdout


def test_replay_of_a_named_run_has_its_gold(runs):
    ep = load_run_episodes(runs["dir"] / "heur")
    assert ep.gold_from == "tasks.jsonl" and set(ep.tasks) == {t.id for t in runs["tasks"]}
    ex = example_run()
    tr = pick_episode(ex)
    assert tr.task_id == "django__django-15252" and ex.tasks[tr.task_id].gold.edited
    with pytest.raises(R.RunError, match="no episode of task"):
        pick_episode(ex, "nope")


def test_runs_browser_picks_compares_and_opens_an_episode(runs):
    rb = RunsBrowser([runs["dir"]], metrics=["file_f2", "turns"], pick=["bm25", "heur"])
    assert "heuristic:turns=3" in rb.metrics_html.value and "Paired differences against bm25" in rb.compare_html.value
    eps = rb.open("heur")
    assert len(eps.rows) == 6 and eps.replay is None
    rep = eps.open(eps.shown[0]["trace_id"])
    assert rep.task is not None and any(f.gold for f in rep.overlay)
    rb.select.value = ("heur",)
    assert rb.compare_html.value == "" and rb.open_run.value == "heur"
    with pytest.raises(R.RunError, match="unknown run"):
        RunsBrowser([runs["dir"]], pick=["nope"])


def test_compare_refuses_reward_when_the_runs_headline_rewards_differ(tmp_path):
    """`reward` is each run's headline reward: a relace run's beside a fastcontext run's (0..3) is no
    difference of one measure (a new user compared 0.571 with 1.362 that way)."""
    for name, head in (("a", "relace_f2"), ("b", "fastcontext")):
        d = tmp_path / name
        d.mkdir()
        rel, fc = [0.5, 0.0, 1.0], [1.5, 0.0, 2.0]
        pl.DataFrame(
            {
                "task_id": ["t1", "t2", "t3"],
                "policy": [name] * 3,
                "reward_relace_f2": rel,
                "reward_fastcontext": fc,
                "reward": rel if head == "relace_f2" else fc,
            }
        ).write_parquet(d / "summary.parquet")
        (d / "run.json").write_text(json.dumps({"layout": 2, "policy": name, "reward": head}))  # run.json says it
    with pytest.raises(R.RunError, match=r"different rewards \(a: relace_f2, b: fastcontext\)"):
        R.compare_runs([tmp_path / "a", tmp_path / "b"], ["reward"])
    t = R.compare_runs([tmp_path / "a", tmp_path / "b"], ["reward_relace_f2"])  # one reward's column: fine
    assert t["diff"][0] == 0.0


def test_long_policy_specs_are_shortened_in_the_runs_table_only():
    spec = "openai:base_url=http://127.0.0.1:8000/v1,model=Qwen/Qwen3-4B-Instruct-2507,api_key_env=FASBENCH_KEY,timeout_s=900"
    short = R.shorten(spec)
    assert len(short) == R.SPEC_WIDTH and short.startswith("openai:base_url=") and short.endswith("timeout_s=900")
    assert "…" in short and R.shorten("heuristic:turns=3") == "heuristic:turns=3"


def test_compare_leaves_out_a_run_sharing_no_task_and_labels_each_run_by_its_own_setup(runs, tmp_path):
    """A run that shares no task with the reference is left out in one line and the others are compared;
    each header line is that run's own setup (the names were once paired with the arguments by position);
    with no run left, a one-line error (it was an internal ColumnNotFoundError)."""
    import shutil

    from typer.testing import CliRunner

    from fasbench.cli import app

    def part(src, dst, keep):
        shutil.copytree(src, dst)
        df = R.load_summary(src)
        df.filter(pl.col("task_id").is_in(keep)).write_parquet(dst / "summary.parquet")
        return dst

    a = [t.id for t in runs["tasks"][:3]]
    b = [t.id for t in runs["tasks"][3:]]
    ref = part(runs["dir"] / "heur", tmp_path / "ref", a)
    lone = part(runs["dir"] / "heur", tmp_path / "lone", b)
    cli = CliRunner()
    r = cli.invoke(app, ["compare", str(ref), str(lone), str(runs["dir"] / "bm25"), "--metric", "file_f2"])
    assert r.exit_code == 0, r.output
    assert "lone shares no task with the reference ref: left out" in r.output
    heads = [ln for ln in r.output.splitlines() if ": tasks " in ln]
    assert [h.split(":")[0] for h in heads] == ["ref", "bm25"], heads
    assert "toy (6 tasks" in heads[0] and "toy (6 tasks" not in heads[1]  # bm25's run has no task_source label
    r = cli.invoke(app, ["compare", str(ref), str(lone)])
    assert r.exit_code == 2 and "lone shares no task with the reference ref" in r.output and "internal" not in r.output
