"""``fasbench data …``: build task files, materialise corpora, mine a git history. Bad input (a
``ValueError``: task sets, records, imports, a repository git cannot read) escapes to the CLI group,
which prints it as one line and exits 2 (fasbench/base/errors.py)."""

from __future__ import annotations

import collections
from pathlib import Path

import typer

from fasbench.base.errors import UserError
from fasbench.data.corpora import with_corpora
from fasbench.data.corpus import materialize_many, resolve_root
from fasbench.data.gitmine import mine
from fasbench.data.importers import check_usability, import_gold
from fasbench.data.perturb import parse_perturb
from fasbench.data.perturb_gold import perturb_many
from fasbench.data.ship import ship
from fasbench.data.splits import assign
from fasbench.data.tasksets import load_task_set, task_set_tasks
from fasbench.records import write_tasks


def register(app: typer.Typer) -> None:
    data = typer.Typer(no_args_is_help=True, help="task sets and corpora")
    app.add_typer(data, name="data")

    @data.command("tasks")
    def tasks_cmd(
        source: str = typer.Option(
            ...,
            "--source",
            help="task set: SOURCE[:SPLIT] (swebench-lite | swebench-verified | "
            "agent-traces), a Task JSONL file[:SPLIT], or git:PATH",
        ),
        out: Path = typer.Option(..., "--out", help="output JSONL (.gz accepted by readers)"),
        split: str | None = typer.Option(
            None,
            "--split",
            help="fasbench's own split: fasbench-train | fasbench-dev | fasbench-test (bare train | dev | test also accepted; default: all)",
        ),
        rebuild: bool = typer.Option(False, "--rebuild", help="build a SOURCE from the raw data, not data/tasks/"),
    ):
        """Write the Task records of a task set, one JSON per line."""
        ts = task_set_tasks(source, split, rebuild)
        if out.is_dir():
            raise UserError(f"--out {out} is a folder; give a file name")
        write_tasks(out, ts)
        typer.echo(f"{len(ts)} tasks -> {out}")

    @data.command("corpus")
    def corpus_cmd(
        tasks: str = typer.Option(
            ..., "--tasks", help="task set: a Task JSONL file[:SPLIT], SOURCE[:SPLIT] or git:PATH"
        ),
        ids: list[str] | None = typer.Option(None, "--ids", help="only these task ids (repeatable)"),
        mode: str | None = typer.Option(
            None, "--mode", help="offline | online (default: offline if a release is picked)"
        ),
        manifest: Path | None = typer.Option(None, "--manifest", help="append one JSON line per task here"),
        out: Path | None = typer.Option(None, "--out", help="write the usable tasks (root set, gold relocated)"),
    ):
        """Materialise each task's corpus; prints per task: id, located yes/no, corpus path or reason."""
        ts = load_task_set(tasks, ids=ids or None)
        ok, rows = materialize_many(ts, mode=mode, manifest=manifest, progress=False)
        for r in rows:
            where = resolve_root(r["root"]) if r["located"] else f"{r['reason']}: {r['detail']}"
            typer.echo(f"{r['id']}\t{'located' if r['located'] else 'dropped'}\t{r.get('status')}\t{where}")
        typer.echo(f"{len(ok)}/{len(rows)} located", err=True)
        if out:
            write_tasks(out, ok)

    @data.command("perturb")
    def perturb_cmd(
        tasks: str = typer.Option(
            ..., "--tasks", help="task set: SOURCE[:SPLIT], a Task JSONL file[:SPLIT] or git:PATH"
        ),
        spec: str = typer.Option(
            "perturb",
            "--spec",
            help="perturb[:seed=0,modules=2,dirs=1,private=6,reorder=4]: "
            "how many modules, packages, private names and files of functions to perturb",
        ),
        ids: list[str] | None = typer.Option(None, "--ids", help="only these task ids (repeatable)"),
        limit: int = typer.Option(0, "--limit", min=0, help="the first N usable tasks (0 = all)"),
        mode: str | None = typer.Option(
            None, "--mode", help="offline | online (default: offline if a release is picked)"
        ),
        out: Path | None = typer.Option(None, "--out", help="write the perturbed tasks (root, gold, text) here"),
        check: bool = typer.Option(
            False,
            "--check",
            help="also check every relocated gold line and that the touched "
            "modules import and their tests collect where the original's did",
        ),
    ):
        """Build a semantics-preserving variant of each task's corpus (fasbench.data.perturb): renamed
        modules and packages with their imports rewritten (rope), renamed private names, reordered
        functions; gold and task text relocated exactly; the record (seed, mapping) beside the tree."""
        sp = parse_perturb(spec)  # a bad spec, task set or id: a ValueError, one line (exit 2) from the CLI group
        got = with_corpora(
            load_task_set(tasks, ids=ids or None), mode, limit=limit or None, progress=False, strict=bool(ids)
        )
        for r in got.skipped:
            typer.echo(f"{r['task_id']}\tskipped\t{r['reason']}: {r['detail'][:120]}", err=True)
        done, bad = [], 0
        for line, p, failed in perturb_many(got.tasks, sp, check):
            typer.echo(line, err=p is None)
            done += [p] if p is not None else []
            bad += failed
        typer.echo(f"{len(done)}/{len(got.tasks)} perturbed with {sp.text()}", err=True)
        if out:
            write_tasks(out, done)
        if check and bad:
            raise UserError(f"{bad} perturbed tasks failed the check")

    @data.command("import")
    def import_cmd(
        fmt: str = typer.Argument(..., help="swe-explore | locbench | contextbench | swebench-pro"),
        file: Path = typer.Argument(..., help="the benchmark file (JSONL or a JSON list; contextbench: also .parquet)"),
        out: Path = typer.Option(..., "--out", help="output Task JSONL"),
        check: bool = typer.Option(
            True,
            "--check/--no-check",
            help="materialise each task offline (downloading "
            "its sdist when missing) and say whether it is usable offline and online",
        ),
    ):
        """Turn another benchmark's gold (SWE-Explore read regions, Loc-Bench entity lists, ContextBench
        gold contexts, SWE-bench Pro gold patches) into tasks.

        Prints, per task, whether it is usable offline (its gold placed on the picked sdist, or the
        drop reason) and online (the exact base commit), before any eval; records unusable as tasks
        are listed too. Runs relocate the gold again when they materialise the corpus."""
        ts, dropped = import_gold(fmt, file)
        why = dict(collections.Counter(d["reason"] for d in dropped))
        if not ts:
            raise UserError(
                f"{file}: no record could be imported as a {fmt} task"
                + (f" (dropped {len(dropped)}: {why})" if dropped else "")
            )
        for line in check_usability(ts) if check else ():
            typer.echo(line)
        n_off = sum(t.meta["gold_import"]["usable"]["offline"].startswith("usable") for t in ts) if check else 0
        write_tasks(out, ts)
        typer.echo(
            f"{len(ts)} tasks -> {out}"
            + (f"; usable offline: {n_off}/{len(ts)}" if check else "")
            + (f"; dropped {len(dropped)}: {why}" if dropped else "")
        )

    @data.command("mine-git")
    def mine_git_cmd(
        repo_path: Path = typer.Argument(..., help="a local git repository"),
        out: Path = typer.Option(..., "--out", help="output Task JSONL"),
        rev: str = typer.Option("HEAD", "--rev"),
        max_commits: int | None = typer.Option(None, "--max-commits"),
        max_files: int = typer.Option(20, "--max-files", help="skip commits changing more files"),
        max_lines: int = typer.Option(1000, "--max-lines", help="skip commits changing more lines"),
    ):
        """Turn a repository's commits into search tasks (message -> query, old-file hunks -> gold)."""
        ts, skipped = mine(repo_path, rev=rev, max_commits=max_commits, max_files=max_files, max_lines=max_lines)
        write_tasks(out, assign(ts))
        why = collections.Counter(s["reason"] for s in skipped)
        typer.echo(f"{len(ts)} tasks -> {out}; skipped: {dict(why)}")

    @data.command("fc-queries")
    def fc_queries_cmd(
        tasks: str = typer.Option(
            ..., "--tasks", help="task set: SOURCE[:SPLIT], a Task JSONL file[:SPLIT] or git:PATH"
        ),
        endpoint: str = typer.Option(
            ...,
            "--endpoint",
            help="the main agent: openai:model=NAME,base_url=URL[,temperature=…]"
            " (temperature defaults to the release's 1.0)",
        ),
        out: Path = typer.Option(..., "--out", help="queries JSONL, one record per task (appended; resumed)"),
        tasks_out: Path | None = typer.Option(None, "--tasks-out", help="write the tasks with meta.fc_query set here"),
        ids: list[str] | None = typer.Option(None, "--ids", help="only these task ids (repeatable)"),
        n: int | None = typer.Option(None, "--n", help="only the first N tasks"),
        retry_failed: bool = typer.Option(False, "--retry-failed", help="ask again for tasks whose generation failed"),
    ):
        """FastContext's query as released (query_gen.py @5fb8c1d): the prompt of a main agent's subagent call."""
        # local import: fc_queries loads fasbench.policies (heavy); only this command needs it
        from fasbench.data.fc_queries import generate, make_client, with_queries

        client = make_client(endpoint)
        ts = load_task_set(tasks, ids=ids or None)
        if n is not None:
            if n < 1:
                raise UserError(f"--n must be >= 1, got {n}")
            ts = ts[:n]
        recs = generate(ts, client, out, retry_failed=retry_failed)
        ok = [r for r in recs.values() if r.get("fc_query")]
        for r in recs.values():
            if not r.get("fc_query"):
                typer.echo(f"{r['task_id']}\tfailed\t{r.get('error')}", err=True)
        if tasks_out:
            write_tasks(tasks_out, with_queries(ts, recs))
        typer.echo(f"{len(ok)}/{len(ts)} queries -> {out}" + (f"; tasks -> {tasks_out}" if tasks_out else ""))

    @data.command("ship")
    def ship_cmd(
        corpora: bool = typer.Option(
            False,
            "--corpora",
            help="also materialise every SWE-bench task offline "
            "and write data/tasks/offline_manifest.jsonl.gz (downloads ~300 MB)",
        ),
    ):
        """Rebuild data/tasks/<source>.jsonl.gz (and the offline manifest) from the raw data."""
        for line in ship(corpora=corpora):
            typer.echo(line)
