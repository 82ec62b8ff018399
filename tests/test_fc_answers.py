"""FastContext's answer as the release reads and scores it (``training/fastcontext-rl/utils.py`` @5fb8c1d).

The expected values below were made by running the released code itself, not fasbench: in a temp
dir, ``git --git-dir=<mirror of github:T0mSIlver/fastcontext> show 5fb8c1d:training/fastcontext-rl/utils.py
> utils.py``, then for each answer ``utils.parse_final_answer(answer, drop_prefix="/repo")`` (citations,
paths after drop_prefix, ranges) and the reward of ``generate_with_fastcontext.py`` ``reward_func`` with
no judge: ``0 if n_citations < 1 else 1 + caculte_score(answer, GOLD, drop_prefix="/repo")["score_file"]
["score"]``, where GOLD = ``"<final_answer>\\nshop/pricing.py:1-7\\n</final_answer>"`` (the label
form of ``rl_data_preprocess.py``) and ``/repo`` is the workspace path fasbench's prompt shows (the
release strips the workspace its prompt shows). Microsoft's code is not in this repository.

Note: with ``drop_prefix=None`` (as ``benchmark/evaluation/run_score.py`` parses predictions, against a
``/testbed/``-prefixed gold) ``absolute_repo`` scores 1.0 and ``relative`` 1.0 too; the RL reward, which
the table follows, strips the shown workspace.
"""

from __future__ import annotations

import pytest

from fasbench.records import Gold, Trace, Turn
from fasbench.records.fastcontext_answer import parse_final_answer, parse_final_answer_lenient
from fasbench.scoring.judge import citation_contents
from fasbench.scoring.reward import score_report

GOLD = Gold(edited={"shop/pricing.py": [[1, 7]]})

# (name, answer, n_citations, cited paths after drop_prefix, ranges, reward): the release's outputs
RELEASED = [
    (
        "absolute_repo",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:1-7 (discount lookup)\n</final_answer>",
        1,
        ["shop/pricing.py"],
        [[1, 7]],
        2.0,
    ),
    (
        "relative",
        "Found it.\n\n<final_answer>\nshop/pricing.py:1-7\n</final_answer>",
        1,
        ["shop/pricing.py"],
        [[1, 7]],
        2.0,
    ),
    (
        "bulleted",
        "Found it.\n\n<final_answer>\n- /repo/shop/pricing.py:1-7\n</final_answer>",
        1,
        ["- /repo/shop/pricing.py"],
        [[1, 7]],
        1.0,
    ),
    (
        "backticked",
        "Found it.\n\n<final_answer>\n`/repo/shop/pricing.py:1-7`\n</final_answer>",
        1,
        ["`/repo/shop/pricing.py"],
        [[1, 7]],
        1.0,
    ),
    (
        "two_blocks_first_wrong",
        "Found it.\n\n<final_answer>\n/repo/shop/cart.py:1-5\n</final_answer>\nFound it.\n\n<final_answer>\n/repo/shop/pricing.py:1-7\n</final_answer>",
        1,
        ["shop/cart.py"],
        [[1, 5]],
        1.0,
    ),
    (
        "leading_slash",
        "Found it.\n\n<final_answer>\n/shop/pricing.py:1-7\n</final_answer>",
        1,
        ["/shop/pricing.py"],
        [[1, 7]],
        1.0,
    ),
    ("unclosed", "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:1-7\n", 0, [], [], 0),
    ("L_ranges", "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:L1-L7\n</final_answer>", 0, [], [], 0),
    ("file_only", "Found it.\n\n<final_answer>\n/repo/shop/pricing.py\n</final_answer>", 0, [], [], 0),
    (
        "multi_range",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:1-3,5-7\n</final_answer>",
        1,
        ["shop/pricing.py"],
        [[1, 3]],
        2.0,
    ),
    (
        "single_line",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:4\n</final_answer>",
        1,
        ["shop/pricing.py"],
        [[4, 4]],
        2.0,
    ),
    (
        "over_citation",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:1-7\n/repo/shop/cart.py:1-5\n/repo/README.md:1-3\n</final_answer>",
        3,
        ["shop/pricing.py", "shop/cart.py", "README.md"],
        [[1, 7], [1, 5], [1, 3]],
        1.184615,
    ),
    (
        "duplicate_file",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:1-3\n/repo/shop/pricing.py:5-7\n</final_answer>",
        2,
        ["shop/pricing.py", "shop/pricing.py"],
        [[1, 3], [5, 7]],
        2.0,
    ),
    (
        "reversed_range",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:7-1\n</final_answer>",
        1,
        ["shop/pricing.py"],
        [[7, 1]],
        2.0,
    ),
    (
        "real_root_path",
        "Found it.\n\n<final_answer>\n/tmp/corpus/shop/pricing.py:1-7\n</final_answer>",
        1,
        ["/tmp/corpus/shop/pricing.py"],
        [[1, 7]],
        1.0,
    ),
    ("empty_block", "Found it.\n\n<final_answer>\n\n</final_answer>", 0, [], [], 0),
    ("no_block", "The discount lookup is in shop/pricing.py:1-7.", 0, [], [], 0),
    (
        "confidence_line",
        "Found it.\n\n<final_answer>\n/repo/shop/pricing.py:1-7\nconfidence: 0.8\n</final_answer>",
        1,
        ["shop/pricing.py"],
        [[1, 7]],
        2.0,
    ),
    (
        "windows_path",
        "Found it.\n\n<final_answer>\nC:\\repo\\shop\\pricing.py:1-7\n</final_answer>",
        1,
        ["C:\\repo\\shop\\pricing.py"],
        [[1, 7]],
        1.0,
    ),
]


def _flat(report):
    pre = "/repo/"
    return (
        [p[len(pre) :] if p.startswith(pre) else p for p, rs in report.files.items() for _ in rs],
        [list(r) for rs in report.files.values() for r in rs],
    )


@pytest.mark.parametrize("name,answer,n_cit,paths,ranges,reward", RELEASED, ids=[r[0] for r in RELEASED])
def test_parse_and_score_as_released(name, answer, n_cit, paths, ranges, reward):
    rep = parse_final_answer(answer)
    if "</final_answer>" not in answer:
        assert rep is None  # no closed block: no answer (the release's valid=False)
    else:
        assert _flat(rep) == (paths, ranges)
    s = score_report("fastcontext", GOLD, rep, 1, finish_reason="stop")
    assert s.value == pytest.approx(reward, abs=1e-6), s.reason


def test_the_six_variants_differ_from_the_lenient_reading():
    """The issue's six answer forms: 1.0 (bulleted, backticked, two blocks, leading /) and 0 (unclosed,
    L ranges) as released; the lenient reward still gives its older 2.0, under its own name only."""
    by = {r[0]: r for r in RELEASED}
    for name, want in (
        ("bulleted", 1.0),
        ("backticked", 1.0),
        ("two_blocks_first_wrong", 1.0),
        ("leading_slash", 1.0),
        ("unclosed", 0.0),
        ("L_ranges", 0.0),
    ):
        answer = by[name][1]
        assert score_report("fastcontext", GOLD, parse_final_answer(answer), 1).value == pytest.approx(want)
        lenient = score_report("fastcontext-lenient", GOLD, None, 1, answer=answer)
        assert lenient.value == pytest.approx(2.0), (name, lenient.reason)
        assert parse_final_answer_lenient(answer) is not None


def test_lenient_reward_reads_the_episodes_last_reply():
    answer = "<final_answer>\n- `shop/pricing.py:L1-L7`\n"
    tr = Trace(
        task_id="t",
        policy="p",
        toolset="fastcontext",
        stop_reason="reported",
        turns=[Turn(index=0, text=answer)],
        report=parse_final_answer(answer),
    )
    assert score_report("fastcontext-lenient", GOLD, tr.report, 1, trace=tr, query="q").value == pytest.approx(2.0)
    assert score_report("fastcontext", GOLD, tr.report, 1, trace=tr, query="q").value == 0.0


def test_the_judge_reads_cited_lines_as_the_release_opens_paths(tmp_path):
    """read_citations_content opens the path as written: /repo/… is the workspace file, a relative path
    is opened from the trainer's directory (missing), and nothing outside the workspace is read."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "pricing.py").write_text("a = 1\nb = 2\n")
    got = citation_contents(
        {
            "/repo/shop/pricing.py": [[2, 2]],
            "shop/pricing.py": [[1, 1]],
            "/etc/passwd": [[1, 1]],
            "/repo/../etc/passwd": [[1, 1]],
        },
        tmp_path,
        released=True,
    )
    assert got == (
        "```/repo/shop/pricing.py:2\nb = 2\n```\n"
        "```shop/pricing.py:1\nError: the file does not exist.\n```\n"
        "```/etc/passwd:1\nError: the file does not exist.\n```\n"
        "```/repo/../etc/passwd:1\nError: the file does not exist.\n```\n"
    )
    # the lenient reading resolves the relative spelling against the workspace
    assert "a = 1" in citation_contents({"shop/pricing.py": [[1, 1]]}, tmp_path)


def test_the_release_reads_a_messy_block_line_by_line():
    """The lenient forms of tests/test_tools.py read as the release reads them (worked out from its
    regular expression ``(.+?):(\\d+(?:-\\d+)?)\\s*(.*)``: the path is all before the first ``:N``)."""
    text = (
        "I looked around.\n<final_answer>\nHere are the locations:\n- src/pkg/auth.py:4-10 (Login and check)\n"
        "* `src/pkg/models.py:2` (the name)\n1. src/pkg/auth.py:13-14, 20-22 (Auth class)\nsrc/pkg/auth.py:L30-L31\n"
        "  tests/test_auth.py   (the test, whole file)\nREADME.md:9-3 reversed\ne.g. this is junk\nNote: more junk\n"
        "</final_answer>\ntrailing text"
    )
    assert parse_final_answer(text).files == {
        "- src/pkg/auth.py": [[4, 10]],
        "* `src/pkg/models.py": [[2, 2]],
        "1. src/pkg/auth.py": [[13, 14]],
        "README.md": [[9, 3]],
    }
    two = "<final_answer>a.py:1-2</final_answer> then <final_answer>b.py:3-4</final_answer>"
    assert parse_final_answer(two).files == {"a.py": [[1, 2]]}  # the first block
    assert parse_final_answer("<FINAL_ANSWER>a.py:1-2</FINAL_ANSWER>") is None  # case-sensitive
    assert parse_final_answer("<final_answer>\na.py:1-2\na.py:1-2\n</final_answer>").files == {"a.py": [[1, 2], [1, 2]]}
