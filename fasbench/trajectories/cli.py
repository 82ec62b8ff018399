"""``fasbench classify`` and ``fasbench trajectories analyze`` (registered by fasbench.cli's PLUGINS)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from fasbench.base.errors import printable
from fasbench.base.paths import Names, UnsafeName, child
from fasbench.trajectories.classify import analyze
from fasbench.trajectories.raw import read_text
from fasbench.trajectories.trajectory import FORMAT_NAMES, SUPPORTED, TrajectoryError

SHOW_SKIPPED = 20  # skipped files named on the terminal; summary.json lists them all


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def classify_cmd(
    details: bool = typer.Option(False, "--details", help="print each action's analysis as JSON instead"),
):
    """Read actions from stdin, one JSON-encoded string per line; print one category per line."""
    for i, line in enumerate(sys.stdin, 1):
        if not line.strip():
            _fail(f'stdin line {i}: empty; expected a JSON-encoded string such as "ls -la"')
        try:
            action = json.loads(line)
        except json.JSONDecodeError as e:
            _fail(f'stdin line {i}: not JSON ({e}); expected a JSON-encoded string such as "ls -la"')
        if not isinstance(action, str):
            _fail(f"stdin line {i}: expected a JSON string, got {type(action).__name__}")
        a = analyze(action)
        typer.echo(json.dumps(a._asdict()) if details else a.category)


def analyze_cmd(
    paths: list[Path] = typer.Argument(..., help="trajectory files or folders (gzip or plain; formats detected)"),
    out: Path = typer.Option(..., "--out", help="folder for steps.parquet and summary.json"),
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="{instance_id: resolved} JSON[.gz] (default: found "
        "beside the trajectories: resolved.json[.gz], eval_reports/, sb-cli-report.json)",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="first N files of each path (smoke runs)"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
):
    """Parse, classify and measure trajectories; write OUT/steps.parquet, OUT/summary.json and
    OUT/skipped.jsonl (each file that was not read, with the reason).

    Formats (detected from the content; files may be gzipped):

    \b
    {formats}

    Files that cannot be read are skipped and listed; when none can, the command fails with the
    reason (what the file holds) and the formats above. An ATIF file of an unknown version or a
    shape the published schema refuses is skipped with that reason."""
    # local import: the analysis (polars, tokenizers) is heavy to import
    from fasbench.trajectories.analysis import analyze_paths

    for p in paths:
        if not p.exists():
            _fail(f"no such file or folder: {p}")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} exists and is not a folder")
    lab = None
    if labels is not None:
        if not labels.is_file():
            _fail(f"--labels {labels} is not a file")
        try:
            lab = json.loads(read_text(labels))  # bounded (a gzip bomb stops at the cap), a FIFO refused
        except (json.JSONDecodeError, OSError, TrajectoryError) as e:
            _fail(f"--labels {labels}: not JSON ({e})")
        if not isinstance(lab, dict):
            _fail(f"--labels {labels}: expected an object {{instance_id: true|false}}")
        lab = {str(k): bool(v) for k, v in lab.items()}
    a = analyze_paths(paths, labels=lab, progress=not quiet, limit=limit)
    skipped = _write_skipped(out, a.files.skipped)
    if not a.files.parsed:
        _nothing_parsed(paths, a.files, skipped)
    steps, summary = a.write(out)
    s = json.loads(summary.read_text(encoding="utf-8"))
    f = s["files"]
    o = s["overall"]
    typer.echo(
        f"parsed {f['parsed']} files ({s['trajectories']} trajectories, {s['actions']} actions); "
        f"skipped {f['skipped']}" + (f" {f['skipped_by_reason']}" if f["skipped"] else "")
    )
    _show_skipped(a.files.skipped, skipped)
    if o and o.get("read_search_turn_share") is None:  # trajectories without a tool call: no shares
        typer.echo(f"read+search: no tool calls in the {s['trajectories']} trajectories (no shares)")
    elif o:
        typer.echo(
            f"read+search: {o['read_search_turn_share']:.3f} of tool turns, {o['read_search_token_share']:.3f} "
            f"of tokens; first edit turn mean "
            + ("n/a (no edit)" if o.get("first_edit_turn_mean") is None else f"{o['first_edit_turn_mean']:.2f}")
        )
    r = s.get("relace") or {}
    if r.get("search_phase_share"):
        sp, ini = r["search_phase_share"], r["initial_search_share"]
        typer.echo(
            f"tokens before the first non-search call: {sp['value']:.3f} mean per trajectory "
            f"[{sp['ci'][0]:.3f}, {sp['ci'][1]:.3f}] (Relace: {sp['seed']} on ~1,200 real agent traces, not "
            f"SWE-bench); {ini['value']:.3f} pooled [{ini['ci'][0]:.3f}, {ini['ci'][1]:.3f}] (Relace's initial "
            f"search: ~{ini['seed']} on SWE-bench Verified); n={r['n']}"
        )
    sub = r.get("subagents_counted") or {}
    if o and o.get("delegations") and sub.get("search_phase_share"):
        w, ssp, sini = o["with_subagents"], sub["search_phase_share"], sub["initial_search_share"]
        typer.echo(
            f"{o['delegations']} delegation calls: subagents' work left out (above) | counted as search: "
            f"read+search {w['read_search_turn_share']:.3f} of tool turns, {w['read_search_token_share']:.3f} "
            f"of tokens; tokens before the first non-search call {ssp['value']:.3f} mean "
            f"[{ssp['ci'][0]:.3f}, {ssp['ci'][1]:.3f}], {sini['value']:.3f} pooled"
        )
    typer.echo(f"wrote {steps}, {summary} and {skipped}")


analyze_cmd.__doc__ = analyze_cmd.__doc__.replace(
    "{formats}", "\n    ".join(f"{k}: {v}" for k, v in FORMAT_NAMES.items())
)


def export_atif_cmd(
    src: Path = typer.Argument(..., help="a run directory (its traces.jsonl) or a traces.jsonl[.gz] file"),
    out: Path = typer.Option(..., "--out", help="folder for one ATIF JSON file per trace (TRACE_ID.json)"),
):
    """Write every fasbench trace of SRC as an ATIF-v1.7 trajectory (Harbor's Agent Trajectory
    Interchange Format), checked against the published schema; `fasbench trajectories analyze`
    reads them back as the same traces."""
    # local import: the exporter imports fasbench.tools and jsonschema, heavy
    # (python -X importtime: jsonschema's rfc3987_syntax), paid only by this command
    from fasbench.records import RecordError, read_traces
    from fasbench.trajectories.atif_trace import to_atif

    if src.is_dir() and (src / "records.jsonl").is_file() and (src / "search_traces.jsonl").is_file():
        return _export_e2e(src, out)
    f = src / "traces.jsonl" if src.is_dir() else src
    if src.is_dir() and not f.exists() and (src / "traces.jsonl.gz").exists():
        f = src / "traces.jsonl.gz"
    if not f.is_file():
        _fail(f"no traces at {src}: expected a run directory with traces.jsonl or a traces.jsonl file")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} exists and is not a folder")
    try:
        traces = read_traces(f)
    except (RecordError, ValueError, OSError) as e:
        _fail(f"{f}: {e}")
    out.mkdir(parents=True, exist_ok=True)
    names, skipped, wrote = Names("trace id"), [], 0
    for i, tr in enumerate(traces, 1):
        try:  # the file is named by the trace id: through fasbench.base.paths (no ../, no absolute, no repeat)
            target = child(out, names.claim(tr.trace_id), ".json", "trace id")
            doc = to_atif(tr)
        except (UnsafeName, TrajectoryError) as e:  # one bad trace is a skip, the others are written
            skipped.append((f"{f} trace {i}", str(e)))
            continue
        target.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        wrote += 1
    typer.echo(f"wrote {wrote} ATIF trajectories to {out}")
    if skipped:
        listed = _write_skipped(out, skipped)
        typer.echo(f"skipped {len(skipped)} traces (listed in {listed}):")
        _show_skipped(skipped, listed, formats=False)


def _export_e2e(src: Path, out: Path) -> None:
    """An e2e run folder: each main agent of the search arm with its search episode embedded (ATIF v1.7
    ``subagent_trajectories``), one file per task; a task that cannot be read is named and skipped."""
    # local import: the replay tree imports the trajectory parsers and jsonschema (heavy,
    # python -X importtime), paid only by this command
    from fasbench.base.paths import name_key
    from fasbench.records import iter_jsonl
    from fasbench.trajectories.atif_tree import tree_to_atif
    from fasbench.trajectories.e2e_runs import e2e_main

    if out.exists() and not out.is_dir():
        _fail(f"--out {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    ids = list(
        dict.fromkeys(
            r.get("task_id")
            for r in iter_jsonl(src / "records.jsonl")
            if r.get("arm") == "search" and isinstance(r.get("task_id"), str)
        )
    )
    n = 0
    for tid in ids:
        try:
            main, traces = e2e_main(src, tid)
            doc = tree_to_atif(main, traces)
        except (ValueError, OSError) as e:
            typer.echo(f"  skipped task {tid}: {e}")
            continue
        child(out, name_key(tid, "e2e task id"), ".json", "task key").write_text(
            json.dumps(doc, ensure_ascii=False), encoding="utf-8"
        )
        n += 1
    typer.echo(f"wrote {n} ATIF trajectories (main agent with its search episode) to {out}")


def _write_skipped(out: Path, skipped: list[tuple[str, str]]) -> Path:
    """OUT/skipped.jsonl: one {"path", "reason"} per file that was not read (nothing is lost)."""
    out.mkdir(parents=True, exist_ok=True)
    p = out / "skipped.jsonl"
    p.write_text(
        "".join(json.dumps({"path": f, "reason": r}, ensure_ascii=False) + "\n" for f, r in skipped), encoding="utf-8"
    )
    return p


def _show_skipped(skipped: list[tuple[str, str]], listed: Path, formats: bool = True) -> None:
    for f, r in skipped[:SHOW_SKIPPED]:
        typer.echo(f"  skipped {printable(f, 200)}: {printable(r, 300)}")
    if len(skipped) > SHOW_SKIPPED:
        typer.echo(f"  ... and {len(skipped) - SHOW_SKIPPED} more skipped files (all listed in {listed})")
    if formats and any(r.startswith("unknown trajectory layout") for _, r in skipped):
        typer.echo(f"  {SUPPORTED}")


def _nothing_parsed(paths: list[Path], files, listed: Path) -> None:
    """No file was read: one error line naming the file, the reason and the formats; exit 2."""
    bad = [(f, r) for f, r in files.skipped if not r.startswith("labels unreadable")]
    where = ", ".join(map(str, paths))
    if not bad:
        ign = (
            f" ({len(files.ignored)} other files ignored, e.g. {files.ignored[0][0]}: {files.ignored[0][1]})"
            if files.ignored
            else ""
        )
        _fail(
            f"no trajectory files under {where}: names must end in .traj, .json or .jsonl (.gz allowed){ign}; "
            f"{SUPPORTED}"
        )
    if len(bad) > 1:
        _show_skipped(bad, listed, formats=False)
    f, r = bad[0]
    head = (
        f"{f}: {r}"
        if len(bad) == 1
        else f"none of the {len(bad)} trajectory files parsed (first: {f}: {r}; all in {listed})"
    )
    _fail(f"{head}; {SUPPORTED}")


def register(app: typer.Typer) -> None:
    app.command("classify")(classify_cmd)
    traj = typer.Typer(no_args_is_help=True, help="Main-agent trajectory analysis.")
    traj.command("analyze")(analyze_cmd)
    traj.command("export-atif")(export_atif_cmd)
    app.add_typer(traj, name="trajectories")
