"""`fasbench eval`, `fasbench runs` and `fasbench compare` (a cli plugin; heavy imports stay inside the
commands: ``fasbench.evaluation.evaluate`` costs ~0.5 s of CPU by ``python -X importtime`` on the shared 2-core
machine: polars, the policies, the scoring)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from fasbench.data.perturb import parse_perturb
from fasbench.data.perturb_gold import perturb_tasks
from fasbench.policies import POLICIES
from fasbench.records import write_tasks
from fasbench.data.selection import describe_excluded, describe_run_count, pick_ids, read_ids_file, usable
from fasbench.evaluation.shards import parse_shard, record_shard, select_shard
from fasbench.data.tasksets import corpus_kind_of, load_task_set, parse_task_set, task_set_label


# every policy family with an example (typer keeps these lines as they are)
# "\b": click prints the paragraph after it as written (one family a line), not re-wrapped into one
POLICY_HELP = "Policies (`fasbench policies` lists their parameters):\n\n\b\n" + "\n".join(
    f"  {fam.example}   {fam.what}" for fam in POLICIES.values())


def register(app) -> None:
    @app.command("eval", epilog=POLICY_HELP)
    def eval_cmd(
        tasks: str = typer.Option(..., "--tasks", help="task set: SOURCE[:SPLIT] e.g. swebench-verified:test, a Task "
                                  "JSONL file[:SPLIT], or git:PATH (fasbench.data.tasksets)"),
        policy: str = typer.Option(..., "--policy", help="NAME[:key=value,...], e.g. heuristic:turns=3, bm25, "
                                   "openai:model=M,base_url=URL, hf:model=smollm2-offline (all families below)"),
        toolset: str = typer.Option("relace", "--toolset", help="relace | fastcontext | fastcontext-fork"),
        out: Optional[Path] = typer.Option(None, "--out", help="run directory (traces.jsonl, summary.parquet); resumes "
                                           "when its run.json matches, refused otherwise; default CACHE/runs/eval-"
                                           "POLICY-KEY, KEY derived from every option that changes the run"),
        max_turns: int = typer.Option(6, "--max-turns", min=1, help="turn limit K: Relace, at most K replies (the "
                                      "last after the stop-and-answer note); FastContext, the release's max_turns: "
                                      "K replies, then its last-turn message and one extra reply (at most K+1)"),
        max_calls: int = typer.Option(12, "--max-calls", min=1, help="calls allowed in one turn (fasbench's cap; neither Relace nor FastContext sets one: 12 is the top of the 4-12 Relace's prompt asks for)"),
        report_contract: str = typer.Option("free", "--report-contract", help="how the answer cites: free (the "
                                            "published: paths and line ranges as written) | ids (fasbench's "
                                            "extension: IDs of the ranges shown, rendered into paths by fasbench)"),
        workers: int = typer.Option(0, "--workers", help="parallel episodes (0 = CPU count)"),
        backend: str = typer.Option("", "--backend", help="process | thread | serial (default by policy)"),
        limit: int = typer.Option(0, "--limit", min=0, help="first N tasks only (0 = all); the run says how many "
                                  "ran and why fewer"),
        ids: Optional[list[str]] = typer.Option(None, "--ids", help="only these task ids (repeatable; order kept)"),
        ids_file: Optional[Path] = typer.Option(None, "--ids-file", help="only the task ids listed in this file"),
        corpus: Optional[str] = typer.Option(None, "--corpus", help="offline | online (default: offline where a "
                                             "release is picked); tasks not usable on it are excluded"),
        judge: str = typer.Option("", "--judge", help="FastContext reward's LLM judge: openai:model=NAME,base_url=URL"),
        reward: str = typer.Option("relace", "--reward", help="the summary's headline `reward` column: relace | "
                                   "fastcontext | fastcontext-lenient | … (every reward is a column anyway)"),
        scoring: str = typer.Option("", "--scoring", help="also score as FastContext's run_score.py: fastcontext "
                                    "(its FILE_TYPES filter: no .py) or fastcontext-all (every file); adds fc_* "
                                    "columns and prints its result"),
        shard: str = typer.Option("", "--shard", help="i/n: run shard i (0-based) of n of the tasks, for several "
                                  "machines; merge with `fasbench eval-merge`"),
        perturb: str = typer.Option("", "--perturb", help="run on perturbed corpora: perturb[:seed=0,modules=2,dirs=1,"
                                    "private=6,reorder=4] (`fasbench data perturb`; gold and task text relocated)"),
    ):
        """Run a policy over tasks; append traces; write summary.parquet; print macro means with 95% CIs.

        Failed episodes (e.g. a model server down) are counted before the table, left out of its means,
        retried by a rerun of the same command, and make the exit status 3.

        Only the tasks usable on the chosen corpus kind run; the excluded count and reasons are
        printed (and written to OUT/excluded.jsonl) before the run starts."""
        # local import: fasbench.evaluation.evaluate/runs/polars cost ~7 s at CLI start-up (module docstring)
        from fasbench.evaluation.evaluate import last_call, run_eval, run_name
        from fasbench.base.paths import cache_dir
        from fasbench.harness import Limits
        from fasbench.scoring.reward import DEFAULT_REWARD

        if corpus not in (None, "offline", "online"):
            typer.echo(f"error: --corpus must be offline or online, got {corpus!r}", err=True)
            raise typer.Exit(2)
        try:
            if perturb:
                parse_perturb(perturb)  # a bad spec fails before any corpus is built
            ts_name = parse_task_set(tasks)
            ts = load_task_set(ts_name)
            source = f"{ts_name.target}:{ts_name.split}" if ts_name.kind == "file" and ts_name.split else (
                ts_name.target if ts_name.kind == "file" else tasks)  # a file by its absolute path
            chosen = list(ids or []) + (read_ids_file(ids_file) if ids_file else [])
            if chosen:
                ts = pick_ids(ts, chosen)
            available = len(ts)
            ts = ts[:limit] if limit else ts
            n = len(ts)
            if out is None:  # the default run name: every option that changes what the run holds
                out = cache_dir("runs") / run_name(f"eval-{policy.split(':', 1)[0]}", {
                    "policy": policy, "toolset": toolset, "tasks": source, "ids": chosen, "limit": limit,
                    "corpus": corpus, "max_turns": max_turns, "max_calls": max_calls, "shard": shard,
                    **({"report_contract": report_contract} if report_contract != "free" else {}),
                    **({"reward": reward} if reward != DEFAULT_REWARD else {}), **({"perturb": perturb} if perturb else {})})
                typer.echo(f"run directory: {out}", err=True)
            ts, excluded = usable(ts, corpus)
            if perturb:  # the same tasks on their perturbed corpora; a task that cannot be perturbed is excluded
                ts, unperturbed = perturb_tasks(ts, perturb)
                excluded = excluded + unperturbed
            typer.echo(describe_excluded(excluded, n, corpus), err=True)
            if excluded:
                out.mkdir(parents=True, exist_ok=True)
                write_tasks(out / "excluded.jsonl", excluded)
                for r in excluded[:10]:
                    typer.echo(f"  {r['id']}: {r['reason']} {r.get('detail', '')[:120]}", err=True)
            if shard:
                i, n_shards = parse_shard(shard)
                record_shard(out, i, n_shards, len(ts))
                ts = select_shard(ts, i, n_shards)
            count = describe_run_count(len(ts), limit or None, available, excluded, corpus, out / "excluded.jsonl")
            if not ts:
                raise ValueError(f"no task left to run ({count})")
            if limit or excluded or shard:
                typer.echo(count, err=True)
            df = run_eval(ts, policy, toolset, out, Limits(max_turns=max_turns, max_calls_per_turn=max_calls,
                                                       report_contract=report_contract),
                          workers or None, backend or None, judge=judge or None, reward=reward,
                          task_source=source + (f" (first {limit})" if limit else "") + (f" [{perturb}]" if perturb else ""),
                          corpus=corpus or corpus_kind_of(ts) or "default", warn=False,
                          scoring=[scoring] if scoring else [])
        except KeyboardInterrupt:  # bad input (ValueError, OSError) is the CLI group's one-line error
            typer.echo(f"interrupted: finished episodes are kept in {out / 'traces.jsonl'}; "
                       "the same command resumes", err=True)
            raise typer.Exit(130) from None
        failed = int(df["failed"].sum()) if "failed" in df.columns else 0
        if failed:  # before the table: e.g. a model server that still failed after the last retry
            typer.echo(f"{failed} of {df.height} episodes FAILED (model server or policy error; summary column "
                       "`error`, traces' meta.failed_requests): the means below leave them out; the same "
                       "command retries them", err=True)
        if df.height:
            typer.echo(summary_text(df, out))
            if scoring:
                # local import: loaded with fasbench.evaluation.evaluate above (~7 s at CLI start-up)
                from fasbench.scoring.localization import fastcontext_summary, fastcontext_warning

                typer.echo(f"FastContext run_score.py ({scoring}): " + json.dumps(fastcontext_summary(df)))
                if warn := fastcontext_warning(df, scoring):
                    typer.echo(warn, err=True)
        typer.echo(f"{df.height} episodes summarised in {out / 'summary.parquet'}")
        if limit or excluded or shard:
            typer.echo(count)
        for w in last_call(out).get("warnings") or ():  # no parsable tool call, calls read from text
            typer.echo(w, err=True)
        if failed:  # scripts notice: exit status 3
            typer.echo(f"{failed} episodes failed; exit status 3", err=True)
            raise typer.Exit(3)

    @app.command("policies")
    def policies_cmd(model_path: str = typer.Option("", "--model-path", help="print the local folder of an hf model "
                                                    "name (smollm2-offline, tiny; converted on first use) and exit")):
        """Every policy family: an example --policy spec and its parameters with defaults."""
        # local import: fasbench.policies and fasbench.models cost ~0.2 s of CPU at CLI start-up (python -X
        # importtime)
        from fasbench.models import resolve_model
        from fasbench.policies import describe_policies

        if model_path:
            typer.echo(resolve_model(model_path))
            return
        typer.echo(describe_policies())

    @app.command("runs")
    def runs_cmd(
        dirs: Optional[list[Path]] = typer.Argument(None, help="run directories or folders holding runs "
                                                    "(default: runs/ and CACHE/runs/)"),
        metric: Optional[list[str]] = typer.Option(None, "--metric", help="metrics to show (repeat or comma-separate)"),
        level: float = typer.Option(0.95, "--level", help="confidence level of the intervals"),
        as_json: bool = typer.Option(False, "--json", help="one JSON object per run instead of a table"),
        success: str = typer.Option("all_gold_at_5", "--success", help="run-to-run noise: the metric whose value "
                                    "≥ --threshold is a success (pass^k, flip rate)"),
        threshold: float = typer.Option(1.0, "--threshold", help="run-to-run noise: success threshold"),
        latex: Optional[Path] = typer.Option(None, "--latex", help="also write the table as booktabs LaTeX to this file"),
    ):
        """One table of all runs: policy, tool set, task source, n, main metrics with CIs, date, code version;
        then, where one policy was run more than once, its run-to-run noise (pass^k, flip rate)."""
        from fasbench.evaluation import runs as R  # local import: polars + fasbench.evaluation.evaluate, ~7 s at CLI start-up

        metrics = _metrics(metric, R.RUN_METRICS)
        _check_level(level)
        table = R.runs_table(dirs or None, metrics, level=level)
        if not table.height:
            raise R.RunError(f"no runs found under {', '.join(map(str, dirs or R.run_roots())) or 'runs/'}")
        for m in metrics if metric else ():  # a default metric older runs lack is shown as –
            if table[m].is_null().all():
                R.check_metrics(R.load_summary(table["path"][0]), [m], table["run"][0])
        noise = R.noise_table(dirs or None, success, threshold)
        if as_json:
            for r in table.iter_rows(named=True):
                typer.echo(json.dumps(r))
            return
        typer.echo(f"{table.height} runs; metric: mean [{level:.0%} interval over tasks: percentile bootstrap from 10 tasks, "
                   "Student t below (column interval), none for one task]")
        typer.echo(R.format_table(R.display_runs(table, metrics)))
        if latex:
            from fasbench.stats.tables import write_latex  # local import: polars, ~0.28 s of CPU; only --latex needs it

            typer.echo(f"LaTeX table: {write_latex(R.display_runs(table, metrics), latex, caption=table['interval'][0])}")
        typer.echo(R.noise_text(noise))


    @app.command("eval-merge")
    def eval_merge_cmd(
        out: Path = typer.Argument(..., help="new run directory for the merged run"),
        shards: list[Path] = typer.Argument(..., help="run directories of shards 0…n-1 (`fasbench eval --shard i/n`)"),
    ):
        """Merge the shards of one run into one run directory (traces, summary sorted by task id)."""
        # local import: fasbench.evaluation.evaluate costs ~7 s at CLI start-up (module docstring)
        from fasbench.evaluation.evaluate import aggregate
        from fasbench.evaluation.shards import merge_shards

        df = merge_shards(shards, out)
        if df.height:
            typer.echo(aggregate(df).to_pandas().to_string(index=False))
        typer.echo(f"{len(shards)} shards, {df.height} episodes merged into {out / 'summary.parquet'}")

    @app.command("compare")
    def compare_cmd(
        runs: list[str] = typer.Argument(..., help="run directories or run names; the first is the reference"),
        metric: Optional[list[str]] = typer.Option(None, "--metric", help="metrics (repeat or comma-separate); "
                                                   "default file_f2,line_f1,reward_relace_f2,turns,unseen_cited_share,calls_nothing_new_share (those every run has)"),
        level: float = typer.Option(0.95, "--level", help="confidence level of the intervals"),
        n_boot: int = typer.Option(2000, "--n-boot", min=100, help="bootstrap resamples (intervals above 20 tasks)"),
        as_json: bool = typer.Option(False, "--json", help="one JSON object per row instead of a table"),
        latex: Optional[Path] = typer.Option(None, "--latex", help="also write the table as booktabs LaTeX to this file"),
    ):
        """Paired comparison of each run against the first (run − reference) on their shared tasks: the
        two-sided sign-flip p (exact up to 20 tasks) beside its n, and the interval."""
        from fasbench.evaluation import runs as R  # local import: polars + fasbench.evaluation.evaluate, ~7 s at CLI start-up

        metrics = _metrics(metric, ()) or None  # None: the default metrics every run has
        _check_level(level)
        table = R.compare_runs(runs, metrics, level=level, n_boot=n_boot)
        if as_json:
            for r in table.iter_rows(named=True):
                typer.echo(json.dumps(r))
            return
        setups = {}
        for name, run in zip(dict.fromkeys([table["reference"][0], *table["run"].to_list()]), runs):
            meta = R.read_run_meta(R.resolve_run(run))
            setups[name] = (meta.get("toolset"), R.limits_label(meta))
            typer.echo(f"{name}: tasks {task_set_label(meta.get('task_source'), meta.get('corpus'))} · tool set "
                       f"{meta.get('toolset') or '–'} · limits {R.limits_label(meta) or '–'}")
        if len(set(setups.values())) > 1:
            typer.echo("note: the runs differ in tool set or turn/call limits (above): a difference is the policy's "
                       "and the setup's together")
        typer.echo(f"reference: {table['reference'][0]}; diff = run − reference over shared tasks with its "
                   f"{level:.0%} interval")
        typer.echo(R.compare_note(table, level))
        if R.failed_note(table):
            typer.echo(R.failed_note(table), err=True)
        typer.echo(R.format_table(R.display_compare(table)))
        if latex:
            from fasbench.stats.tables import write_latex  # local import: polars, ~0.28 s of CPU; only --latex needs it

            typer.echo(f"LaTeX table: {write_latex(R.display_compare(table), latex, caption=R.compare_note(table, level))}")


def summary_text(df, out: Path, level: float = 0.95) -> str:
    """``fasbench eval``'s end-of-run summary: the run, policy, tool set, task set, episodes (and whether
    the run was resumed) and code version once in a header line, then one table, a row per metric (the
    runs table's, then the localization columns defined for some task): mean, the bootstrap interval
    over tasks, n (tasks where the metric is defined). Writes the localization intervals to
    OUT/summary_ci.parquet."""
    # local import: polars + fasbench.evaluation.evaluate/runs/localization, ~7 s at CLI start-up (module docstring)
    import polars as pl
    from fasbench.evaluation import runs as R
    from fasbench.evaluation.evaluate import aggregate, split_failed
    from fasbench.scoring.localization import localization_columns

    run = R.runs_table([out], level=level).row(0, named=True)
    df = split_failed(df)[0]  # the means are over the episodes that ran (the header gives the failed count)
    rows = [(m, run[m], run[f"{m}_lo"], run[f"{m}_hi"], df[m].drop_nulls().len() if m in df.columns else run["n"])
            for m in R.RUN_METRICS]
    loc = [c for c in localization_columns(df) if df[c].null_count() < df.height]
    if loc:
        ci = aggregate(df, loc)
        n = {(p, m): df.filter(pl.col("policy") == p)[m].drop_nulls().len()
             for p in ci["policy"] for m in loc}  # tasks with this gold (null = not defined)
        ci = ci.with_columns([pl.Series(f"n_{m}", [n[(p, m)] for p in ci["policy"]]) for m in loc])
        ci.write_parquet(out / "summary_ci.parquet")
        for r in ci.iter_rows(named=True):
            rows += [(m, r[m], r[f"{m}_lo"], r[f"{m}_hi"], n[(r["policy"], m)]) for m in loc
                     if m not in R.RUN_METRICS]  # e.g. file_f2 is both: shown once
    head = (f"run {run['run']} · policy {run['policy']} · tool set {run['toolset']} · tasks {run['task_source']} · "
            f"{run['n']} episodes" + (f", {run['failed']} failed (left out)" if run.get("failed") else "")
            + (f" ({run['resumed']})" if run.get("resumed") else "") + f" · code {run['code']}"
            + f"\nintervals over tasks: {run['interval']}" + (f" · limits {run['limits']}" if run.get("limits") else ""))

    def num(x) -> str:
        return "n/a" if x is None or x != x else f"{x:.3f}"

    cells = [(m, num(v), f"[{num(lo)}, {num(hi)}]", str(k)) for m, v, lo, hi, k in rows]
    w = [max(len(c[i]) for c in cells + [("metric", "mean", f"{level:.0%} CI", "n")]) for i in range(4)]
    lines = [head, f"{'metric':<{w[0]}}  {'mean':>{w[1]}}  {f'{level:.0%} CI':<{w[2]}}  {'n':>{w[3]}}"]
    lines += [f"{m:<{w[0]}}  {v:>{w[1]}}  {c:<{w[2]}}  {k:>{w[3]}}" for m, v, c, k in cells]
    return "\n".join(lines)


def _metrics(given, default) -> list[str]:
    out = [m.strip() for g in (given or []) for m in g.split(",") if m.strip()]
    return out or list(default)


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"--level must be between 0 and 1 (e.g. 0.95), got {level}")
