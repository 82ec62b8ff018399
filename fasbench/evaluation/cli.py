"""`fasbench eval`, `fasbench runs` and `fasbench compare` (a cli plugin; heavy imports stay inside the
commands: ``fasbench.evaluation.evaluate`` loads polars, the policies and the scoring; its measured cost is in
benchmarks/README.md)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import typer

from fasbench.data.tasksets import task_set_label
from fasbench.policies import POLICIES
from fasbench.tools import TOOLSETS

# every policy family with an example (typer keeps these lines as they are)
# "\b": click prints the paragraph after it as written (one family a line), not re-wrapped into one
POLICY_HELP = "Policies (`fasbench policies` lists their parameters):\n\n\b\n" + "\n".join(
    f"  {fam.example}   {fam.what}" for fam in POLICIES.values()
)


def register(app) -> None:
    @app.command("eval", epilog=POLICY_HELP)
    def eval_cmd(
        tasks: str = typer.Option(
            ...,
            "--tasks",
            help="task set: SOURCE[:SPLIT] e.g. swebench-verified:fasbench-test, a Task "
            "JSONL file[:SPLIT], or git:PATH (fasbench.data.tasksets)",
        ),
        policy: str = typer.Option(
            ...,
            "--policy",
            help="NAME[:key=value,...], e.g. heuristic:turns=3, bm25, "
            "openai:model=M,base_url=URL, hf:model=smollm2-offline (all families below)",
        ),
        toolset: str = typer.Option("relace", "--toolset", help=" | ".join(TOOLSETS) + " (fasbench.tools.TOOLSETS)"),
        out: Path | None = typer.Option(
            None,
            "--out",
            help="run directory (traces.jsonl, summary.parquet); resumes "
            "when its run.json matches, refused otherwise; default CACHE/runs/eval-"
            "POLICY-KEY, KEY derived from every option that changes the run",
        ),
        max_turns: int = typer.Option(
            6,
            "--max-turns",
            min=1,
            help="turn limit K: Relace, at most K replies (the "
            "last after the stop-and-answer note); FastContext, the release's max_turns: "
            "K replies, then its last-turn message and one extra reply (at most K+1)",
        ),
        max_calls: int = typer.Option(
            12,
            "--max-calls",
            min=1,
            help="calls allowed in one turn (fasbench's cap; neither Relace nor FastContext sets one: 12 is the top of the 4-12 Relace's prompt asks for)",
        ),
        report_contract: str = typer.Option(
            "free",
            "--report-contract",
            help="how the answer cites: free (the "
            "published: paths and line ranges as written) | ids (fasbench's "
            "extension: IDs of the ranges shown, rendered into paths by fasbench)",
        ),
        workers: int = typer.Option(
            0,
            "--workers",
            help="parallel episodes (0 = the policy's default: 1 for openai, whose server may generate one request at a time, as transformers serve does; else the CPU count). Against vLLM or SGLang, which batch, pass e.g. --workers 32",
        ),
        backend: str = typer.Option("", "--backend", help="process | thread | serial (default by policy)"),
        limit: int = typer.Option(
            0, "--limit", min=0, help="first N tasks only (0 = all); the run says how many ran and why fewer"
        ),
        ids: list[str] | None = typer.Option(None, "--ids", help="only these task ids (repeatable; order kept)"),
        ids_file: Path | None = typer.Option(None, "--ids-file", help="only the task ids listed in this file"),
        corpus: str | None = typer.Option(
            None,
            "--corpus",
            help="offline | online (default: offline where a release is picked); tasks not usable on it are excluded",
        ),
        judge: str = typer.Option("", "--judge", help="FastContext reward's LLM judge: openai:model=NAME,base_url=URL"),
        reward: str = typer.Option(
            "relace",
            "--reward",
            help="the summary's headline `reward` column: relace | "
            "fastcontext | fastcontext-lenient | … (every reward is a column anyway)",
        ),
        scoring: str = typer.Option(
            "",
            "--scoring",
            help="also score as FastContext's run_score.py: fastcontext "
            "(its FILE_TYPES filter: no .py) or fastcontext-all (every file); adds fc_* "
            "columns and prints its result",
        ),
        shard: str = typer.Option(
            "",
            "--shard",
            help="i/n: run shard i (0-based) of n of the tasks, for several machines; merge with `fasbench eval-merge`",
        ),
        perturb: str = typer.Option(
            "",
            "--perturb",
            help="run on perturbed corpora: perturb[:seed=0,modules=2,dirs=1,"
            "private=6,reorder=4] (`fasbench data perturb`; gold and task text relocated)",
        ),
    ):
        """Run a policy over tasks; append traces; write summary.parquet; print macro means with 95% CIs.

        Failed episodes (e.g. a model server down) are counted before the table, left out of its means,
        retried by a rerun of the same command, and make the exit status 3.

        Only the tasks usable on the chosen corpus kind run; the excluded count and reasons are
        printed (and written to OUT/excluded.jsonl) before the run starts."""
        # local import: the plan loads the task sets, the corpora and the harness (heavy, see
        # benchmarks/README.md); every other command would pay it at start-up
        from fasbench.evaluation.plan import plan_run
        from fasbench.evaluation.rundir import read_run
        from fasbench.harness import Limits
        from fasbench.scoring.reward import DEFAULT_REWARD

        if toolset.startswith("fastcontext") and reward == DEFAULT_REWARD:
            typer.echo(
                f"note: tool set {toolset} with the headline reward {reward} (the default); --reward fastcontext makes "
                "FastContext's reward the headline, as its release scores (every reward is a column anyway)",
                err=True,
            )
        plan = None
        try:
            plan = plan_run(
                tasks,
                policy,
                toolset,
                out,
                ids=ids or (),
                ids_file=ids_file,
                limit=limit,
                corpus=corpus,
                perturb=perturb,
                shard=shard,
                reward=reward,
                say=lambda s: typer.echo(s, err=True),
                limits=Limits(max_turns=max_turns, max_calls_per_turn=max_calls, report_contract=report_contract),
            )
            out = plan.out
            df = plan.run(
                workers=workers or None,
                backend=backend or None,
                judge=judge or None,
                warn=False,
                scoring=[scoring] if scoring else [],
            )
        except KeyboardInterrupt:  # bad input (ValueError, OSError) is the CLI group's one-line error
            where = f"in {plan.out / 'traces.jsonl'}" if plan else "(none ran yet)"
            typer.echo(f"interrupted: finished episodes are kept {where}; the same command resumes", err=True)
            raise typer.Exit(130) from None
        failed = int(df["failed"].sum()) if "failed" in df.columns else 0
        if failed:  # before the table: e.g. a model server that still failed after the last retry
            typer.echo(
                f"{failed} of {df.height} episodes FAILED (model server or policy error; summary column "
                "`error`, traces' meta.failed_requests): the means below leave them out; the same "
                "command retries them",
                err=True,
            )
        if df.height:
            typer.echo(summary_text(df, out, reward=reward))
            if scoring:
                # local import: loaded with fasbench.evaluation.evaluate above (heavy)
                from fasbench.scoring.localization import fastcontext_summary, fastcontext_warning

                typer.echo(f"FastContext run_score.py ({scoring}): " + json.dumps(_rounded(fastcontext_summary(df))))
                if warn := fastcontext_warning(df, scoring):
                    typer.echo(warn, err=True)
        typer.echo(f"{df.height} episodes summarised in {out / 'summary.parquet'}")
        if plan.narrowed:
            typer.echo(plan.count)
        for w in read_run(out).last_call().get("warnings") or ():  # no parsable tool call, calls read from text
            typer.echo(w, err=True)
        if failed:  # scripts notice: exit status 3
            typer.echo(f"{failed} episodes failed; exit status 3", err=True)
            raise typer.Exit(3)

    @app.command("policies")
    def policies_cmd(
        model_path: str = typer.Option(
            "",
            "--model-path",
            help="print the local folder of an hf model name (smollm2-offline, tiny; converted on first use) and exit",
        ),
    ):
        """Every policy family: an example --policy spec and its parameters with defaults."""
        # local import: fasbench.policies and fasbench.models are heavy to import
        from fasbench.models import resolve_model
        from fasbench.policies import describe_policies

        if model_path:
            typer.echo(resolve_model(model_path))
            return
        typer.echo(describe_policies())

    @app.command("runs")
    def runs_cmd(
        dirs: list[Path] | None = typer.Argument(
            None, help="run directories or folders holding runs (default: runs/ and CACHE/runs/)"
        ),
        metric: list[str] | None = typer.Option(None, "--metric", help="metrics to show (repeat or comma-separate)"),
        level: float = typer.Option(0.95, "--level", help="confidence level of the intervals"),
        as_json: bool = typer.Option(False, "--json", help="one JSON object per run instead of a table"),
        success: str = typer.Option(
            "all_gold_at_5",
            "--success",
            help="run-to-run noise: the metric whose value ≥ --threshold is a success (pass^k, flip rate)",
        ),
        threshold: float = typer.Option(1.0, "--threshold", help="run-to-run noise: success threshold"),
        latex: Path | None = typer.Option(None, "--latex", help="also write the table as booktabs LaTeX to this file"),
    ):
        """One table of all runs: policy, tool set, task source, n, main metrics with CIs, date, code version;
        then, where one policy was run more than once, its run-to-run noise (pass^k, flip rate)."""
        from fasbench.evaluation import runs as R  # local import: polars + fasbench.evaluation.evaluate, heavy

        metrics = _metrics(metric, R.RUN_METRICS)
        _check_level(level)
        with warnings.catch_warnings(record=True) as skipped:  # an unreadable run: one line, the table goes on
            warnings.simplefilter("always")
            table = R.runs_table(dirs or None, metrics, level=level)
        for w in skipped:
            typer.echo(f"warning: {w.message}", err=True)
        if not table.height:
            raise R.RunError(
                f"no {'readable ' if skipped else ''}runs found under "
                + (", ".join(map(str, dirs or R.run_roots())) or R.default_runs_text())
            )
        for m in metrics if metric else ():  # a default metric older runs lack is shown as –
            if table[m].is_null().all():
                R.check_metrics(R.load_summary(table["path"][0]), [m], table["run"][0])
        noise = R.noise_table(dirs or None, success, threshold)
        if as_json:
            for r in table.iter_rows(named=True):
                typer.echo(json.dumps(r))
            return
        typer.echo(
            f"{table.height} runs; metric: mean [{level:.0%} interval over tasks: percentile bootstrap from 10 tasks, "
            "Student t below (column interval), none for one task]"
        )
        typer.echo(R.format_table(R.display_runs(table, metrics)))
        if latex:
            from fasbench.stats.tables import write_latex  # local import: polars, heavy; only --latex needs it

            typer.echo(
                "LaTeX table: "
                + str(
                    write_latex(
                        R.paper_runs(table, metrics),
                        latex,
                        caption=f"Mean [{level:.0%} interval over tasks: "
                        + "; ".join(sorted(set(table["interval"].drop_nulls().to_list())))
                        + "]",
                    )
                )
            )
        typer.echo(R.noise_text(noise))

    @app.command("eval-merge")
    def eval_merge_cmd(
        out: Path = typer.Argument(..., help="new run directory for the merged run"),
        shards: list[Path] = typer.Argument(..., help="run directories of shards 0…n-1 (`fasbench eval --shard i/n`)"),
    ):
        """Merge the shards of one run into one run directory (traces, summary sorted by task id)."""
        # local import: fasbench.evaluation.evaluate is heavy to import (module docstring)
        from fasbench.evaluation.evaluate import split_failed
        from fasbench.evaluation.rundir import read_run
        from fasbench.evaluation.shards import merge_shards

        df = merge_shards(shards, out)
        failed = split_failed(df)[1]
        if failed:  # as `fasbench eval` says it: the means leave them out
            typer.echo(
                f"{failed} of {df.height} episodes FAILED (model server or policy error; summary column `error`): "
                "the means below leave them out",
                err=True,
            )
        if df.height:
            typer.echo(summary_text(df, out, reward=read_run(out).reward))
        typer.echo(f"{len(shards)} shards, {df.height} episodes merged into {out / 'summary.parquet'}")

    @app.command("compare")
    def compare_cmd(
        runs: list[str] = typer.Argument(..., help="run directories or run names; the first is the reference"),
        metric: list[str] | None = typer.Option(
            None,
            "--metric",
            help="metrics (repeat or comma-separate); "
            "default file_f2,line_f1,reward_relace_f2,turns,unseen_cited_share,calls_nothing_new_share (those every run has)",
        ),
        level: float = typer.Option(0.95, "--level", help="confidence level of the intervals"),
        n_boot: int = typer.Option(2000, "--n-boot", min=100, help="bootstrap resamples (intervals above 20 tasks)"),
        as_json: bool = typer.Option(False, "--json", help="one JSON object per row instead of a table"),
        latex: Path | None = typer.Option(None, "--latex", help="also write the table as booktabs LaTeX to this file"),
    ):
        """Paired comparison of each run against the first (run − reference) on their shared tasks: the
        two-sided sign-flip p (exact up to 20 tasks) beside its n, and the interval."""
        from fasbench.evaluation import runs as R  # local import: polars + fasbench.evaluation.evaluate, heavy

        metrics = _metrics(metric, ()) or None  # None: the default metrics every run has
        _check_level(level)
        with warnings.catch_warnings(record=True) as left_out:  # a run sharing no task: one line, the rest goes on
            warnings.simplefilter("always")
            table = R.compare_runs(runs, metrics, level=level, n_boot=n_boot)
        for w in left_out:
            typer.echo(f"warning: {w.message}", err=True)
        if as_json:
            for r in table.iter_rows(named=True):
                typer.echo(json.dumps(r))
            return
        setups, labels = {}, {}
        dirs = [R.resolve_run(r) for r in runs]
        shown = {table["reference"][0], *table["run"].to_list()}
        for name, d in zip(R.run_names(dirs), dirs):  # each run's own setup, by its own name
            if name not in shown:
                continue
            meta = R.read_run(d)
            setups[name] = (meta.toolset, meta.limits_label())
            labels[name] = task_set_label(meta.task_source, meta.corpus)
            typer.echo(
                f"{name}: tasks {labels[name]} · tool set {meta.toolset or '–'} · limits {meta.limits_label() or '–'}"
            )
        if len(set(setups.values())) > 1:
            typer.echo(
                "note: the runs differ in tool set or turn/call limits (above): a difference is the policy's "
                "and the setup's together"
            )
        typer.echo(
            f"reference: {table['reference'][0]}; diff = run − reference over shared tasks with its "
            f"{level:.0%} interval"
        )
        typer.echo(R.compare_note(table, level))
        if R.failed_note(table):
            typer.echo(R.failed_note(table), err=True)
        typer.echo(R.format_table(R.display_compare(table)))
        if latex:
            from fasbench.stats.tables import write_latex  # local import: polars, heavy; only --latex needs it

            typer.echo(
                "LaTeX table: "
                + str(
                    write_latex(
                        R.display_compare(table),
                        latex,
                        caption=f"Tasks: {'; '.join(dict.fromkeys(labels.values()))}. "
                        + R.compare_note(table, level).replace("\n", ". "),
                    )
                )
            )


def _rounded(v, digits: int = 4):
    """``v`` with every float rounded (nested dicts and lists): a printed summary, not a stored one."""
    if isinstance(v, float):
        return round(v, digits)
    if isinstance(v, dict):
        return {k: _rounded(x, digits) for k, x in v.items()}
    if isinstance(v, list):
        return [_rounded(x, digits) for x in v]
    return v


def summary_text(df, out: Path, level: float = 0.95, reward: str | None = None) -> str:
    """``fasbench eval``'s end-of-run summary: the run, policy, tool set, task set, episodes (and whether
    the run was resumed) and code version once in a header line, then one table, a row per metric (the
    runs table's; the headline ``reward`` (``reward``, named in the second header line) and every reward
    the registry marks ``summary`` not shown yet; then the localization columns defined for some task):
    mean, the interval over tasks (clipped to the column's declared bounds), n (tasks where the metric
    is defined). Writes the localization intervals to OUT/summary_ci.parquet."""
    # local import: polars + fasbench.evaluation.evaluate/runs/localization, heavy (module docstring)
    import polars as pl

    from fasbench.evaluation import runs as R
    from fasbench.evaluation.episodes import column_bounds, reward_column
    from fasbench.evaluation.evaluate import aggregate, split_failed
    from fasbench.scoring.localization import localization_columns
    from fasbench.scoring.reward import DEFAULT_REWARD, summary_rewards
    from fasbench.stats.metrics import mean_ci
    from fasbench.stats.tables import text_table

    run = R.runs_table([out], level=level).row(0, named=True)
    df = split_failed(df)[0]  # the means are over the episodes that ran (the header gives the failed count)
    prep = df["prepare_s"].drop_nulls() if "prepare_s" in df.columns else None
    rows = [
        (m, run[m], run[f"{m}_lo"], run[f"{m}_hi"], df[m].drop_nulls().len() if m in df.columns else run["n"])
        for m in R.RUN_METRICS
        if m != "prepare_s" or (prep is not None and prep.len())  # a policy that prepares nothing: no row
    ]
    reward = reward or DEFAULT_REWARD
    extra = ["reward"] + [reward_column(n) for n in summary_rewards() if n != reward]  # the headline's is `reward`
    for m in (m for m in extra if m in df.columns and m not in R.RUN_METRICS):
        vals = df[m].drop_nulls().cast(pl.Float64).to_list()
        mean, lo, hi = mean_ci(vals, alpha=1 - level, bounds=column_bounds(m, reward)) if vals else (None,) * 3
        rows.append((m, mean, lo, hi, len(vals)))
    loc = [c for c in localization_columns(df) if df[c].null_count() < df.height]
    if loc:
        ci = aggregate(df, loc)
        n = {
            (p, m): df.filter(pl.col("policy") == p)[m].drop_nulls().len() for p in ci["policy"] for m in loc
        }  # tasks with this gold (null = not defined)
        ci = ci.with_columns([pl.Series(f"n_{m}", [n[(p, m)] for p in ci["policy"]]) for m in loc])
        ci.write_parquet(out / "summary_ci.parquet")
        for r in ci.iter_rows(named=True):
            rows += [
                (m, r[m], r[f"{m}_lo"], r[f"{m}_hi"], n[(r["policy"], m)]) for m in loc if m not in R.RUN_METRICS
            ]  # e.g. file_f2 is both: shown once
    run = {k: "unknown" if v is None else v for k, v in run.items()}  # a run written before a field was recorded
    head = (
        f"run {run['run']} · policy {run['policy']} · tool set {run['toolset']} · tasks {run['task_source']} · "
        f"{run['n']} episodes"
        + (f", {run['failed']} failed (left out)" if run.get("failed") else "")
        + (f" ({run['resumed']})" if run.get("resumed") not in (None, "", "unknown") else "")
        + f" · code {run['code']}"
        + f"\nintervals over tasks: {run['interval']}"
        + (f" · limits {run['limits']}" if run.get("limits") not in (None, "", "unknown") else "")
        + f" · reward = {reward}"
    )

    def num(x) -> str:
        return "n/a" if x is None or x != x else f"{x:.3f}"

    cells = [(m, num(v), f"[{num(lo)}, {num(hi)}]", str(k)) for m, v, lo, hi, k in rows]
    text = head + "\n" + text_table(["metric", "mean", f"{level:.0%} CI", "n"], cells, right={"mean", "n"}, rule=False)
    if prep is not None and prep.len():
        text += (
            f"\nprepare_s: {float(prep.sum()):.1f} s in all building or loading the policy's index before the "
            "episodes (the first episode on a corpus pays the build); wall_s is the search alone"
        )
    return text


def _metrics(given, default) -> list[str]:
    out = [m.strip() for g in (given or []) for m in g.split(",") if m.strip()]
    return out or list(default)


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"--level must be between 0 and 1 (e.g. 0.95), got {level}")
