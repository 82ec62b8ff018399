"""The replay widget in a real browser: JupyterLab serves notebook 07, Chromium (through
Playwright, the system's /usr/bin/chromium — no downloaded browsers) runs every cell, presses
Play and moves the slider, and the rendered turn header must follow. The replayed episode is the
shipped heuristic eval run's, and its gold lines must be drawn. A screenshot goes to
``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import time
from pathlib import Path

import nbformat
import pytest
from servers import free_port, server, wait_http

from fasbench.base.paths import repo_root

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTEBOOK = "07_trace_replay.ipynb"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"chromium is not installed at {CHROMIUM}"),
    pytest.mark.timeout(300),
]


def _settings(d: Path) -> None:
    """Lab settings for a test: render every cell (no windowing) and fetch no news."""
    for plugin, value in (
        ("@jupyterlab/notebook-extension/tracker", {"windowingMode": "none"}),
        ("@jupyterlab/apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
    ):
        f = d / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))


def _smoke_copy(dst: Path) -> None:
    """The notebook with its smallest parameters: two scripted tasks (the subagent tree delegates one
    search each); the replay shows the shipped
    example run (a heuristic eval run with its tasks and gold), whatever else is on disk."""
    nb = nbformat.read(repo_root() / "notebooks" / NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    src = re.sub(
        r"(?m)^symbols = .*$", 'symbols = ["BadParameter", "echo"]', cell.source
    )  # two: the tree's two episodes
    cell.source = re.sub(r"(?m)^run = .*$", 'run = ""', src)
    nbformat.write(nb, dst)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    _smoke_copy(root / NOTEBOOK)
    _settings(root / ".settings")
    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        FASBENCH_FIGURES=str(root / "figures"),
        JUPYTER_CONFIG_DIR=str(root / ".config"),
        JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(root / ".settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"),
    )
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",
        "--LabApp.expose_app_in_browser=True",
    ]
    url = f"http://127.0.0.1:{port}"
    with server(argv, root / "lab.log", env, stop_s=15) as proc:
        wait_http(f"{url}/api/status?token={token}", proc, 60, root / "lab.log")
        yield {"url": url, "token": token, "root": root}


KERNEL_READY = """() => {
    const w = window.jupyterapp.shell.currentWidget, s = w && w.sessionContext;
    const k = s && s.session && s.session.kernel;
    return !!(s && s.isReady && k && k.connectionStatus === 'connected' && k.status === 'idle'); }"""


def _until(page, js: str, timeout_s: float, what: str) -> None:
    """Poll a page condition, accepting any dialog Lab opens meanwhile (the kernel choice)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        dialog = page.locator(".jp-Dialog .jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        elif page.evaluate(js):
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _header(replay) -> str:
    return replay.locator(".fasbench-turn-header").inner_text()


@pytest.mark.slow
def test_notebook_runs_in_jupyterlab_and_the_replay_steps(lab, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    artifacts = repo_root() / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1500, "height": 1100},
        )
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        try:
            page.goto(f"{lab['url']}/lab/tree/{NOTEBOOK}?token={lab['token']}")
            expect(page.locator(".jp-NotebookPanel .jp-Notebook")).to_be_visible(timeout=60_000)
            _until(
                page,
                "() => !!(window.jupyterapp && window.jupyterapp.commands.isEnabled('notebook:run-all-cells'))",
                60,
                "the notebook to open",
            )
            _until(page, KERNEL_READY, 90, "the notebook's kernel to start")
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            # done: every code cell has an execution count and the browser widget rendered
            _until(
                page,
                """() => {
                const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
                return p.length > 0 && p.every(t => /\\[\\d+\\]/.test(t))
                    && !!document.querySelector('.fasbench-browser-table'); }""",
                170,
                "all cells to run",
            )

            replay = page.locator(".fasbench-replay").first
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            tracebacks = [e for e in errors.all_inner_texts() if "Traceback" in e or "Error" in e]
            assert not tracebacks, tracebacks[0][:2000]
            assert len(page.locator(".fasbench-replay").all()) >= 4  # the replay, two compared, the browser's

            expect(replay.locator(".fasbench-turn-header")).to_contain_text("Turn 1 / 3")
            expect(replay.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)  # the timeline drew
            # the heuristic eval run's gold: the gold file first in the file panel, gold bars drawn
            files = replay.locator(".fasbench-files")
            expect(files).to_contain_text("django/db/migrations/executor.py ★")
            expect(files).to_contain_text("gold lines viewed")
            expect(replay.locator(".js-plotly-plot .legendtext", has_text="gold").first).to_be_visible(timeout=30_000)
            gold_bars = page.evaluate("""() => {
                const plots = [...document.querySelector('.fasbench-replay').querySelectorAll('.js-plotly-plot')];
                return plots.flatMap(p => (p.data || []).filter(t => t.name === 'gold').map(t => t.x.length)); }""")
            assert gold_bars and gold_bars[0] >= 1, gold_bars
            replay.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / "07_trace_replay_turn1.png"))
            first = _header(replay)

            # Play walks the episode in the browser (Play and slider are linked on the front end).
            replay.locator(".widget-play button").first.click()
            expect(replay.locator(".fasbench-turn-header")).to_contain_text("Turn 3 / 3", timeout=30_000)
            assert _header(replay) != first and "Report" in _header(replay)
            expect(replay.locator(".widget-readout").first).to_have_text("3")
            # Play stops itself one tick after the last turn; move the slider only then
            expect(replay.locator(".widget-play button i").first).to_have_class(
                re.compile(r"\bfa-play\b"), timeout=15_000
            )

            # The slider (keyboard on its handle) moves back; header and call list follow.
            handle = replay.locator(".fasbench-turn-slider .noUi-handle")
            handle.focus()
            handle.press("ArrowLeft")
            expect(replay.locator(".fasbench-turn-header")).to_contain_text("Turn 2 / 3", timeout=30_000)
            expect(replay.locator(".fasbench-call")).to_contain_text("view_file")
            page.wait_for_timeout(1500)  # still turn 2 after a Play interval: nothing else moves it
            expect(replay.locator(".fasbench-turn-header")).to_contain_text("Turn 2 / 3")
            expect(replay.locator(".widget-readout").first).to_have_text("2")

            # A bar of the timeline, clicked, shows its turn and puts its call in the inspector.
            bar = replay.locator(".fasbench-turn-col").nth(0).locator(".fasbench-bar").nth(1)  # turn 1, call 1
            tip = bar.get_attribute("title")
            assert tip.startswith("turn 1, call 1: "), tip
            bar.click()
            expect(replay.locator(".fasbench-turn-header")).to_contain_text("Turn 1 / 3", timeout=30_000)
            expect(replay.locator(".widget-readout").first).to_have_text("1")
            expect(replay.locator(".fasbench-call")).to_contain_text(tip.split(": ", 1)[1].split(" ")[0])
            replay.locator(".fasbench-turn-label", has_text="T3").click()  # a turn label shows its turn
            expect(replay.locator(".fasbench-turn-header")).to_contain_text("Turn 3 / 3", timeout=30_000)
            replay.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / "07_trace_replay.png"))
            replay.screenshot(path=str(artifacts / "07_trace_replay_widget.png"))

            # The subagent tree (issue 39): the main agent with its two search episodes nested under the calls
            # that delegated them; the ATIF round trip gave the same tree; picking the second episode replays it.
            tree = page.locator(".fasbench-subagent-tree")
            expect(tree).to_have_count(1)
            expect(tree.locator(".fasbench-tree-node")).to_have_count(3)
            expect(tree.locator(".fasbench-static-tree li li")).to_have_count(2)  # both one level under the main agent
            expect(tree.locator(".fasbench-static-tree")).to_contain_text("turn 1, call 1: subagent: find BadParameter")
            expect(tree.locator(".fasbench-static-tree")).to_contain_text("turn 3, call 1: subagent: find echo")
            expect(page.locator(".jp-OutputArea-output", has_text="same tree = True")).to_have_count(1)
            expect(tree.locator(".fasbench-turn-header")).to_contain_text("Search for BadParameter")
            tree.get_by_label("episode", exact=True).select_option(index=2)  # (pick …), the first episode, the second
            expect(tree.locator(".fasbench-turn-header")).to_contain_text("Search for echo", timeout=30_000)
            tree.scroll_into_view_if_needed()
            tree.screenshot(path=str(artifacts / "07_subagent_tree.png"))
        except Exception:
            page.screenshot(path=str(artifacts / "07_trace_replay_failure.png"), full_page=True)
            raise
        finally:
            ctx.close()
    assert (artifacts / "07_trace_replay.png").stat().st_size > 10_000
    assert sorted(q.name for q in (lab["root"] / "figures").glob("*.png")) == [
        "07_parallel_vs_sequential.png",
        "07_trace_files.png",
        "07_trace_timeline.png",
    ]


@pytest.mark.slow
def test_static_report_steps_through_turns_without_a_kernel(tmp_path):
    """The report of an executed notebook with a replay, in Chromium with no kernel: the replay is the
    static one, its turn labels and bars switch the turn and the call shown (CSS only), and the icons of
    the widgets that remain have their font (when the widget manager is here: make run's copy)."""
    from nbclient import NotebookClient
    from playwright.sync_api import expect, sync_playwright

    from fasbench.mainjob.report import write_report

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from test_widgets import hand_trace, hand_task\n"
            "from fasbench.replay import TraceReplay\nTraceReplay(hand_trace(), hand_task())"
        ),
        nbformat.v4.new_code_cell("import ipywidgets as W\nW.Play(value=1, min=1, max=3)"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=180, kernel_name="python3", store_widget_state=True).execute()
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, tmp_path / "nb" / "01_replay.ipynb")
    js = repo_root() / ".venv" / "report-js"
    manager = (js / "embed-amd.js").exists()
    page_path = write_report(tmp_path / "nb", tmp_path / "report", js_dir=js if manager else None)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(page_path.as_uri())
            r = page.locator(".fasbench-static-replay")
            expect(r).to_have_count(1)
            headers = r.locator(".fasbench-turn-header")
            expect(headers.nth(0)).to_be_visible()
            expect(headers.nth(1)).to_be_hidden()
            r.locator(".fbs-tlabel", has_text="T3").click()
            expect(headers.nth(2)).to_be_visible()
            expect(headers.nth(2)).to_contain_text("Turn 3 / 3")
            expect(headers.nth(0)).to_be_hidden()
            r.locator(".fbs-bar-0-2").click()  # turn 1's failed call
            expect(headers.nth(0)).to_be_visible()
            expect(r.locator(".fbs-call-0-2")).to_be_visible()
            expect(r.locator(".fbs-call-0-2")).to_contain_text("no such file b.py")
            expect(r.locator(".fbs-call-0-0")).to_be_hidden()
            if manager:
                expect(page.locator(".widget-play i.fa-play")).to_be_visible(timeout=60_000)
                page.wait_for_function(
                    "() => [...document.fonts].some(f => /Font Awesome/.test(f.family) && f.status === 'loaded')",
                    timeout=30_000,
                )
        finally:
            browser.close()


def test_static_report_shows_the_subagent_tree_and_opens_each_replay(tmp_path):
    """The static report of a main agent with two search episodes (test_replay_tree.tree_report), in
    Chromium with no kernel: both episodes nested under the main agent, each one's replay opens under its
    node and steps through its turns (CSS only)."""
    from playwright.sync_api import expect, sync_playwright
    from test_replay_tree import tree_report

    page_path = tree_report(tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(page_path.as_uri())
            tree = page.locator(".fasbench-static-tree")
            expect(tree).to_have_count(1)
            expect(tree.locator(".fasbench-tree-node")).to_have_count(3)
            kids = tree.locator("li li")
            expect(kids).to_have_count(2)
            expect(kids.nth(0)).to_contain_text("Task: Explore <b>x</b>")  # escaped: shown as text
            expect(kids.nth(1)).to_contain_text("Task: Explore callers")
            second = kids.nth(1).locator("details")
            expect(second.locator(".fasbench-static-replay")).to_be_hidden()
            second.locator("summary").click()
            r = second.locator(".fasbench-static-replay")
            expect(r).to_be_visible()
            expect(kids.nth(0).locator(".fasbench-static-replay")).to_be_hidden()  # the first stays closed
            headers = r.locator(".fasbench-turn-header")
            expect(headers.nth(0)).to_contain_text("Turn 1 / 3")
            r.locator(".fbs-tlabel", has_text="T3").click()
            expect(headers.nth(2)).to_be_visible()
            expect(headers.nth(0)).to_be_hidden()
        finally:
            browser.close()
