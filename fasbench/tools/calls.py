"""Calls of a kind in a tool set's own names and arguments: code outside ``fasbench.tools`` asks for
"a read of lines A..B of F" and never names a tool. Used by the scripted (LLM-free) policies and by
the reference-trace converter (``fasbench.sft.reference``: a main agent's shell reads → harness calls).

:class:`Calls` declares the builders; each tool set's class names its call shapes (``Toolset.calls``):
:class:`RelaceCalls` (``relace``) and :class:`FastContextCalls` (``fastcontext``, ``fastcontext-fork``).
``calls_for("relace").search(cid, pattern)`` (:func:`fasbench.tools.calls_for`) is a ``grep_search``
call, ``calls_for("fastcontext").search(...)`` a ``Grep`` call; likewise ``read`` (a line range of a
file), ``list_dir``, ``find`` (files by base name, under a folder), ``exists`` (``ls FILE``),
``find_any`` (files whose name contains a word / ends with a suffix), ``report`` (the answer: a
``report_back`` call or a ``<final_answer>`` block) and ``report_ids`` (the answer under the ``ids``
report contract, :mod:`fasbench.tools.contract`). Relace has no file-finding tool: ``find``/``find_any``
use its read-only ``bash`` (``find``, ``rg --files``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from fasbench.records import Ranges, Reply, ToolCall


@dataclass(frozen=True)
class Calls:
    """Builds calls for one tool set (``name``: the tool set's name); a tool set's dialect subclasses
    it and writes every builder below that raises here."""

    name: str

    def search(
        self,
        cid: str,
        pattern: str,
        include: str | None = "*.py",
        ignore_case: bool = False,
        path: str | None = None,
        files_only: bool = False,
        context: dict[str, int] | None = None,
    ) -> ToolCall:
        """Match lines of the Rust regex ``pattern`` in files matching the glob ``include``, under
        ``path`` (a file or a folder; None: the whole workspace). ``files_only`` and ``context``
        (``{"-A"|"-B"|"-C": n}``, n <= 100) are kept where the tool set has them (FastContext's Grep)
        and dropped where it has not (Relace's grep_search)."""
        raise NotImplementedError(f"tool set {self.name}: no search call")

    def find(self, cid: str, name: str, directory: str | None = None) -> ToolCall:
        """Files whose base name matches ``name`` (a glob like ``foo.py`` or ``*foo*``), anywhere under
        ``directory`` (None: the workspace)."""
        raise NotImplementedError(f"tool set {self.name}: no find call")

    def exists(self, cid: str, path: str) -> ToolCall:
        """Whether file ``path`` exists (``ls FILE``)."""
        raise NotImplementedError(f"tool set {self.name}: no exists call")

    def find_any(self, cid: str, names: list[str], exact: bool = False) -> ToolCall:
        """Files whose name contains one of ``names`` (lowercase words), or with ``exact``, whose
        path ends with one of them (file names or path suffixes such as ``utils/text.py``)."""
        raise NotImplementedError(f"tool set {self.name}: no find_any call")

    def read(self, cid: str, path: str, start: int, end: int | None) -> ToolCall:
        """Lines ``start``..``end`` of ``path`` (``end=None``: to the end of the file)."""
        raise NotImplementedError(f"tool set {self.name}: no read call")

    def list_dir(self, cid: str, path: str = ".", recursive: bool = True) -> ToolCall:
        """The entries under directory ``path`` (all of them when ``recursive``, else the top level)."""
        raise NotImplementedError(f"tool set {self.name}: no list call")

    def of_kind(self, kind: str, cid: str, **args) -> ToolCall:
        """A call of ``kind`` ("search", "read" or "list") with the arguments of that builder."""
        builders = {"search": self.search, "read": self.read, "list": self.list_dir}
        if kind not in builders:
            raise ValueError(
                f"no call builder for kind {kind!r}; choose one of {', '.join(builders)} (the answer: report)"
            )
        return builders[kind](cid, **args)

    def report(self, cid: str, files: dict[str, Ranges], explanation: str, confidence: float | None = None) -> Reply:
        """The final answer citing ``files`` (paths and line ranges), with an optional self-confidence in [0, 1]."""
        raise NotImplementedError(f"tool set {self.name}: no report")

    def report_ids(
        self, cid: str, cites: dict[str, Ranges], explanation: str, confidence: float | None = None
    ) -> Reply:
        """The final answer under the ``ids`` report contract: ``cites`` maps a shown range's ID to its
        narrowings (``[]``: the whole range), as :func:`fasbench.tools.contract.cite_ids` gives them."""
        raise NotImplementedError(f"tool set {self.name}: no report under the ids contract")


@dataclass(frozen=True)
class RelaceCalls(Calls):
    """Relace's call shapes: ``grep_search``, ``view_file``, ``view_directory``, its read-only ``bash``
    for finding files, and the ``report_back`` call."""

    def search(
        self,
        cid: str,
        pattern: str,
        include: str | None = "*.py",
        ignore_case: bool = False,
        path: str | None = None,
        files_only: bool = False,
        context: dict[str, int] | None = None,
    ) -> ToolCall:
        glob = include
        if path not in (None, "."):
            is_file = "." in posixpath.basename(path) and not path.endswith("/")
            glob = path if is_file else path.rstrip("/") + "/**" + ("/" + include if include else "")
        # every field, as the published strict schema requires
        args: dict = {
            "query": pattern,
            "case_sensitive": not ignore_case,
            "exclude_pattern": None,
            "include_pattern": glob or None,
        }
        return ToolCall(cid, "grep_search", args)

    def find(self, cid: str, name: str, directory: str | None = None) -> ToolCall:
        where = shlex.quote(directory) if directory is not None else "."
        return ToolCall(cid, "bash", {"command": f"find {where} -name {shlex.quote(name)} -type f"})

    def exists(self, cid: str, path: str) -> ToolCall:
        """Relace lists the file's folder."""
        return self.list_dir(cid, posixpath.dirname(path) or ".")

    def find_any(self, cid: str, names: list[str], exact: bool = False) -> ToolCall:
        alt = "|".join(re.escape(n) for n in names if n and "'" not in n)
        if exact:
            return ToolCall(cid, "bash", {"command": f"rg --files | grep -E '(^|/)({alt})$'"})
        return ToolCall(cid, "bash", {"command": f"rg --files -g '*.py' | grep -iE '({alt})[^/]*$'"})

    def read(self, cid: str, path: str, start: int, end: int | None) -> ToolCall:
        start = max(1, int(start))
        end = None if end is None else max(start, int(end))
        return ToolCall(cid, "view_file", {"path": path, "view_range": [start, -1 if end is None else end]})

    def list_dir(self, cid: str, path: str = ".", recursive: bool = True) -> ToolCall:
        """view_directory shows the folder's tree (recursive either way)."""
        return ToolCall(cid, "view_directory", {"path": path, "include_hidden": False})

    def report(self, cid: str, files: dict[str, Ranges], explanation: str, confidence: float | None = None) -> Reply:
        """A ``report_back`` call."""
        args = {"explanation": explanation, "files": files}
        if confidence is not None:
            args["confidence"] = round(float(confidence), 4)
        return Reply(text="", calls=[ToolCall(cid, "report_back", args)])

    def report_ids(
        self, cid: str, cites: dict[str, Ranges], explanation: str, confidence: float | None = None
    ) -> Reply:
        """A ``report_back`` call whose ``files`` keys are the IDs."""
        return self.report(cid, cites, explanation, confidence)


@dataclass(frozen=True)
class FastContextCalls(Calls):
    """FastContext's call shapes (the release's and the fork's): ``Grep``, ``Read``, ``Glob`` and the
    ``<final_answer>`` block."""

    def search(
        self,
        cid: str,
        pattern: str,
        include: str | None = "*.py",
        ignore_case: bool = False,
        path: str | None = None,
        files_only: bool = False,
        context: dict[str, int] | None = None,
    ) -> ToolCall:
        args: dict = {"pattern": pattern}
        if path is not None:
            args["path"] = path
        args["output_mode"] = "files_with_matches" if files_only else "content"
        if include:
            args["glob"] = include
        if ignore_case:
            args["-i"] = True
        for k, n in (context or {}).items():
            args[k] = min(int(n), 100)
        return ToolCall(cid, "Grep", args)

    def find(self, cid: str, name: str, directory: str | None = None) -> ToolCall:
        if directory is None:
            return ToolCall(cid, "Glob", {"pattern": f"**/{name}"})
        return ToolCall(cid, "Glob", {"pattern": f"**/{name}", "directory": directory})

    def exists(self, cid: str, path: str) -> ToolCall:
        """FastContext globs the file's name in its folder."""
        return ToolCall(cid, "Glob", {"pattern": posixpath.basename(path), "directory": posixpath.dirname(path) or "."})

    def find_any(self, cid: str, names: list[str], exact: bool = False) -> ToolCall:
        names = [n for n in names if n and "'" not in n]
        if exact:
            return ToolCall(cid, "Glob", {"pattern": "**/{" + ",".join(names) + "}"})
        return ToolCall(cid, "Glob", {"pattern": "**/*{" + ",".join(names) + "}*.py"})

    def read(self, cid: str, path: str, start: int, end: int | None) -> ToolCall:
        start = max(1, int(start))
        end = None if end is None else max(start, int(end))
        args: dict = {"path": path, "offset": start}
        if end is not None:
            args["limit"] = end - start + 1
        return ToolCall(cid, "Read", args)

    def list_dir(self, cid: str, path: str = ".", recursive: bool = True) -> ToolCall:
        """Glob of the folder's files: all of them when ``recursive``, else the top level (``ls``)."""
        return ToolCall(cid, "Glob", {"pattern": "**/*" if recursive else "*", "directory": path})

    def report(self, cid: str, files: dict[str, Ranges], explanation: str, confidence: float | None = None) -> Reply:
        """A ``<final_answer>`` block."""
        return Reply(text=final_answer_text(files, explanation, confidence))

    def report_ids(
        self, cid: str, cites: dict[str, Ranges], explanation: str, confidence: float | None = None
    ) -> Reply:
        """A ``<final_answer>`` block of ``ID[:A-B] (reason)`` lines."""
        rows = [
            f"{i}" + (f":{a}-{b}" if rs else "") + f" ({explanation[:80] or 'relevant'})"
            for i, rs in cites.items()
            for a, b in (rs or [[0, 0]])
        ]
        rows += [f"confidence: {float(confidence):.4f}"] if confidence is not None else []
        return Reply(text="<final_answer>\n" + "\n".join(rows) + "\n</final_answer>")


def final_answer_text(files: dict[str, Ranges], explanation: str = "", confidence: float | None = None) -> str:
    """FastContext's answer block: one ``path:START-END (reason)`` line per range (and, a fasbench
    addition, an optional ``confidence: X`` line)."""
    lines = []
    for p, rs in files.items():
        for a, b in rs or [[1, 1]]:
            lines.append(f"{p}:{a}-{b} ({explanation[:80] or 'relevant'})")
    if confidence is not None:
        lines.append(f"confidence: {float(confidence):.4f}")
    return "<final_answer>\n" + "\n".join(lines) + "\n</final_answer>"
