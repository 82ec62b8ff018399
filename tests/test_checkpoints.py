"""The one checkpoint evaluator (fasbench/evaluation/checkpoints.py): a real (tiny, random) model checkpoint run
as a policy through the harness; the run directory is an evaluation run (resumes, read by
`fasbench runs`); SFT's evaluate goes through it."""

from __future__ import annotations

import pytest

from fasbench.evaluation import runs as R
from fasbench.evaluation.checkpoints import checkpoint_policy, evaluate_checkpoint
from fasbench.evaluation.episodes import COLUMNS
from fasbench.harness import Limits
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import iter_jsonl


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # the tiny model is built once per session in this cache
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "ckpt-cache"))


@pytest.mark.slow
def test_checkpoint_run_is_an_eval_run_and_resumes(tmp_path):
    tasks = toy_tasks(make_corpus(tmp_path / "toy"))[:2]
    out = tmp_path / "before"
    df = evaluate_checkpoint(
        "tiny", tasks, out, limits=Limits(max_turns=1), label="before", max_new_tokens=8, progress=False
    )
    assert df.height == 2 and set(COLUMNS) <= set(df.columns)
    assert df["policy"].to_list() == ["before", "before"]
    assert (df["reward"] == df["reward_relace"]).all()
    lines = (out / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 2
    again = evaluate_checkpoint(
        "tiny", tasks, out, limits=Limits(max_turns=1), label="before", max_new_tokens=8, progress=False
    )
    assert (out / "traces.jsonl").read_text().splitlines() == lines  # nothing rerun
    assert again["trace_id"].to_list() == df["trace_id"].to_list()
    table = R.runs_table([out])
    assert table["n"].to_list() == [2] and table["policy"][0].startswith("hf:model=tiny")
    assert {d["id"] for d in iter_jsonl(out / "tasks.jsonl")} == {t.id for t in tasks}


def test_checkpoint_spec():
    assert (
        checkpoint_policy("/ckpt/final", "after", 64)
        == "hf:model=/ckpt/final,max_new_tokens=64,temperature=0.0,seed=0,name=after"
    )
    with pytest.raises(ValueError, match="cannot hold"):
        checkpoint_policy("/a,b")
