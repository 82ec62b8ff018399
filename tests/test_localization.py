"""Localization at every grain: hand-computed metric cases (FuseSearch/CodeScout P/R/F1, LocAgent
Acc@k, top-1, SWE-Explore line metrics and hit-file rate), entity gold from real diffs on real files,
the general range relocator, records that stay backward compatible, and the whole path
`fasbench data import swe-explore` → `fasbench eval --ids` → summary.parquet columns on a real
git repository (the toy `requests` corpus) served online at its commit."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import polars as pl
import pytest

from fasbench.base.entities import entities_at, entity_gold, parse_entities
from fasbench.data.patches import parse_diff, relocate
from fasbench.data.relocate import hunk_anchors, relocate_regions
from fasbench.policies.toy import def_range, make_corpus
from fasbench.records import Gold, Task
from fasbench.scoring.localization import (
    explore_metrics,
    locagent_acc_at_k,
    ranked_items,
    ranked_regions,
    set_prf,
    top1,
)

SRC = textwrap.dedent("""\
    import os

    LIMIT = 3


    class Box:
        size = 1

        @property
        def area(self):
            return self.size * 2

        def grow(self, n):
            def inner():
                return n
            return inner()


    def helper(x):
        return x + LIMIT
""")


# ---------------------------------------------------------------- metrics, by hand


def test_set_prf_per_instance():
    assert set_prf(["a", "b"], ["a", "c", "d"]) == pytest.approx((0.5, 1 / 3, 0.4))
    assert set_prf([], ["a"]) == (0.0, 0.0, 0.0)  # empty prediction scores 0
    assert set_prf(["a"], []) is None  # no gold at this level: left out of the average


def test_locagent_acc_at_k_truncates_gold_at_k():
    # LocAgent eval_metric.acc_at_k compares hits in the top k with min(|gold|, k)
    assert locagent_acc_at_k(["x", "a", "b"], ["a", "b"], 3) == 1.0
    assert locagent_acc_at_k(["x", "a", "b"], ["a", "b"], 2) == 0.0
    assert locagent_acc_at_k(["a", "b"], ["a", "b", "c"], 2) == 1.0  # 3 gold, k=2: top 2 all gold
    assert locagent_acc_at_k(["a", "a", "b"], ["a", "b"], 2) == 1.0  # a repeated item takes no rank
    assert locagent_acc_at_k([], ["a"], 5) == 0.0 and locagent_acc_at_k(["a"], [], 5) is None
    assert top1(["b", "a"], ["a"]) == 0.0 and top1(["a"], ["a"]) == 1.0


def test_explore_metrics_match_eval_py_by_hand():
    gold = {
        "core_files": ["a.py", "b.py"],
        "core_regions": [["a.py", 1, 10], ["b.py", 5, 6]],
        "optional_files": ["c.py"],
        "optional_regions": [["c.py", 1, 4]],
    }
    n_lines = {"a.py": 20, "b.py": 8, "c.py": 4}
    preds = [("a.py", 6, 15), ("d.py", 1, 10), ("b.py", 1, -1)]
    m = explore_metrics(preds, gold, n_lines, top_k=5)
    # pred lines: a 6..15 (10) + d 1..10 (10) + b whole file 1..8 (8) = 28; core lines hit: a 6..10 (5) + b 5,6 (2)
    assert m["explore_line_precision"] == pytest.approx(7 / 28)
    assert m["explore_line_recall"] == pytest.approx(7 / 12)
    p, r = 7 / 28, 7 / 12
    assert m["explore_line_f1"] == pytest.approx(2 * p * r / (p + r))
    assert m["explore_hit_file_rate"] == 1.0
    assert m["explore_noise_file_rate"] == pytest.approx(1 / 3)  # d.py is neither core nor optional
    assert m["explore_hit_region_rate"] == 1.0
    # the region budget: only the first region counts at top_k=1
    m1 = explore_metrics(preds, gold, n_lines, top_k=1)
    assert m1["explore_line_recall"] == pytest.approx(5 / 12) and m1["explore_hit_file_rate"] == 0.5
    # eval_runner knows line counts of gold paths only: a whole-file citation of another file counts no line
    m2 = explore_metrics([("d.py", 1, -1), ("a.py", 1, 10)], gold, n_lines)
    assert m2["explore_line_precision"] == 1.0 and m2["explore_hit_file_rate"] == 0.5
    # start < 0 counts from the end: -3 on a 20-line file is lines 18..20
    assert (
        explore_metrics([("a.py", -3, -1)], {"core_files": ["a.py"], "core_regions": [["a.py", 18, 20]]}, n_lines)[
            "explore_line_f1"
        ]
        == 1.0
    )
    assert explore_metrics([], gold, n_lines)["explore_line_precision"] == 0.0


def test_report_order_is_the_rank(tmp_path):
    (tmp_path / "m.py").write_text(SRC)
    regions = ranked_regions({"m.py": [[20, 21], [13, 16]], "/repo/n.py": []}, str(tmp_path))
    assert regions == [("m.py", 20, 21), ("m.py", 13, 16), ("n.py", 1, -1)]
    assert ranked_items(regions, "file") == ["m.py", "n.py"]
    assert ranked_items(regions, "function", str(tmp_path)) == ["m.py:helper", "m.py:Box.grow"]
    assert ranked_items(regions, "module", str(tmp_path)) == ["m.py:helper", "m.py:Box"]


# ---------------------------------------------------------------- entities


def test_parse_entities_and_lines():
    ents = {(e.kind, e.qualname): (e.start, e.end) for e in parse_entities(SRC)}
    assert ents[("function", "Box.area")] == (9, 11)  # decorator included
    assert ("function", "Box.grow.inner") not in ents  # nested in a function: part of grow
    assert entities_at(parse_entities(SRC), 15, 15) == {"module": ["Box"], "class": ["Box"], "function": ["Box.grow"]}
    assert entities_at(parse_entities(SRC), 7, 7) == {"module": ["Box"], "class": ["Box"], "function": []}
    assert entities_at(parse_entities(SRC), 3, 3) == {"module": [], "class": [], "function": []}
    assert parse_entities("def broken(:\n") == []


def _gold_of(tmp_path, new_src: str) -> dict:
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    (tmp_path / "a" / "m.py").write_text(SRC)
    (tmp_path / "b" / "m.py").write_text(new_src)
    diff = (
        subprocess.run(["git", "diff", "--no-index", "a/m.py", "b/m.py"], cwd=tmp_path, capture_output=True, text=True)
        .stdout.replace("a/a/m.py", "a/m.py")
        .replace("b/b/m.py", "b/m.py")
    )
    files = parse_diff(diff)
    rel = relocate(files, tmp_path / "a")
    return entity_gold(tmp_path / "a", files, rel.offsets)


@pytest.mark.parametrize(
    "edit, function, klass, module, added",
    [
        (("return self.size * 2", "return self.size * 3"), ["m.py:Box.area"], ["m.py:Box"], ["m.py:Box"], []),
        (("    size = 1", "    size = 2"), [], ["m.py:Box"], ["m.py:Box"], []),  # class-level edit
        (("LIMIT = 3", "LIMIT = 4"), [], [], [], []),  # module-level edit: the file only
        (
            (
                "def helper(x):\n    return x + LIMIT\n",
                "def helper(x):\n    return x + LIMIT\n\n\ndef twice(x):\n    return 2 * x\n",
            ),
            [],
            [],
            [],
            ["m.py:twice"],
        ),  # a new function
        (
            ("        def inner():", "        def inner():\n            n += 0"),
            ["m.py:Box.grow"],
            ["m.py:Box"],
            ["m.py:Box"],
            [],
        ),  # an insertion inside a method edits the method
        (
            ("    def grow(self, n):", "    def shrink(self):\n        return 0\n\n    def grow(self, n):"),
            [],
            ["m.py:Box"],
            ["m.py:Box"],
            ["m.py:Box.shrink"],
        ),  # a new method edits its class
    ],
)
def test_entity_gold_of_a_diff(tmp_path, edit, function, klass, module, added):
    g = _gold_of(tmp_path, SRC.replace(*edit))
    assert (g["file"], g["function"], g["class"], g["module"], g["added"]) == (["m.py"], function, klass, module, added)


# ---------------------------------------------------------------- relocation of any range


def test_relocate_regions(tmp_path):
    old = SRC
    new = "# header\n# more\n" + SRC  # everything moved down by 2
    (tmp_path / "m.py").write_text(new)
    r = relocate_regions([["m.py", 13, 16], ["m.py", 1, -1], ["gone.py", 1, 2]], tmp_path, old_texts={"m.py": old})
    assert r.regions == [["m.py", 15, 18], ["m.py", 1, -1]]
    assert [d["reason"] for d in r.dropped] == ["file-missing"] and not r.ok
    # from the gold patch's located hunks: offset +2 at the hunk; between agreeing hunks; unanchored far away
    anchors = {"m.py": [(10, 12, 2), (19, 21, 2)]}
    r = relocate_regions([["m.py", 13, 16], ["m.py", 10, 11]], tmp_path, anchors=anchors)
    assert r.ok and r.regions == [["m.py", 15, 18], ["m.py", 12, 13]]
    far = relocate_regions([["m.py", 300, 310]], tmp_path, anchors={"m.py": [(10, 12, 2)]})
    assert far.dropped[0]["reason"] == "region-not-anchored"
    assert relocate_regions([["m.py", 300, 310]], tmp_path, exact=True).regions == [["m.py", 300, 310]]
    diff = parse_diff("--- a/m.py\n+++ b/m.py\n@@ -10,3 +10,3 @@\n x\n-y\n+z\n w\n")[0]
    assert hunk_anchors(diff, [2]) == [(10, 12, 2)]


# ---------------------------------------------------------------- records


def test_old_gold_records_load_and_new_fields_round_trip():
    old = {"edited": {"a.py": [[1, 2]]}, "viewed": None, "source": "pr", "variants": {}}
    g = Gold.from_dict(old)
    assert g.entities == {} and g.explore is None and g.to_dict() == old  # unchanged JSON for old records
    g.entities = {"function": ["a.py:f"]}
    g.explore = {"core_files": ["a.py"], "core_regions": [["a.py", 1, -1]]}
    back = Gold.from_dict(json.loads(json.dumps(g.to_dict())))
    assert back.entities == {"function": ["a.py:f"]} and back.explore["core_regions"] == [["a.py", 1, -1]]
    assert back.with_variant(None).explore == back.explore
    with pytest.raises(ValueError, match="explore.core_regions"):
        Gold.from_dict({**old, "explore": {"core_regions": [["a.py", "1", 2]]}})


# ---------------------------------------------------------------- import → eval --ids → summary


def _git(*args, cwd):
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def explore_file(tmp_path_factory):
    """A git repository of the toy corpus with one fix commit, and a benchmark file in SWE-Explore's
    documented format (README "Benchmark Format"; the real files are not available offline)."""
    base = tmp_path_factory.mktemp("explore")
    repo = make_corpus(base / "repo")
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "base", cwd=repo)
    sha = _git("rev-parse", "HEAD", cwd=repo)
    s, e = def_range(repo / "requests/sessions.py", "resolve_redirects")
    path = repo / "requests/sessions.py"
    lines = path.read_text().splitlines(keepends=True)
    lines[s] = lines[s].rstrip("\n") + "  # fixed\n"  # edit the second line of the method
    path.write_text("".join(lines))
    patch = _git("diff", cwd=repo) + "\n"
    _git("checkout", "-q", "--", ".", cwd=repo)
    rec = {
        "instance_id": "toy__requests-1",
        "repo": "psf/requests",
        "base_commit": sha,
        "clone_url": str(repo),
        "patch": patch,
        "problem_statement": "TooManyRedirects is raised too early: resolve_redirects counts "
        "one redirect too many in requests/sessions.py.",
        "ground_truth": {
            "read_core_files": ["requests/sessions.py", "requests/exceptions.py"],
            "read_core_regions": [
                {"path": "requests/sessions.py", "start": s, "end": e},
                {"path": "requests/exceptions.py", "start": 1, "end": -1},
            ],
            "read_optional_files_map": {"m": ["requests/models.py"]},
            "read_optional_regions_map": {"m": [{"path": "requests/models.py", "start": 1, "end": 40}]},
            "modified_core_files": ["requests/sessions.py"],
            "main_files": ["requests/sessions.py"],
        },
        "read_step_info": {},
        "meta": {},
    }
    bad = dict(
        rec,
        instance_id="toy__requests-2",
        ground_truth=dict(rec["ground_truth"], read_core_regions=[{"path": "nope.py", "start": 1, "end": 3}]),
    )
    empty = dict(rec, instance_id="toy__requests-3", ground_truth=dict(rec["ground_truth"], read_core_regions=[]))
    f = base / "bench.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in (rec, bad, empty)))
    return f, (s, e)


def _cli(*args, env_cache):
    import os

    env = dict(os.environ, FASBENCH_CACHE=str(env_cache))
    return subprocess.run([sys.executable, "-m", "fasbench.cli", *args], capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_import_swe_explore_then_eval_ids(explore_file, tmp_path):
    f, (s, e) = explore_file
    tasks = tmp_path / "tasks.jsonl"
    r = _cli("data", "import", "swe-explore", str(f), "--out", str(tasks), env_cache=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    assert "2 tasks" in r.stdout and "empty-core" in r.stdout
    out = tmp_path / "run"
    r = _cli(
        "eval",
        "--tasks",
        str(tasks),
        "--ids",
        "toy__requests-1",
        "--ids",
        "toy__requests-2",
        "--corpus",
        "online",
        "--policy",
        "heuristic:turns=3",
        "--workers",
        "1",
        "--out",
        str(out),
        env_cache=tmp_path / "c",
    )
    assert r.returncode == 0, r.stderr
    # the exclusion is reported before the run starts
    err = r.stderr
    assert "excluded 1 of 2 tasks" in err and "region-not-relocated" in err
    assert err.index("excluded 1 of 2") < err.index("eval heuristic")
    df = pl.read_parquet(out / "summary.parquet")
    assert df["task_id"].to_list() == ["toy__requests-1"]
    for col in (
        "explore_line_precision",
        "explore_line_recall",
        "explore_line_f1",
        "explore_hit_file_rate",
        "function_precision",
        "function_recall",
        "function_f1",
        "function_acc_at_5",
        "function_top1",
        "module_f1",
        "module_acc_at_5",
        "file_acc_at_5",
        "file_top1",
        "class_f1",
    ):
        assert col in df.columns, col
    row = df.row(0, named=True)
    assert row["entity_gold"] and row["explore_line_f1"] is not None and not math.isnan(row["explore_line_f1"])
    # recompute SWE-Explore's numbers from the trace's report with the ported formulas
    from fasbench.records import read_tasks, read_traces
    from fasbench.scoring.localization import explore_line_counts

    tr = read_traces(out / "traces.jsonl")[0]
    task = [t for t in read_tasks(tasks) if t.id == "toy__requests-1"][0]
    root = tmp_path / "c" / "corpora" / "worktrees" / f"psf__requests@{task.base_commit[:12]}"
    assert task.gold.explore["core_regions"][0] == ["requests/sessions.py", s, e] and root.is_dir()
    want = explore_metrics(
        ranked_regions(tr.report.files, str(root)), task.gold.explore, explore_line_counts(task.gold.explore, str(root))
    )
    assert {k: row[k] for k in want} == pytest.approx(want)
    assert row["function_f1"] is not None  # entity gold from the record's patch on the exact tree
    ci = pl.read_parquet(out / "summary_ci.parquet")
    assert {"explore_line_f1", "explore_line_f1_lo", "explore_line_f1_hi", "function_f1_lo"} <= set(ci.columns)
    assert ci["explore_line_f1"][0] == pytest.approx(row["explore_line_f1"])
    print(
        {
            k: row[k]
            for k in (
                "explore_line_precision",
                "explore_line_recall",
                "explore_hit_file_rate",
                "function_f1",
                "function_acc_at_5",
                "file_f1",
            )
        }
    )


@pytest.mark.slow
def test_eval_ids_errors(explore_file, tmp_path):
    f, _ = explore_file
    tasks = tmp_path / "tasks.jsonl"
    _cli("data", "import", "swe-explore", str(f), "--out", str(tasks), env_cache=tmp_path / "c")
    r = _cli(
        "eval",
        "--tasks",
        str(tasks),
        "--ids",
        "nope-1",
        "--policy",
        "heuristic",
        "--out",
        str(tmp_path / "o"),
        env_cache=tmp_path / "c",
    )
    assert r.returncode == 2 and "ids not in the task set: nope-1" in r.stderr
    r = _cli("data", "import", "loc-bench", str(f), "--out", str(tasks), env_cache=tmp_path / "c")
    assert r.returncode == 2 and "unknown format" in r.stderr


def test_import_locbench_entity_lists(tmp_path):
    from fasbench.data.importers import import_gold

    f = tmp_path / "loc.jsonl"
    recs = [
        {
            "instance_id": "psf__requests-1142",
            "file_changes": [
                {
                    "file": "requests/models.py",
                    "changes": {
                        "edited_entities": ["requests/models.py:PreparedRequest.prepare_content_length"],
                        "edited_modules": ["requests/models.py:PreparedRequest"],
                    },
                }
            ],
        },
        {"instance_id": "x__y-1", "problem_statement": "q", "edit_functions": ["a.py:f", "a.py:C.g"]},
        {"instance_id": "x__y-2", "problem_statement": "q", "edit_functions": ["no colon"]},
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    ts, dropped = import_gold("locbench", f)
    assert [t.id for t in ts] == ["psf__requests-1142", "x__y-1"] and dropped[0]["reason"] == "bad-entity"
    assert ts[0].gold.entities["module"] == ["requests/models.py:PreparedRequest"]
    assert ts[0].query.startswith("requests.get is ALWAYS")  # joined with SWE-bench
    assert ts[1].gold.entities["module"] == ["a.py:f", "a.py:C"] and ts[1].repo == "x/y"
    assert Task.from_dict(ts[1].to_dict()).gold.entities == ts[1].gold.entities


def test_locbench_entities_checked_on_the_corpus_and_scored(explore_file, tmp_path, monkeypatch):
    from fasbench.data.importers import import_gold
    from fasbench.data.selection import usable
    from fasbench.records import Report, Trace
    from fasbench.scoring.localization import localization_row

    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "c"))
    f, (s, e) = explore_file
    rec = json.loads(f.read_text().splitlines()[0])
    fn = "requests/sessions.py:SessionRedirectMixin.resolve_redirects"
    base = {k: rec[k] for k in ("repo", "base_commit", "clone_url", "problem_statement")}
    loc = tmp_path / "loc.jsonl"
    loc.write_text(
        json.dumps({**base, "instance_id": "toy__requests-5", "edit_functions": [fn]})
        + "\n"
        + json.dumps({**base, "instance_id": "toy__requests-6", "edit_functions": ["requests/sessions.py:Nope.x"]})
        + "\n"
    )
    ts, dropped = import_gold("locbench", loc)
    ok, excluded = usable(ts, "online", progress=False)
    assert [t.id for t in ok] == ["toy__requests-5"] and excluded[0]["reason"] == "entity-not-found"
    t = ok[0]
    assert t.gold.entities["function"] == [fn] and t.gold.entities["module"] == [
        "requests/sessions.py:SessionRedirectMixin"
    ]
    tr = Trace(
        t.id, "p", "relace", report=Report({"requests/utils.py": [[1, 3]], "requests/sessions.py": [[s + 1, s + 2]]})
    )
    row = localization_row(t, tr)
    assert row["function_precision"] == 1.0 and row["function_f1"] == 1.0 and row["function_top1"] == 1.0
    assert row["file_top1"] == 0.0 and row["file_acc_at_1"] == 0.0 and row["file_acc_at_3"] == 1.0
    assert row["explore_line_f1"] is None  # no read-region gold for this task
