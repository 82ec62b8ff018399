"""The report's head: what run the page shows, how trustworthy its numbers are, and where each section is.

:func:`header_markdown` writes the first cell of the joined notebook: the run's date, code version, machine
and total time (from ``run.json``, which :mod:`fasbench.mainjob.run` writes beside the executed notebooks;
without one, the time the page was built and this machine, said as such), a **Smoke settings** banner
naming every notebook whose findings say they ran at smoke settings (``FASBENCH_SHORT=1`` or fewer tasks
than the study's size: :attr:`fasbench.stats.findings.Findings.smoke`), the numbers a findings cell quotes
that no output shows (:func:`fasbench.mainjob.report.unshown_numbers`), and a section index with an
anchor for each notebook and for its "What we found". :func:`scrub_notebook` writes the machine's folders
(the checkout, the home folder, the cache) out of every output's text (:func:`fasbench.base.paths.scrub_paths`).
Every value from a notebook or ``run.json`` is escaped (:mod:`fasbench.base.markup`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import psutil

from fasbench.base.contain import PathRefused, read_regular
from fasbench.base.markup import html, join
from fasbench.base.paths import scrub_paths
from fasbench.base.provenance import code_version
from fasbench.stats.findings import SMOKE_MARK

RUN_FILE = "run.json"
MAX_RUN_BYTES = 1 << 20


@dataclass
class Section:
    """One notebook of the report: its anchor, file name, title, smoke note and unshown numbers."""

    anchor: str
    name: str
    title: str = ""
    smoke: str = ""  # why its findings say "Smoke settings" ("" when they do not)
    unshown: list[str] = field(default_factory=list)
    has_findings: bool = False


def read_run_record(folder: Path) -> dict | None:
    """``folder/run.json`` as written by :func:`fasbench.mainjob.run.run_all`, or None when there is none or
    it is not a JSON object (a malformed field is then shown as missing, never trusted as markup)."""
    try:
        data, more = read_regular(Path(folder) / RUN_FILE, MAX_RUN_BYTES)
        rec = json.loads(data.decode("utf-8"))
    except (PathRefused, OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and not more else None


def _text(o: dict) -> str:
    if o.get("output_type") == "stream":
        return str(o.get("text", ""))
    data = o.get("data", {})
    t = data.get("text/markdown") or data.get("text/plain") or ""
    return "".join(map(str, t)) if isinstance(t, list) else str(t)


_SMOKE = re.compile(re.escape(SMOKE_MARK) + r"\**:\s*(.*?)\.(?:\s|$)", re.DOTALL)


def section_of(nb, anchor: str, name: str) -> Section:
    """The notebook's title (its first Markdown heading), and the smoke note of its findings cells."""
    sec = Section(anchor, name)
    for c in nb.cells:
        src = "".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source", ""))
        if not sec.title and c.get("cell_type") == "markdown":
            m = re.search(r"^#+\s+(.+)$", src, re.MULTILINE)
            if m:
                sec.title = m.group(1).strip()[:120]
        if "findings" in c.get("metadata", {}).get("tags", []):
            sec.has_findings = True
            for o in c.get("outputs", []):
                m = _SMOKE.search(_text(o))
                if m and not sec.smoke:
                    sec.smoke = m.group(1).strip()[:300]
    return sec


def _minutes(s) -> str:
    if not isinstance(s, (int, float)) or isinstance(s, bool):
        return "–"
    return f"{s / 60:.0f} min" if s >= 600 else f"{s / 60:.1f} min"


def _machine(m) -> str:
    if not isinstance(m, dict):
        return "–"
    parts = []
    if isinstance(m.get("cores"), int):
        parts.append(f"{m['cores']} cores")
    if isinstance(m.get("memory_gb"), (int, float)):
        parts.append(f"{m['memory_gb']:g} GiB memory")
    if isinstance(m.get("load_1min"), (int, float)):
        parts.append(f"load {m['load_1min']:g} at the start")
    if m.get("system"):
        parts.append(str(m["system"]))
    return ", ".join(parts) or "–"


def this_machine() -> dict:
    """The machine building the page (when no run.json names the run's)."""
    return {"cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}


def header_markdown(sections: list[Section], record: dict | None, built: str | None = None) -> str:
    """The first cell of the report (see the module's docstring); raw HTML built from escaped holes."""
    built = built or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    if record:
        code = record.get("code") if isinstance(record.get("code"), dict) else {}
        rows.append(
            html(
                "<li><b>Run</b>: {} to {} — total {}{}</li>",
                record.get("started") or "–",
                record.get("finished") or "(not finished)",
                _minutes(record.get("total_s")),
                " (FASBENCH_SHORT=1)" if record.get("short") is True else "",
            )
        )
        rows.append(
            html(
                "<li><b>Code</b>: {}{}</li>",
                code.get("describe") or "–",
                html(" (commit <code>{}</code>)", code["commit"]) if isinstance(code.get("commit"), str) else "",
            )
        )
        rows.append(html("<li><b>Machine</b>: {}</li>", _machine(record.get("machine"))))
    else:
        code = code_version()
        rows.append(
            html(
                "<li><b>Run</b>: no run record (<code>run.json</code>, written by <code>make run</code>) beside "
                "these notebooks: the run's date, machine and time are unknown</li>"
            )
        )
        rows.append(html("<li><b>Code now</b>: {}</li>", code.get("describe") or "–"))
        rows.append(html("<li><b>Report built on</b>: {}</li>", _machine(this_machine())))
    rows.append(html("<li><b>Page built</b>: {}</li>", built))
    times = {e.get("notebook"): e for e in (record or {}).get("notebooks", []) if isinstance(e, dict)}
    out = [str(html("<h1>fasbench report</h1>\n<ul>{}</ul>", join(rows)))]
    smoke = [s for s in sections if s.smoke] if (record or {}).get("short") is not True else sections
    if smoke:
        items = join(
            html("<li><a href='#{}'>{}</a>: {}</li>", s.anchor, s.anchor, s.smoke or "FASBENCH_SHORT=1") for s in smoke
        )
        out.append(
            str(
                html(
                    "<div style='border:2px solid #D55E00;padding:6px 12px;margin:8px 0'><b>{}</b> in {} of {} "
                    "notebooks: they ran shortened or below their study size (each listed with why); read each number "
                    "with its n: those below the study size check that the pipeline runs and support no claim."
                    "<ul>{}</ul></div>",
                    SMOKE_MARK,
                    len(smoke),
                    len(sections),
                    items,
                )
            )
        )
    unshown = [s for s in sections if s.unshown]
    if unshown:
        items = join(
            html(
                "<li><a href='#{}'>{}</a>: {}{}</li>",
                s.anchor,
                s.anchor,
                ", ".join(s.unshown[:8]),
                " …" if len(s.unshown) > 8 else "",
            )
            for s in unshown
        )
        out.append(
            str(
                html(
                    "<div style='border:1px solid #999;padding:6px 12px;margin:8px 0'><b>Findings quote "
                    "numbers no output shows</b> (computed in the findings cell, or hidden in a table above "
                    "it):<ul>{}</ul></div>",
                    items,
                )
            )
        )
    index = []
    for s in sections:
        e = times.get(s.name, {})
        took = f" · {_minutes(e.get('seconds'))}" if e else ""
        tries = f" · {e['tries']} tries" if isinstance(e.get("tries"), int) and e["tries"] > 1 else ""
        index.append(
            html(
                "<li><a href='#{}'>{}</a>{}{}{}{}{}</li>",
                s.anchor,
                s.anchor,
                html(" — {}", s.title) if s.title else "",
                html(" (<a href='#{}-findings'>what we found</a>)", s.anchor) if s.has_findings else "",
                took,
                tries,
                html(" · <b>{}</b>", SMOKE_MARK.lower()) if s in smoke else "",
            )
        )
    out.append(str(html("<h2>Contents</h2>\n<ol>{}</ol>", join(index))))
    return "\n\n".join(out)


_SKIP_KEYS = ("image/png", "image/jpeg", "application/pdf")


def scrub_value(v, extra: tuple[tuple[str, str], ...] = ()):
    """``v`` (an output, a widget state) with every string's machine folders written portably; images kept."""
    if isinstance(v, str):
        return scrub_paths(v, extra)
    if isinstance(v, list):
        return [scrub_value(x, extra) for x in v]
    if isinstance(v, dict):
        return {k: (x if k in _SKIP_KEYS else scrub_value(x, extra)) for k, x in v.items()}
    return v


def scrub_notebook(nb, extra: tuple[tuple[str, str], ...] = ()) -> None:
    """Every output of ``nb`` without this machine's (and ``extra``'s) absolute folders."""
    for c in nb.cells:
        if c.get("outputs"):
            c["outputs"] = [nbformat.from_dict(scrub_value(dict(o), extra)) for o in c["outputs"]]


def findings_anchor(anchor: str) -> str:
    """A Markdown cell placed before a notebook's findings cell: the index's "what we found" link target."""
    return str(html("<a id='{}-findings'></a>", anchor))


__all__ = [
    "Section",
    "findings_anchor",
    "header_markdown",
    "read_run_record",
    "scrub_notebook",
    "scrub_value",
    "section_of",
]
