"""`fasbench replay RUN TASK` outside Jupyter (issue 27): a text rendering in the terminal and a static
HTML page, of the shipped example run (a real heuristic evaluation with its gold)."""

import json
import re
from html.parser import HTMLParser

from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.replay import example_run, pick_episode
from fasbench.replay.run_episodes import EXAMPLE_TASK

runner = CliRunner()


def _episode():
    r = example_run()
    return r, pick_episode(r, EXAMPLE_TASK)


def test_text_replay_of_the_example_run_shows_every_turn_and_call():
    r, tr = _episode()
    res = runner.invoke(app, ["replay", "example", EXAMPLE_TASK, "--width", "160"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert f"task {EXAMPLE_TASK}" in out and f"policy {tr.policy}" in out and f"run {r.name}" in out
    for t in tr.turns:
        n = len(t.calls)
        assert re.search(rf"^Turn {t.index + 1} / {len(tr.turns)} · {n} (parallel calls|call)", out, re.M), t.index
    calls = [c for t in tr.turns for c in t.calls]
    listed = re.findall(r"^  (\d+)\. (\S+)", out, re.M)
    assert [name for _, name in listed] == [c.name for c in calls]  # each call once, in order
    first = tr.turns[0].results[0].output.splitlines()[0]
    assert "│ " + first[:60] in out  # a result excerpt
    for p in tr.report.files:
        assert p in out
    for p in r.tasks[EXAMPLE_TASK].gold.edited:
        assert f"gold: {p}" in out
    m = re.search(r"^Reward relace = (\d\.\d{3}) \(scored against the gold\)\n  parts: (.+)$", out, re.M)
    assert m and "turn_penalty" in m.group(2)
    assert re.search(r"^total +\d+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d+$", out, re.M)  # viewed … cited unseen … gold
    assert max(map(len, out.splitlines())) <= 160


def test_text_replay_default_episode_and_width():
    res = runner.invoke(app, ["replay"])
    assert res.exit_code == 0 and f"task {EXAMPLE_TASK}" in res.stdout  # the example run's example task
    assert max(map(len, res.stdout.splitlines())) <= 100


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.refs, self.stack, self.bad = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href")]
        if tag not in ("meta", "br", "img", "link"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.bad.append(tag)


def test_html_replay_is_a_static_self_contained_page(tmp_path):
    _, tr = _episode()
    f = tmp_path / "sub" / "replay.html"
    res = runner.invoke(app, ["replay", "example", EXAMPLE_TASK, "--html", str(f)])
    assert res.exit_code == 0, res.output
    page = f.read_text(encoding="utf-8")
    p = _Tags()
    p.feed(page)
    assert p.bad == [] and p.stack == []  # well nested
    assert "script" not in p.tags and p.refs == []  # no script, nothing fetched
    assert p.tags.count("details") == 1 + sum(len(t.calls) for t in tr.turns)  # the query, then each call
    assert page.count("class='turn'") == len(tr.turns) + 1  # the turns, then the report
    assert "Reward relace = " in page and "turn_penalty" in page
    q = json.dumps(tr.turns[0].calls[0].arguments["query"])[1:30]
    assert q.replace("\\\\", "\\") in page or q in page


def test_replay_errors_are_one_line(tmp_path):
    res = runner.invoke(app, ["replay", "example", "no__such-1"])
    assert res.exit_code == 2 and res.stderr.startswith("error: run heuristic-swebench-lite has no episode of task")
    assert EXAMPLE_TASK in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = runner.invoke(app, ["replay", str(tmp_path / "missing")])
    assert res.exit_code == 2 and res.stderr.startswith("error:")
    res = runner.invoke(app, ["replay", "example", "--html", str(tmp_path)])
    assert res.exit_code == 2 and "is a folder" in res.stderr
    res = runner.invoke(app, ["replay", "example", "--reward", "nope"])
    assert res.exit_code == 2 and "choose one of" in res.stderr
