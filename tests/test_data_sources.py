"""Agent-trace tasks from real trajectories, the light bash parser, splits and load_tasks."""

import pytest

from fasbench.data import SOURCES, agent_traces, load_tasks, splits
from fasbench.trajectories.raw import ShellCall
from fasbench.trajectories.viewed import viewing


def test_viewing_parser_displayed_searched_and_first_edit():
    acts = [
        ShellCall(
            "find . -name validators.py | grep auth",
            "<returncode>0</returncode>\n<output>\n"
            "./django/contrib/auth/validators.py\n./django/core/validators.py\n</output>",
        ),
        ShellCall(
            "grep -rn 'class Foo' django/db", "<output>\n/testbed/django/db/models/base.py:12:class Foo:\n</output>"
        ),
        ShellCall("cd django/utils && nl -ba text.py | sed -n '1,20p'", "<output>\n     1\timport re\n</output>"),
        ShellCall("sed -n '10,30p' /testbed/django/forms/fields.py && head -n 5 setup.py", "<output></output>"),
        ShellCall("cat <<'EOF' > django/contrib/auth/reproduce.py\nimport django\nEOF", "<output></output>"),
        ShellCall("ls django/contrib/auth", "<output>\n__init__.py\nvalidators.py\nreproduce.py\n</output>"),
        ShellCall("sed -i 's/a/b/' django/contrib/auth/validators.py", "<output></output>"),
        ShellCall("cat django/after/edit.py", "<output></output>"),
    ]
    v = viewing(acts, {"django/contrib/auth/validators.py"})
    assert v.first_edit == 6
    assert v.displayed == {"django/utils/text.py", "django/forms/fields.py", "setup.py"}
    assert v.searched == {
        "django/contrib/auth/validators.py",
        "django/core/validators.py",
        "django/db/models/base.py",
        "django/contrib/auth/__init__.py",
    }
    assert "django/contrib/auth/reproduce.py" in v.written and "django/after/edit.py" not in v.displayed


def test_redirect_into_an_edited_file_is_the_first_edit():
    acts = [
        ShellCall("cat a/b.py", ""),
        ShellCall("cat <<'EOF' >> a/b.py\nx = 1\nEOF", ""),
        ShellCall("cat c/d.py", ""),
    ]
    v = viewing(acts, {"a/b.py"})
    assert v.first_edit == 1 and v.displayed == {"a/b.py"}


def test_real_trajectories():
    tasks, dropped = agent_traces.build(instances={"django__django-11099", "astropy__astropy-12907"})
    by = {t.id: t for t in tasks}
    t = by["django__django-11099@gemini-3-pro"]
    assert set(t.gold.edited) == {"django/contrib/auth/validators.py"}
    assert t.gold.source == "agent-trace" and set(t.gold.variants) == {"hunk", "changed"}
    assert (
        "django/contrib/auth/validators.py" in t.meta["viewed_displayed"]
    )  # `cat ./django/contrib/auth/validators.py`
    assert "reproduce_issue.py" not in t.gold.viewed
    assert t.repo == "django/django" and t.base_commit and t.query
    ds = by["astropy__astropy-12907@deepseek-chat"]  # v2 tool-call format
    assert "astropy/modeling/separable.py" in ds.gold.viewed
    assert not dropped


def test_splits_are_deterministic_and_shared_across_sources():
    assert splits.split_of("django__django-11099") == splits.split_of("django__django-11099")
    ids = [f"repo__repo-{i}" for i in range(3000)]
    got = [splits.split_of(i) for i in ids]
    for s, frac in splits.FRACTIONS.items():
        assert abs(got.count(s) / len(ids) - frac) < 0.03
    with pytest.raises(ValueError):
        splits.split_of("")


def test_load_tasks():
    lite = load_tasks("swebench-lite")
    assert len(lite) == 300 and {t.split for t in lite} == set(splits.SPLITS)
    test = load_tasks("swebench-lite", split="test")
    assert 0 < len(test) < 300 and all(t.split == "test" for t in test)
    ver = {t.id: t.split for t in load_tasks("swebench-verified")}
    assert all(ver[t.id] == t.split for t in lite if t.id in ver)  # same instance, same split
    with pytest.raises(ValueError, match="unknown task source"):
        load_tasks("nope")
    with pytest.raises(ValueError, match="unknown split"):
        load_tasks("swebench-lite", split="val")
    assert SOURCES == ("swebench-lite", "swebench-verified", "agent-traces")


def test_cli_tasks(tmp_path):
    from typer.testing import CliRunner

    from fasbench.cli import app
    from fasbench.records import read_tasks

    out = tmp_path / "lite_test.jsonl"
    res = CliRunner().invoke(app, ["data", "tasks", "--source", "swebench-lite", "--out", str(out), "--split", "test"])
    assert res.exit_code == 0, res.output
    ts = read_tasks(out)
    assert ts and all(t.split == "test" and t.gold.variants["hunk"] == t.gold.edited for t in ts)
    res = CliRunner().invoke(app, ["data", "tasks", "--source", "bogus", "--out", str(out)])
    assert (
        res.exit_code == 2 and "task set 'bogus' is neither" in res.output and len(res.output.strip().splitlines()) == 1
    )
