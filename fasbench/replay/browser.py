"""RunsBrowser: pick runs, see their metrics (with intervals) and paired differences against the
first picked, and open an episode of a picked run in the replay with its gold."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import ipywidgets as W
import polars as pl

from fasbench.base.markup import Markup, html
from fasbench.evaluation import runs as R
from fasbench.replay.run_episodes import RunEpisodes, load_run_episodes
from fasbench.replay.static import display_bundle, runs_html
from fasbench.replay.widgets import TraceBrowser
from fasbench.stats.tables import frame_html  # noqa: F401  (re-exported: the one HTML table of a frame)


class RunsBrowser:
    """All runs under ``paths`` (default ``runs/`` and ``CACHE/runs``) in a multi-select; the metrics
    of the picked runs, their paired comparison against the first picked (``metrics``), and an episode
    browser of one picked run whose rows open the replay with the run's gold.

    State: ``table`` (the runs table), ``picked`` (run names), ``metrics_html``/``compare_html``
    (HTML widgets), ``episodes`` (the open :class:`TraceBrowser` or None), ``run`` (its RunEpisodes)."""

    def __init__(
        self,
        paths: Sequence[str | Path] | None = None,
        metrics: Sequence[str] | None = None,
        level: float = 0.95,
        pick: Sequence[str] = (),
        max_traces: int = 500,
    ):
        self.table = R.runs_table(paths, level=level)
        if not self.table.height:
            raise R.RunError(f"no runs under {', '.join(map(str, paths or R.run_roots())) or 'runs/'}")
        self.metrics, self.level, self.max_traces = (list(metrics) if metrics else None), level, max_traces
        names = self.table["run"].to_list()
        unknown = [p for p in pick if p not in names]
        if unknown:
            raise R.RunError(f"unknown run {unknown[0]!r}; runs: {', '.join(names)}")
        self.select = W.SelectMultiple(
            options=names,
            value=tuple(pick or names[:2]),
            rows=min(8, len(names)),
            description="runs",
            layout=W.Layout(width="98%"),
        )
        self.open_run = W.Dropdown(description="episodes of", layout=W.Layout(width="60%"))
        self.metrics_html, self.compare_html = W.HTML(), W.HTML()
        self._metrics, self._compare = html(""), html("")  # what the two widgets show, as built markup
        self.detail = W.VBox()
        self.episodes: TraceBrowser | None = None
        self.run: RunEpisodes | None = None
        self.widget = W.VBox(
            [
                self.select,
                W.HTML(html("<b>Metrics</b> (mean [{:.0%} bootstrap interval])", level)),
                self.metrics_html,
                self.compare_html,
                self.open_run,
                self.detail,
            ]
        )
        self.widget.add_class("fasbench-runs-browser")
        self.select.observe(self._refresh, "value")
        self.open_run.observe(lambda ch: self.open(ch["new"]), "value")
        self._refresh()

    @property
    def picked(self) -> list[str]:
        return list(self.select.value)

    def _path(self, name: str) -> str:
        return self.table.filter(pl.col("run") == name)["path"][0]

    def _refresh(self, change=None) -> None:
        sub = self.table.filter(pl.col("run").is_in(self.picked))
        self._metrics = frame_html(R.display_runs(sub), "fasbench-runs-table") if sub.height else html("")
        self._compare = html("")
        if len(self.picked) >= 2:
            try:
                cmp = R.compare_runs([self._path(n) for n in self.picked], self.metrics, level=self.level)
                self._compare = html(
                    "<b>Paired differences against {}</b> (run − reference, {:.0%} interval, two-sided p)",
                    self.picked[0],
                    self.level,
                ) + frame_html(R.display_compare(cmp), "fasbench-runs-compare")
            except R.RunError as e:
                self._compare = html("<i>{}</i>", str(e))
        self.metrics_html.value, self.compare_html.value = str(self._metrics), str(self._compare)
        keep = self.open_run.value
        self.open_run.options = self.picked
        self.open_run.value = keep if keep in self.picked else (self.picked[0] if self.picked else None)

    def open(self, name: str | None) -> TraceBrowser | None:
        """Show the episodes of a picked run (None closes them)."""
        if name is None:
            self.episodes, self.run, self.detail.children = None, None, ()
            return None
        if self.run is not None and self.run.path == Path(self._path(name)):
            return self.episodes
        self.run = load_run_episodes(self._path(name), max_traces=self.max_traces)
        gold = (
            f"gold from {self.run.gold_from}"
            if self.run.tasks
            else "no gold found (the run has no tasks.jsonl and no task source)"
        )
        self.episodes = TraceBrowser(self.run.traces, self.run.tasks)
        self.detail.children = (
            W.HTML(html("<small>{} episodes of {}; {}</small>", len(self.run.traces), name, gold)),
            self.episodes.widget,
        )
        if self.open_run.value != name:
            self.open_run.value = name
        return self.episodes

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display_bundle(self.widget, self.static_html(), include, exclude)

    def static_html(self) -> Markup:
        """The picked runs' metrics and comparison and the open run's episodes, as HTML that needs no kernel."""
        return runs_html(
            self._metrics, self._compare, self.episodes.static_html() if self.episodes is not None else html("")
        )
