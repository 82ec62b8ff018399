"""Interactive replay of parallel tool-call traces, of named runs with their gold, and a browser over runs.

- :mod:`~fasbench.replay.timeline` — :func:`call_spans` / :func:`assign_lanes`: every call as a span on a
  lane, one lane per concurrent call slot; :func:`turn_columns`: the same in one equal-width column per
  turn (what the replay draws); :func:`turn_summary`;
- :mod:`~fasbench.replay.seen` — what one call showed (the tools' one observation type,
  ``fasbench.tools.observed.Seen``: its kind, lines of file content, search hits): the replay's one
  boundary with the tools (``fasbench.tools.observation``);
- :mod:`~fasbench.replay.overlay` — :func:`file_overlay`: per file the lines viewed, matched, cited and gold;
- :mod:`~fasbench.replay.episode_filter` — :func:`filter_sort`, :data:`SORT_KEYS`: the browser's filter and sort over
  rows of the one episode table (:func:`fasbench.evaluation.episodes.episode_row`, its columns ``wall_s``, ``stop_reason``, …);
- :mod:`~fasbench.replay.plots` — :func:`timeline_figure`, :func:`compare_figure`, :func:`file_figure`
  (saved for papers with :func:`fasbench.stats.figures.save`); :mod:`~fasbench.replay.panels` — the HTML panels;
- :mod:`~fasbench.replay.widgets` — :class:`TraceReplay`, :func:`compare`, :class:`TraceBrowser`;
- :mod:`~fasbench.replay.static` — :func:`replay_html`: every turn as HTML with a CSS-only turn switcher,
  which the widgets hand to Jupyter beside their live view for pages read without a kernel;
- :mod:`~fasbench.replay.run_episodes` — :func:`load_run_episodes` (a run by path or name: its traces and its
  tasks with gold, from ``tasks.jsonl`` or the task source recorded in ``run.json``),
  :func:`example_run` (the shipped example run, notebook 07's default), :func:`replay_run`;
- :mod:`~fasbench.replay.browser` — :class:`RunsBrowser`: pick runs, see their metrics and paired
  differences, open an episode of one of them in the replay (with its gold);
- :mod:`~fasbench.replay.demo` — :func:`symbol_task`, :func:`demo_episode`: scripted parallel and
  sequential searches (turns in ``data/demo/``) run through the real harness;
- :mod:`~fasbench.replay.text` — :func:`~fasbench.replay.text.episode_view`, ``to_text``, ``to_html``: one
  episode for the terminal or as a static HTML page, without Jupyter (``fasbench replay RUN TASK [--html
  FILE]``, ``fasbench/replay/cli.py``).
"""

from fasbench.replay.browser import RunsBrowser, frame_html
from fasbench.replay.demo import demo_episode, demo_turns, symbol_task
from fasbench.replay.episode_filter import SORT_KEYS, filter_sort
from fasbench.replay.overlay import FileOverlay, file_overlay, overlay_totals, report_turn
from fasbench.replay.plots import compare_figure, file_figure, timeline_figure
from fasbench.replay.run_episodes import (
    EXAMPLE_RUN,
    RunEpisodes,
    example_run,
    load_run_episodes,
    pick_episode,
    replay_run,
)
from fasbench.replay.seen import grep_hits, observe, viewed_ranges
from fasbench.replay.static import replay_html
from fasbench.replay.timeline import assign_lanes, call_spans, turn_columns, turn_summary
from fasbench.replay.widgets import Comparison, TraceBrowser, TraceReplay, compare, compare_rows

__all__ = [
    "EXAMPLE_RUN",
    "Comparison",
    "FileOverlay",
    "RunEpisodes",
    "RunsBrowser",
    "TraceBrowser",
    "TraceReplay",
    "SORT_KEYS",
    "assign_lanes",
    "call_spans",
    "compare",
    "compare_figure",
    "compare_rows",
    "demo_episode",
    "demo_turns",
    "example_run",
    "file_figure",
    "file_overlay",
    "filter_sort",
    "frame_html",
    "grep_hits",
    "load_run_episodes",
    "observe",
    "overlay_totals",
    "pick_episode",
    "replay_run",
    "replay_html",
    "report_turn",
    "symbol_task",
    "timeline_figure",
    "turn_columns",
    "turn_summary",
    "viewed_ranges",
]
