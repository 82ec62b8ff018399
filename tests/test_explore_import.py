"""SWE-Explore gold that lands offline: records in the benchmark's upstream format (README "Benchmark
Format" and ``bench_build.py::build_instance_ground_truth`` of Last-Humans-Coding-Under-White-Nights/
SWE-Explore-Bench at ab8d6b857e57a914debb90e0e38827e4e2e3f010: a whole-file read stored as ``1..N``
with its unresolved ``end = -1`` read in ``read_step_info``) built for real SWE-bench instances, on the
real offline sdists (astropy 5.0.1, requests 2.0.1; downloaded once into the cache), scored with
``eval.py``'s definitions (``ExploreEvaluator.evaluate_precision/recall``, ported independently below).
"""

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest
from pypi_fixture import requires_pypi

from fasbench.data import corpus
from fasbench.data.corpus import CorpusError, materialize
from fasbench.data.importers import import_swe_explore
from fasbench.data.locations import find_data
from fasbench.data.patches import parse_diff
from fasbench.scoring.localization import explore_line_counts, explore_metrics

pytestmark = requires_pypi

SEP, TSEP, CORE = (
    "astropy/modeling/separable.py",
    "astropy/modeling/tests/test_separable.py",
    "astropy/modeling/core.py",
)
# separable.py has 317 lines at astropy-12907's base commit d16bfe0 (SWE-Explore's record of this
# instance reads it as 1..317); the offline corpus, astropy 5.0.1's sdist, has 315.
SEP_BASE_LINES = 317


def _lite(iid):
    return {r["instance_id"]: r for r in json.load(gzip.open(find_data("swebench/swebench_lite_test.json.gz")))}[iid]


def _rec(iid, core, optional=(), steps=None, **extra):
    reg = lambda rs: [{"path": p, "start": s, "end": e} for p, s, e in rs]  # noqa: E731
    return {
        "instance_id": iid,
        "repo_path": "/testbed",
        "repo_dir": f"repos/{iid}",
        "ground_truth": {
            "read_core_files": sorted({r[0] for r in core}),
            "read_core_regions": reg(core),
            "read_optional_files_map": {"glm-4.6": sorted({r[0] for r in optional})},
            "read_optional_regions_map": {"glm-4.6": reg(optional)},
            "modified_core_files": [],
            "main_files": [],
        },
        "read_step_info": steps or {},
        "meta": {"num_trajectories": 3},
        "dataset": "verified",
        **extra,
    }


def _read(path, step, start=1, end=-1):
    return {
        "traj_path": f"unify_trajs/swebench-verified/claude-4-5/{path.replace('/', '_')}__0.json",
        "step_idx": step,
        "start": start,
        "end": end,
    }


def _write(tmp_path, recs):
    f = tmp_path / "bench.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


def _eval_py(preds, gt, n_lines):
    """eval.py's line precision and recall: regions expanded to (path, line) sets, end -1 / start < 0
    resolved on the line counts of the record's core and optional region paths (eval_runner's
    ``_build_file_line_counts``), unresolvable regions skipped."""

    def lines(regions):
        out = set()
        for p, s, e in regions:
            L = n_lines.get(p)
            if e == -1 or s < 0:
                if not L:
                    continue
                e2 = L if e == -1 else e
                s2 = L + s + 1 if s < 0 else s
                s, e = max(1, min(s2, L)), max(1, min(e2, L))
            elif e < 1:
                continue
            out |= {(p, i) for i in range(max(1, s), e + 1)}
        return out

    pl, cl = lines(preds), lines(gt)
    return (len(pl & cl) / len(pl) if pl else 0.0), (len(pl & cl) / len(cl) if cl else 0.0)


@pytest.fixture(scope="module")
def astropy_tree():
    return corpus.sdist_tree("astropy", "5.0.1")


def test_whole_file_reads_and_test_patch_regions_land_offline(tmp_path, astropy_tree):
    lite = _lite("astropy__astropy-12907")
    core = [(SEP, 1, SEP_BASE_LINES), (TSEP, 28, 33), (CORE, 2894, 2898)]
    steps = {SEP: [_read(SEP, 4), _read(SEP, 40, 190, 220)], TSEP: [_read(TSEP, 36, 20, 40)], CORE: [_read(CORE, 12)]}
    f = _write(tmp_path, [_rec("astropy__astropy-12907", core, steps=steps, test_patch=lite["test_patch"])])
    (task,), dropped = import_swe_explore(f)
    ex = task.gold.explore
    # the whole-file read survives the import, flagged by read_step_info; read_step_info is kept
    assert ex["core_regions"][0] == [SEP, 1, -1] and ex["whole_files"] == {SEP: SEP_BASE_LINES}
    assert ex["core_regions"][1:] == [[TSEP, 28, 33], [CORE, 2894, 2898]]  # partial reads stay partial
    assert task.meta["gold_import"]["read_step_info"] == steps and task.meta["test_patch"] == lite["test_patch"]
    t = materialize(task, mode="offline")
    assert t.meta["corpus"]["release"] == "5.0.1"
    placed = t.gold.explore["core_regions"]
    assert placed[0] == [SEP, 1, -1]  # the whole file of this (older) version: 315 lines, not 317
    # the test file's region is placed by the test patch's hunk (its old side is base-commit text)
    hunk = parse_diff(lite["test_patch"])[0].hunks[0]
    ((_, s, e),) = [r for r in placed if r[0] == TSEP]
    assert (astropy_tree / TSEP).read_text().splitlines()[s - 1 : e] == hunk.old_lines[:6]
    # core.py is in neither patch and no checkout of the base commit is cached: dropped, with a reason
    rel = t.meta["explore_relocation"]
    assert [d["region"] for d in rel["core_dropped"]] == [[CORE, 2894, 2898]]
    assert (
        rel["core_dropped"][0]["reason"] == "region-not-anchored"
        and "no base-commit text" in rel["core_dropped"][0]["detail"]
    )
    assert rel["core_lines_placed"] == pytest.approx(1 - 5 / (SEP_BASE_LINES + 6 + 5), abs=1e-4)
    # scored as eval.py scores it on this corpus
    n = explore_line_counts(t.gold.explore, t.root)
    assert n[SEP] == 315 and n[CORE] == 4453  # core.py keeps its count though its region was dropped
    preds = [(SEP, 1, -1), (TSEP, 1, 40)]
    m = explore_metrics(preds, t.gold.explore, n)
    p, r = _eval_py(preds, [tuple(x) for x in placed], n)
    assert (m["explore_line_precision"], m["explore_line_recall"]) == pytest.approx((p, r))
    assert r == 1.0 and p == pytest.approx((315 + 6) / (315 + 40))


def test_region_outside_the_patches_placed_by_the_cached_checkout(tmp_path, astropy_tree, monkeypatch):
    """The base commit's text of core.py, from an online checkout already in the cache, places a
    region in a file no patch touches (difflib onto the sdist's lines)."""
    cache = tmp_path / "cache"
    shutil.copytree(astropy_tree, cache / "corpora" / "sdist" / "astropy-5.0.1", symlinks=True)
    shutil.copy(astropy_tree.parent / "astropy-5.0.1.json", cache / "corpora" / "sdist")
    sdist_core = (astropy_tree / CORE).read_text().splitlines(keepends=True)
    base_core = [f"# base-commit line {i}\n" for i in range(20)] + sdist_core  # 20 lines more above, as if edited since
    clone = cache / "corpora" / "git" / "astropy__astropy"
    (clone / "astropy" / "modeling").mkdir(parents=True)
    (clone / CORE).write_text("".join(base_core))
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], cwd=clone, check=True)
    subprocess.run(git + ["add", "-A"], cwd=clone, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=clone, check=True)
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    monkeypatch.setenv("FASBENCH_CACHE", str(cache))
    core = [(SEP, 1, SEP_BASE_LINES), (CORE, 2914, 2918)]
    f = _write(tmp_path, [_rec("astropy__astropy-12907", core, steps={SEP: [_read(SEP, 4)]})])
    (task,), _ = import_swe_explore(f)
    task.base_commit = sha  # the checkout's commit stands for the base commit
    t = materialize(task, mode="offline")
    assert [CORE, 2894, 2898] in t.gold.explore["core_regions"]
    assert t.meta["explore_relocation"]["core"] == {"end-relative": 1, "difflib": 1}
    assert sdist_core[2893:2898] == base_core[2913:2918]


def test_dropped_optional_region_keeps_the_file_count_for_a_whole_file_citation(tmp_path, astropy_tree):
    # a partial optional region in core.py (no anchor offline) is dropped; a report citing core.py whole
    # must still count its 4453 lines as predicted (eval.py: precision 11 / 4464), not score 1.0
    core, opt = [(SEP, 240, 250)], [(CORE, 100, 120)]
    (task,), _ = import_swe_explore(_write(tmp_path, [_rec("astropy__astropy-12907", core, opt)]))
    t = materialize(task, mode="offline")
    assert t.gold.explore["optional_regions"] == [] and t.meta["explore_relocation"]["optional_dropped"] == 1
    n_rec = {p: len((astropy_tree / p).read_text(errors="ignore").splitlines()) for p in (SEP, CORE)}
    preds = [(CORE, 1, -1), (SEP, 240, 250)]
    p, r = _eval_py(preds, [tuple(x) for x in t.gold.explore["core_regions"]], n_rec)
    assert p == pytest.approx(11 / (4453 + 11)) and r == 1.0
    m = explore_metrics(preds, t.gold.explore, explore_line_counts(t.gold.explore, t.root))
    assert m["explore_line_precision"] == pytest.approx(p) and m["explore_line_recall"] == 1.0


def test_mostly_unplaceable_core_drops_the_task(tmp_path, astropy_tree):
    core = [("astropy/timeseries/sampled.py", 10, 200), ("astropy/timeseries/core.py", 1, 5)]
    (task,), _ = import_swe_explore(_write(tmp_path, [_rec("astropy__astropy-13033", core)]))
    with pytest.raises(CorpusError) as e:
        materialize(task, mode="offline")
    assert e.value.reason == "region-not-relocated" and "of the core lines placed (need 90%)" in e.value.detail


def test_import_says_per_task_whether_usable_offline_and_online(tmp_path, astropy_tree):
    lite = _lite("astropy__astropy-12907")
    recs = [
        _rec(
            "astropy__astropy-12907",
            [(SEP, 1, SEP_BASE_LINES), (CORE, 2894, 2898)],
            steps={SEP: [_read(SEP, 4)]},
            test_patch=lite["test_patch"],
        ),
        _rec("astropy__astropy-13033", [("astropy/timeseries/sampled.py", 10, 200)]),
        _rec(
            "psf__requests-1766",
            [("requests/auth.py", 1, 195)],
            steps={"requests/auth.py": [_read("requests/auth.py", 3)]},
        ),
    ]
    out = tmp_path / "tasks.jsonl"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "data",
            "import",
            "swe-explore",
            str(_write(tmp_path, recs)),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    lines = {ln.split("\t")[0]: ln for ln in r.stdout.splitlines() if "\toffline: " in ln}
    assert set(lines) == {"astropy__astropy-12907", "astropy__astropy-13033", "psf__requests-1766"}
    assert (
        "offline: usable (1 core regions dropped, 98.4% of the core lines placed: region-not-anchored)"
        in lines["astropy__astropy-12907"]
    )
    assert "offline: region-not-relocated: " in lines["astropy__astropy-13033"]
    assert "offline: hunk-not-found: " in lines["psf__requests-1766"]  # the gold patch itself does not land on 2.0.1
    assert all("\tonline: usable at the exact commit " in ln for ln in lines.values())
    assert "usable offline: 1/3" in r.stdout
    from fasbench.records import read_tasks

    got = {t.id: t.meta["gold_import"]["usable"]["offline"] for t in read_tasks(out)}
    assert got["astropy__astropy-12907"].startswith("usable") and got["psf__requests-1766"].startswith("hunk-not-found")
