"""Tables for a paper, the terminal and the report: a frame of display strings as a booktabs LaTeX ``table``
(``fasbench runs --latex``, ``fasbench compare --latex``, notebook 09's field table); :func:`text_table`, the one
aligned plain-text table of the terminal views (``fasbench runs``/``compare``, ``fasbench eval``'s summary, the
replay's lines per file), rendered by rich with no colour, no markup and nothing cut or wrapped; and any frame as a
plain HTML table in a notebook (:func:`frame_html`; :func:`notebook_tables` makes it how a notebook shows every
polars frame: no quoted strings, dtype row, ``shape:`` line or ``…`` rows hiding data).

Every cell is escaped for LaTeX (``& % $ # _ { } ~ ^ \\`` and the characters fasbench prints that a plain
LaTeX does not know: ``–`` ``−`` ``…`` ``·`` ``≥`` ``≤`` ``±`` ``×``), so a policy spec, a run name or a task id
from a run folder cannot break the document or run a command (``\\input``, ``\\write18``). Columns whose
cells all read as numbers or intervals are right-aligned; the rest left-aligned. Needs ``booktabs``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import polars as pl
from rich import box
from rich.console import Console
from rich.table import Table

from fasbench.base.errors import printable
from fasbench.base.markup import Markup, html, join

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "–": "--",
    "−": "$-$",
    "…": r"\ldots{}",
    "·": r"$\cdot$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "±": r"$\pm$",
    "×": r"$\times$",
    "\n": " ",
    "\r": " ",
}
_ESCAPE = re.compile("|".join(re.escape(k) for k in _SPECIAL))
_NUMERIC = re.compile(r"^[-+−]?(\d[\d,]*(\.\d+)?|\.\d+|n/a|–)(%)?( \[.*\])?$")


#: A box of one blank divider (with one space of padding: columns two spaces apart) and a rule of dashes
#: under the header.
_RULE = box.Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)


def text_table(
    columns: Sequence[str], rows: Iterable[Sequence[object]], right: Collection[str] = (), rule: bool = True
) -> str:
    """Aligned plain text of a table: a header line, a rule of dashes under it (``rule``), one line per
    row; columns two spaces apart, those named in ``right`` right-aligned, the others left-aligned.
    Cells are shown as ``str`` of them, whole (no truncation, no wrapping), through
    :func:`fasbench.base.errors.printable` (a control character, a line break included, as its escape),
    never read as markup; no line ends in a space."""
    t = Table(
        box=_RULE if rule else None,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1 if rule else 2, 0, 0),
        show_header=True,
        header_style=None,
    )
    for c in columns:
        t.add_column(str(c), justify="right" if c in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*(printable(v) for v in r))
    out = io.StringIO()
    Console(
        file=out,
        width=1 << 20,
        color_system=None,
        markup=False,
        emoji=False,
        highlight=False,
        force_terminal=False,
        legacy_windows=False,
    ).print(t)
    return "\n".join(ln.rstrip() for ln in out.getvalue().splitlines())


def latex_escape(text: object) -> str:
    """``text`` as LaTeX source that prints it (no command can be formed from it)."""
    s = "".join(ch for ch in str(text) if ch >= " " or ch in "\n\r")  # control characters dropped
    return _ESCAPE.sub(lambda m: _SPECIAL[m.group(0)], s)


def _numeric(values: Sequence[str]) -> bool:
    vals = [v for v in values if v not in ("", "–", "n/a")]
    return bool(vals) and all(_NUMERIC.match(v.strip()) for v in vals)


def to_latex(df: pl.DataFrame, caption: str = "", label: str = "", columns: Sequence[str] | None = None) -> str:
    """A booktabs ``table`` of ``df`` (cells as strings, ``None`` as ``–``): header, ``\\midrule``, one row per
    row, with ``caption`` and ``label`` when given."""
    cols = list(columns or df.columns)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"latex table: no column {', '.join(map(repr, missing))} (columns: {', '.join(df.columns)})")
    cells = [["–" if v is None else str(v) for v in row] for row in df.select(cols).iter_rows()]
    align = "".join("r" if _numeric([r[i] for r in cells]) else "l" for i in range(len(cols)))
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in cols) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(latex_escape(v) for v in row) + r" \\" for row in cells]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{re.sub(r'[^A-Za-z0-9:._-]', '-', label)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_latex(df: pl.DataFrame, path: str | Path, caption: str = "", label: str = "") -> Path:
    """:func:`to_latex` written to ``path`` (the user's chosen file)."""
    p = Path(path)
    p.write_text(to_latex(df, caption, label), encoding="utf-8")
    return p


# ---------------------------------------------------------------- HTML tables in notebooks and the report

MAX_HTML_ROWS = 500  # rows past this are left out with a line saying how many (never silently)


def cell_text(v: object) -> str:
    """One cell as a reader wants it: ``–`` for a missing value, a float to 6 significant digits (as
    polars prints it, so a number a findings cell quotes is still visible), lists joined by ``, ``."""
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return format(v, ".6g")
    if isinstance(v, (list, tuple)):
        return ", ".join(cell_text(x) for x in v)
    return str(v)


def frame_html(df: pl.DataFrame | pl.Series, cls: str = "fasbench-table", max_rows: int = MAX_HTML_ROWS) -> Markup:
    """``df`` as a compact HTML table that scrolls sideways instead of being cut: its column names, every
    row up to ``max_rows`` (then one line saying how many more), numbers right-aligned, every cell escaped
    (:mod:`fasbench.base.markup`), with no dtype row and no quotes around strings."""
    if isinstance(df, pl.Series):
        df = df.to_frame()
    cells = [[cell_text(v) for v in row] for row in df.head(max_rows).iter_rows()]
    right = [_numeric([r[i] for r in cells]) for i in range(df.width)]
    th = join(
        html("<th style='padding:2px 8px;text-align:{}'>{}</th>", "right" if r else "left", c)
        for c, r in zip(df.columns, right)
    )
    trs = join(
        html(
            "<tr>{}</tr>",
            join(
                html(
                    "<td style='padding:2px 8px;white-space:nowrap;text-align:{}'>{}</td>", "right" if r else "left", v
                )
                for v, r in zip(row, right)
            ),
        )
        for row in cells
    )
    more = (
        html(
            "<div style='font-size:11px;color:#666'>{:,} more rows not shown (first {:,} of {:,})</div>",
            df.height - max_rows,
            max_rows,
            df.height,
        )
        if df.height > max_rows
        else html("")
    )
    return html(
        "<div style='overflow-x:auto;max-width:100%'><table class='{}' style='font-size:12px;"
        "border-collapse:collapse'><thead><tr>{}</tr></thead><tbody>{}</tbody></table>{}</div>",
        cls,
        th,
        trs,
        more,
    )


def notebook_tables() -> bool:
    """Have this IPython kernel show every polars DataFrame and Series as :func:`frame_html` (called by
    each notebook's setup cell); False outside IPython."""
    try:  # local import: IPython is there only in notebooks (and costs start-up time elsewhere)
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the notebook extras
        return False
    ip = get_ipython()
    if ip is None:
        return False
    fmt = ip.display_formatter.formatters["text/html"]
    for kind in (pl.DataFrame, pl.Series):
        fmt.for_type(kind, lambda df: str(frame_html(df)))
    return True
