"""One place where the ``fasbench`` command turns exceptions into a one-line error and an exit code.

Every subcommand runs inside :class:`CliGroup.invoke` (the root group of ``fasbench.cli.app``, so
subcommands of plugins and sub-groups too). What escapes a command is printed as ``error: <one
line>`` on stderr, never as a traceback:

- bad input — :class:`UserError`, ``fasbench.records.RecordError`` and other ``ValueError``\\ s,
  ``OSError`` (a folder where a file is expected, an ``--out`` that is a file, a missing or
  unreadable file), text that is not UTF-8 (a binary file), a config that is not YAML — exits with
  status 2, like a usage error;
- anything else exits with status 1 and says it is an internal error.

``FASBENCH_DEBUG=1`` re-raises instead, to see the traceback. typer's own exits, aborts and usage
errors pass through unchanged; Ctrl-C exits with 130 (typer).
"""

from __future__ import annotations

import os
import sys
import unicodedata
from typing import Any

import yaml
from typer import Abort, Exit
from typer._click.exceptions import ClickException
from typer.core import TyperGroup

MAX_LEN = 400  # characters of an error message shown


class UserError(ValueError):
    """Bad input from the user: the message says what was wrong and is shown as is."""


def describe(e: BaseException) -> str:
    """A one-line description of an exception for the terminal."""
    if isinstance(e, UnicodeDecodeError):
        msg = f"not UTF-8 text (a binary file?): {e.reason} at byte {e.start}"
    elif isinstance(e, OSError) and e.strerror:
        msg = e.strerror + (f": {e.filename}" if e.filename else "") + (f" -> {e.filename2}" if e.filename2 else "")
    elif isinstance(e, RecursionError):
        msg = "input nested too deeply"
    else:
        msg = str(e) or type(e).__name__
    msg = " ".join(msg.split())
    return msg if len(msg) <= MAX_LEN else msg[: MAX_LEN - 3] + "..."


def printable(text: object, n: int | None = None) -> str:
    """``text`` safe for a terminal: each control or format character (``\\n``, ESC of a CSI or OSC
    sequence, BEL, a bidi override) written as its Python escape, cut to ``n`` characters; a string
    from data (a trace, a file name, a model's reply) printed through it can neither move the cursor,
    set the title, make a link nor forge a line."""
    s = "".join(c if unicodedata.category(c) not in ("Cc", "Cf") else repr(c)[1:-1] for c in str(text))
    return s if n is None or len(s) <= n else s[: n - 1] + "…"


# bad input, whichever layer noticed it (yaml: a config file that is not YAML)
USER_ERRORS = (ValueError, OSError, RecursionError, yaml.YAMLError)


def exit_code(e: BaseException) -> int:
    return 2 if isinstance(e, USER_ERRORS) else 1


class CliGroup(TyperGroup):
    """The root command group: see the module docstring."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (Exit, Abort, ClickException):
            raise
        except Exception as e:
            if os.environ.get("FASBENCH_DEBUG"):
                raise
            code = exit_code(e)
            prefix = "error: " if code == 2 else f"error: internal error ({type(e).__name__}): "
            hint = "" if code == 2 else " (FASBENCH_DEBUG=1 shows the traceback)"
            print(prefix + describe(e) + hint, file=sys.stderr)
            raise Exit(code) from None
