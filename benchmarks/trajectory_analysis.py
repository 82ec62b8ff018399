"""Trajectory analysis speed against an I/O floor, on the 500 Gemini-3-Pro mini-swe-agent runs.

floor    = gunzip + JSON parse of the same files (fasbench.trajectories.parsers.read_text + json.loads);
analysis = fasbench.trajectories.analysis.analyze_paths on the folder + the summary (parse, classify,
           frames, first-edit statistics).
Both are timed in this run, alternating, best of --repeats; the classifier's memo is cleared before
every analysis run. The ratio is taken on CPU time (time.process_time: stable on a shared machine,
where wall time swings with other jobs; polars' worker threads are included, which only raises it);
the wall-clock ratio is printed above it. The last line is ``analysis/io_floor=X`` (target X <= 2.0).

    python benchmarks/trajectory_analysis.py [--repeats 7] [PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

# The frames here have ~20k rows: polars' worker pool adds only spinning CPU time, which process_time
# would count; one thread does the same work (set before polars is imported).
os.environ.setdefault("POLARS_MAX_THREADS", "1")

from fasbench.base.paths import data_dir  # noqa: E402
from fasbench.trajectories.analysis import analyze_paths  # noqa: E402
from fasbench.trajectories.classify import analyze  # noqa: E402
from fasbench.trajectories.parsers import read_text  # noqa: E402
from fasbench.trajectories.trajectory_files import FileReport, discover  # noqa: E402

DEFAULT = data_dir() / "trajectories" / "mini-swe-agent_gemini-3-pro_swebench-verified"


def floor(files: list[Path], gc_off: bool = False) -> tuple[float, float]:
    """The plain loop (the floor of the last line). With gc_off, the garbage collector is off as in
    the analysis' parse loop; that variant is printed for reference."""
    import gc

    if gc_off:
        gc.disable()
    try:
        w, c = time.perf_counter(), time.process_time()
        for f in files:
            json.loads(read_text(f))
        return time.perf_counter() - w, time.process_time() - c
    finally:
        gc.enable()


def analysis(path: Path) -> tuple[float, float, dict]:
    analyze.cache_clear()
    w, c = time.perf_counter(), time.process_time()
    a = analyze_paths([path], progress=False)
    s = a.summary()
    return time.perf_counter() - w, time.process_time() - c, s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    path = Path(args.path)
    files = [f for f, _ in discover([path], FileReport())]
    analysis(path)  # warm-up: imports, tree-sitter grammar, page cache
    floors, floors_nogc, runs = [], [], []
    for _ in range(args.repeats):
        floors.append(floor(files))
        floors_nogc.append(floor(files, gc_off=True))
        *times, s = analysis(path)
        runs.append(times)
    o = s["overall"]
    fw, fc = min(x[0] for x in floors), min(x[1] for x in floors)
    aw, ac = min(x[0] for x in runs), min(x[1] for x in runs)
    print(f"files={len(files)} trajectories={s['trajectories']} actions={s['actions']} skipped={s['files']['skipped']}")
    print(
        f"read_search_turn_share={o['read_search_turn_share']:.3f} first_edit_turn_mean={o['first_edit_turn_mean']:.2f}"
    )
    print(f"io_floor wall_s={fw:.3f} cpu_s={fc:.3f}; analysis wall_s={aw:.3f} cpu_s={ac:.3f}")
    fn = min(x[1] for x in floors_nogc)
    print(f"io_floor with the garbage collector off: cpu_s={fn:.3f}; analysis/that={ac / fn:.2f}")
    print(f"analysis/io_floor (wall)={aw / fw:.2f}")
    print(f"analysis/io_floor={ac / fc:.2f}")


if __name__ == "__main__":
    main()
