"""Replay of named evaluation runs with their gold, and a browser over all runs.

- :mod:`fasbench.replay.runs` — :func:`load_run_episodes` (a run by path or name: its traces and its
  tasks with gold, from ``tasks.jsonl`` or the task source recorded in ``run.json``),
  :func:`example_run` (the shipped example run, notebook 07's default), :func:`replay_run`;
- :mod:`fasbench.replay.browser` — :class:`RunsBrowser`: pick runs, see their metrics and paired
  differences, open an episode of one of them in the replay (with its gold).

The replay widgets themselves are in :mod:`fasbench.widgets`.
"""

from fasbench.replay.browser import RunsBrowser, frame_html
from fasbench.replay.runs import (EXAMPLE_RUN, RunEpisodes, example_run, load_run_episodes, pick_episode,
                                  replay_run)

__all__ = ["EXAMPLE_RUN", "RunEpisodes", "RunsBrowser", "example_run", "frame_html", "load_run_episodes", "pick_episode",
           "replay_run"]
