"""Tables: a frame of display strings as a booktabs LaTeX ``table`` for a paper (``fasbench runs --latex``,
``fasbench compare --latex``, notebook 09's field table), and :func:`text_table`, the one aligned plain-text
table of the terminal views (``fasbench runs``/``compare``, ``fasbench eval``'s summary, the replay's
lines per file), rendered by rich with no colour, no markup and nothing cut or wrapped.

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

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "−": "$-$",
            "…": r"\ldots{}", "·": r"$\cdot$", "≥": r"$\geq$", "≤": r"$\leq$", "±": r"$\pm$", "×": r"$\times$", "\n": " ", "\r": " "}
_ESCAPE = re.compile("|".join(re.escape(k) for k in _SPECIAL))
_NUMERIC = re.compile(r"^[-+−]?(\d[\d,]*(\.\d+)?|\.\d+|n/a|–)(%)?( \[.*\])?$")


#: A box of one blank divider (with one space of padding: columns two spaces apart) and a rule of dashes
#: under the header.
_RULE = box.Box("    \n    \n -  \n    \n    \n    \n    \n    \n", ascii=True)


def text_table(columns: Sequence[str], rows: Iterable[Sequence[object]], right: Collection[str] = (),
               rule: bool = True) -> str:
    """Aligned plain text of a table: a header line, a rule of dashes under it (``rule``), one line per
    row; columns two spaces apart, those named in ``right`` right-aligned, the others left-aligned.
    Cells are shown as ``str`` of them, whole (no truncation, no wrapping), through
    :func:`fasbench.base.errors.printable` (a control character, a line break included, as its escape),
    never read as markup; no line ends in a space."""
    t = Table(box=_RULE if rule else None, show_edge=False, pad_edge=False, padding=(0, 1 if rule else 2, 0, 0),
              show_header=True, header_style=None)
    for c in columns:
        t.add_column(str(c), justify="right" if c in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*(printable(v) for v in r))
    out = io.StringIO()
    Console(file=out, width=1 << 20, color_system=None, markup=False, emoji=False, highlight=False,
            force_terminal=False, legacy_windows=False).print(t)
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
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{align}}}", r"\toprule",
             " & ".join(latex_escape(c) for c in cols) + r" \\", r"\midrule"]
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
