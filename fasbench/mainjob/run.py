"""``make run``'s notebook runner: each notebook through papermill, with a hang guard that load cannot trip.

A wall-clock limit per cell (papermill's ``--execution-timeout``) is tripped by a busy machine: at load
6–10 notebook 06's SFT cell ran past 900 s and the whole notebook ran twice. The hang this guards against
is a different thing — papermill waiting forever for a message from an idle kernel (seen about once in
ten runs of notebook 07) — and it has a signature load does not have: *no progress at all*. So the guard
watches progress, not time: the CPU time of papermill's whole process tree (papermill, the kernel and
anything the kernel started, e.g. a model server) and the output notebook papermill saves after every
cell. A notebook whose tree used less than ``min_cpu`` CPU-seconds and saved nothing during ``idle_s``
seconds is stopped (its process group killed) and run once more. A busy machine slows a working cell
down but still gives it CPU time, so the guard does not fire on load; an idle kernel gets none.

The log of each attempt goes to ``OUT/<notebook>.log``; on a failure one line says what failed (the
notebook's error name and message, or the hang) and where the log is, not a whole traceback.
``OUT/run.json`` (:data:`RUN_FILE`, rewritten after each notebook) records the run for the report's header:
start and end (UTC), total seconds, the code version, the machine (cores, memory, load at start), the
checkout's folder (so the report can leave it out of its text), ``FASBENCH_SHORT``, and each notebook's
seconds, tries and outcome.
Usage: ``python -m fasbench.mainjob.run OUT NOTEBOOK [NOTEBOOK ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil  # installed with ipykernel, which executes the notebooks

from fasbench.base.paths import child, repo_root
from fasbench.base.provenance import code_version

RUN_FILE = "run.json"

#: Seconds without progress (CPU time of the process tree, saved output) after which a notebook is hung.
IDLE_S = 600.0
#: CPU-seconds the process tree must use within ``IDLE_S`` to count as working (a kernel idling in a
#: poll loop uses far less; any cell doing work uses far more).
MIN_CPU = 2.0
#: Seconds between two looks at the process tree.
POLL_S = 5.0


def tree_cpu(pid: int) -> float:
    """CPU-seconds (user + system) used so far by process ``pid`` and all its descendants alive now."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
        except psutil.Error:
            continue
    return total


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def error_line(output: Path) -> str | None:
    """The first error output of an executed notebook as one line (``Name: message``), if it has one."""
    try:
        nb = json.loads(output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        for o in cell.get("outputs", []) if isinstance(cell, dict) else []:
            if isinstance(o, dict) and o.get("output_type") == "error":
                msg = str(o.get("evalue", "")).strip().splitlines()
                return f"{o.get('ename', 'Error')}: {msg[0] if msg else ''}"[:300]
    return None


def run_once(
    notebook: Path, output: Path, log: Path, *, idle_s: float = IDLE_S, min_cpu: float = MIN_CPU, poll_s: float = POLL_S
) -> tuple[bool, str]:
    """Run ``notebook`` once through papermill into ``output`` (log appended to ``log``), watching for a
    hang. Returns ``(ok, reason)``: the reason is empty when it passed."""
    cmd = [
        sys.executable,
        "-m",
        "papermill",
        "--cwd",
        ".",
        "--log-output",
        "--no-progress-bar",
        str(notebook),
        str(output),
    ]
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"== {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        last_cpu, last_save, last_progress = 0.0, _mtime(output), time.monotonic()
        while proc.poll() is None:
            time.sleep(poll_s)
            cpu, save = tree_cpu(proc.pid), _mtime(output)
            if cpu - last_cpu >= min_cpu or save != last_save:
                last_cpu, last_save, last_progress = cpu, save, time.monotonic()
            elif time.monotonic() - last_progress > idle_s:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return False, f"no progress for {idle_s:.0f} s (hung kernel); stopped"
    if proc.returncode == 0:
        return True, ""
    return False, error_line(output) or f"papermill exited {proc.returncode}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> dict:
    """This machine as the report's header names it: cores, memory, load, system."""
    try:
        load = round(os.getloadavg()[0], 1)
    except OSError:  # pragma: no cover - no load average on this system
        load = None
    return {
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_1min": load,
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
    }


def write_run_record(out_dir: Path, record: dict) -> Path:
    """``out_dir/run.json`` (:data:`RUN_FILE`): the run so far."""
    p = out_dir / RUN_FILE
    p.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return p


def run_all(out_dir: Path, notebooks: list[Path], *, idle_s: float = IDLE_S, tries: int = 2) -> int:
    """Run each notebook in order (each up to ``tries`` times); 0 when all passed, else 1. A notebook that
    failed every try does not stop the others (its line names it; a last line lists every failure).
    ``out_dir/run.json`` records the run (see the module's docstring)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    record = {
        "started": _now(),
        "finished": None,
        "total_s": None,
        "code": code_version(),
        "machine": machine(),
        "checkout": str(repo_root()),
        "short": os.environ.get("FASBENCH_SHORT") == "1",
        "notebooks": [],
    }
    write_run_record(out_dir, record)
    status = 0
    for nb in notebooks:
        output, log = out_dir / nb.name, child(out_dir, nb.stem, ".log", "notebook log")
        log.write_text("", encoding="utf-8")
        print(f"== {nb}", flush=True)
        t0 = time.monotonic()
        entry = {"notebook": nb.name, "seconds": None, "tries": 0, "ok": False}
        record["notebooks"].append(entry)
        for attempt in range(1, tries + 1):
            ok, reason = run_once(nb, output, log, idle_s=idle_s)
            entry.update(tries=attempt, seconds=round(time.monotonic() - t0, 1), ok=ok)
            if ok:
                print(f"   done in {time.monotonic() - t0:.0f} s", flush=True)
                break
            more = "; running it once more" if attempt < tries else ""
            print(f"== {nb.name} failed (try {attempt}): {reason} — log: {log}{more}", file=sys.stderr, flush=True)
        else:
            status = 1
        record.update(finished=_now(), total_s=round(time.monotonic() - start, 1))
        write_run_record(out_dir, record)
    failed = [e["notebook"] for e in record["notebooks"] if not e["ok"]]
    if failed:
        print(
            f"== {len(failed)} of {len(notebooks)} notebooks failed: {', '.join(failed)}", file=sys.stderr, flush=True
        )
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fasbench.mainjob.run", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the executed notebooks and their logs")
    ap.add_argument("notebooks", type=Path, nargs="+")
    ap.add_argument("--idle", type=float, default=IDLE_S, help="seconds without progress that count as a hang")
    a = ap.parse_args(argv)
    return run_all(a.out, a.notebooks, idle_s=a.idle)


if __name__ == "__main__":
    sys.exit(main())
