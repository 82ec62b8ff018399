"""The one HTML renderer: every page or fragment fasbench writes (the report, the replay's static pages
and widgets, the compare table, the runs browser, plot hover texts) is built here, from *constant*
templates whose holes are escaped by construction.

:func:`html` is ``markupsafe.Markup(template).format(...)`` (markupsafe is jinja2's escaping library,
already a dependency through jinja2): a value put in a hole is escaped (``<``, ``>``, ``&``, ``"``, ``'``),
unless it is itself :class:`Markup` built by this module, so a trace id, a policy, a tool argument or an
observation can never open a tag or leave an attribute. :func:`join` joins fragments (escaping any
plain string among them); :func:`escape` gives a value as escaped text. ``tests/test_architecture_names_pages.py``
holds the rule: no f-string or ``%``/``.format`` with an HTML tag outside this module, ``html`` is called
with a literal template, and ``Markup`` is built nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from markupsafe import Markup, escape

__all__ = ["Markup", "escape", "html", "join", "markdown_text"]


def html(template: str, /, *args: object, **kwargs: object) -> Markup:
    """``template`` (a literal of fasbench's own: the architecture test checks it) with ``{}`` holes
    filled by escaped values; format specs work as in ``str.format`` (``{:.3f}``)."""
    return Markup(template).format(*args, **kwargs)


def join(parts: Iterable[object], sep: str = "") -> Markup:
    """The fragments one after another, each plain string (or other value) escaped."""
    return Markup(sep).join(escape(p) for p in parts)


_LINK = re.compile(r"\](?=[(\[:])")


def markdown_text(md: str) -> str:
    """Markdown with no raw HTML and no link left in it: ``&``, ``<`` and ``>`` as entities (Markdown
    shows them as the characters) and a ``]`` before ``(``, ``[`` or ``:`` escaped (no inline or
    reference link, no link definition), so that a value written into a Markdown output (a policy or
    run name in a notebook's findings) can neither open a tag nor make a ``javascript:`` link in the
    report: nbconvert renders Markdown's raw HTML and such links as they are (checked with nbconvert 7)."""
    out = str(md).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _LINK.sub(r"\\]", out)
