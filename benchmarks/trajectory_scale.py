"""Trajectory analysis at 50,000 trajectories: time per trajectory against 500, and peak memory.

The shipped trajectories (``data/trajectories/``, every data set) are sampled to 500 files (seed 0),
and those 500 are replicated 100 times into a temporary folder — 50,000 files, hard links where the
file system allows (the bytes are the same, each file is read, decompressed and parsed again),
named ``r<k>_<i>__<name>`` (copy k of file i) so that every copy is its own trajectory (its id is the file's stem), with
the labels beside them. Each size runs ``analyze_paths`` + ``summary()`` in a fresh child process
(``/usr/bin/time``-style peak RSS from ``getrusage(RUSAGE_CHILDREN)`` of that child alone). The
classifier memoises actions it has seen; the copies would hit that memo where distinct trajectories
would not, so both sizes run with the memo warmed on the 500 first (the 50k run then measures the
cost of scale — parsing, frames, memory — not the memo's luck). Time is CPU time of the child
(stable on a shared machine); wall time is printed too.

Last line: ``per_traj_50k/per_traj_500=X peak_rss_gb=Y`` (targets X <= 1.3, Y <= 2; Y is the 50k run).

    python benchmarks/trajectory_scale.py [--n 50000] [--base 500]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fasbench.base.paths import data_dir
from fasbench.trajectories.trajectory_files import FileReport, discover, load_labels

CHILD = r"""
import json, os, resource, sys, time
os.environ.setdefault("POLARS_MAX_THREADS", "1")
from fasbench.trajectories.analysis import analyze_paths
warm, path = sys.argv[1], sys.argv[2]
analyze_paths([warm], progress=False)  # warms the classifier memo (and imports) on the 500
w, c = time.perf_counter(), time.process_time()
a = analyze_paths([path], progress=False)
s = a.summary()
out = {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c, "trajectories": s["trajectories"],
       "actions": s["actions"], "skipped": s["files"]["skipped"], "steps_mb": a.steps.estimated_size() / 1e6,
       "read_search_turn_share": s["overall"]["read_search_turn_share"]}
print(json.dumps(out))
"""


def replicate(files: list[Path], dest: Path, copies: int, labels: dict) -> None:
    """``copies`` links (or copies) of every file under new, distinct names. Two data sets hold
    files of the same name, so the name carries the file's index too; a target never exists before
    (writing through an existing hard link would overwrite the shipped file)."""
    dest.mkdir(parents=True)
    (dest / "resolved.json").write_text(json.dumps(labels))
    link = True
    for k in range(copies):
        for i, f in enumerate(files):
            target = dest / f"r{k:04d}_{i:04d}__{f.name}"
            if target.exists():
                raise RuntimeError(f"{target} exists")
            if link:
                try:
                    os.link(f, target)
                    continue
                except OSError:  # another file system: copy
                    link = False
            shutil.copyfile(f, target)


def run_child(warm: Path, path: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(warm), str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "POLARS_MAX_THREADS": "1"},
    )
    if r.returncode:
        raise RuntimeError(f"analysis child failed:\n{r.stderr[-3000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB; the max over children so far
    res["peak_rss_gb"] = peak * 1024 / 1e9 if peak > before else None
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--base", type=int, default=500)
    args = ap.parse_args()
    root = data_dir() / "trajectories"
    files, labels = [], {}
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        files += [f for f, _ in discover([d], FileReport())]
        labels.update(load_labels(d))
    base = sorted(random.Random(0).sample(files, min(args.base, len(files))))
    copies = args.n // len(base)
    with tempfile.TemporaryDirectory(prefix="fasbench-traj-scale-") as tmp:
        small, big = Path(tmp) / "base", Path(tmp) / "scaled"
        t = time.perf_counter()
        replicate(base, small, 1, labels)
        replicate(base, big, copies, labels)
        print(
            f"replicated {len(base)} files x {copies} = {len(base) * copies} in {time.perf_counter() - t:.1f} s",
            flush=True,
        )
        r500 = run_child(small, small)  # the smaller run first: the children's peak RSS only grows
        print(f"500: {r500}", flush=True)
        r50k = run_child(small, big)
        print(f"50k: {r50k}", flush=True)
    p500 = r500["cpu_s"] / r500["trajectories"]
    p50k = r50k["cpu_s"] / r50k["trajectories"]
    print(
        f"per trajectory cpu_ms: 500={1e3 * p500:.2f} 50k={1e3 * p50k:.2f}; wall_ms: "
        f"500={1e3 * r500['wall_s'] / r500['trajectories']:.2f} 50k={1e3 * r50k['wall_s'] / r50k['trajectories']:.2f}; "
        f"peak_rss_gb 500={r500['peak_rss_gb']:.2f}"
    )
    print(f"per_traj_50k/per_traj_500={p50k / p500:.3f} peak_rss_gb={r50k['peak_rss_gb']:.2f}")


if __name__ == "__main__":
    main()
