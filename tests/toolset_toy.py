"""A toy tool set in one file, for tests/test_toolset_registry.py: what adding a tool set takes (this file
and one line of ``fasbench.tools.TOOLSETS``). Three tools of its own names and arguments over the Relace
tool set's readers (contained reads and searches), and an answer written as a text block.

- ``show(path, first, last)``: lines of a file (read);
- ``find_text(pattern, glob)``: matching lines (search);
- ``tree(path)``: the entries under a folder (list);
- the answer: ``<answer>`` … ``path:A-B`` lines … ``</answer>``.
"""

from __future__ import annotations

import re

from fasbench.records import Reply, Report, ToolCall
from fasbench.tools import relace
from fasbench.tools.base import Tool, Toolset, obj
from fasbench.tools.calls import Calls
from fasbench.tools.observed import Seen, workspace_canon

KINDS = {"show": "read", "find_text": "search", "tree": "list"}
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_LINE = re.compile(r"^\s*(\S+?):(\d+)-(\d+)\s*$")


def show(ws, path: str, first: int = 1, last: int = 100) -> str:
    return relace.view_file(ws, path, [first, last])


def find_text(ws, pattern: str, glob: str | None = None) -> str:
    return relace.grep_search(ws, pattern, True, glob)


def tree(ws, path: str = ".") -> str:
    return relace.view_directory(ws, path)


def observe(name: str, args: dict, text: str, *canon) -> Seen:
    """What a toy call showed: Relace's parser of the same outputs, under the Relace call they are."""
    if name == "show":
        return relace.observe(
            "view_file",
            {"path": args.get("path"), "view_range": [args.get("first", 1), args.get("last", 100)]},
            text,
            *canon,
        )
    if name == "find_text":
        return relace.observe("grep_search", {"query": args.get("pattern")}, text, *canon)
    return relace.observe("view_directory", {"path": args.get("path", ".")}, text, *canon)


class ToyCalls(Calls):
    def search(self, cid, pattern, include="*.py", ignore_case=False, path=None, files_only=False, context=None):
        return ToolCall(cid, "find_text", {"pattern": pattern, **({"glob": include} if include else {})})

    def read(self, cid, path, start, end):
        start = max(1, int(start))
        return ToolCall(cid, "show", {"path": path, "first": start, "last": max(start, int(end or start + 99))})

    def list_dir(self, cid, path=".", recursive=True):
        return ToolCall(cid, "tree", {"path": path})

    def find(self, cid, name, directory=None):
        return self.list_dir(cid, directory or ".")

    def exists(self, cid, path):
        return self.list_dir(cid, path.rpartition("/")[0] or ".")

    def find_any(self, cid, names, exact=False):
        return self.list_dir(cid, ".")

    def report(self, cid, files, explanation, confidence=None):
        rows = [f"{p}:{a}-{b}" for p, rs in files.items() for a, b in (rs or [[1, 1]])]
        return Reply(text="<answer>\n" + "\n".join(rows) + "\n</answer>")


class ToyToolset(Toolset):
    name = "toy"
    kinds = KINDS
    observe = staticmethod(observe)
    calls = ToyCalls

    def make_tools(self) -> list[Tool]:
        s, i = {"type": "string"}, {"type": "integer", "minimum": 1}
        return [
            Tool("show", "Lines first..last of a file.", obj({"path": s, "first": i, "last": i}, ["path"]), show),
            Tool("find_text", "Lines matching a regex.", obj({"pattern": s, "glob": s}, ["pattern"]), find_text),
            Tool("tree", "The entries under a folder.", obj({"path": s}, []), tree),
        ]

    def shown_of(self, name, args, text):
        return observe(name, args, text, workspace_canon(self.ws)).shown

    def system_prompt(self, max_turns: int, max_calls: int) -> str:
        return "Find the code the task needs with show, find_text and tree; answer in <answer> path:A-B lines."

    def user_prompt(self, query: str) -> str:
        return query

    def final_turn_note(self) -> str:
        return "Last turn: answer now."

    def parse_report(self, text: str, calls: list[ToolCall]) -> Report | None:
        m = _ANSWER.search(text or "")
        if m is None:
            return None
        files: dict = {}
        for row in m.group(1).splitlines():
            if g := _LINE.match(row):
                files.setdefault(g.group(1), []).append([int(g.group(2)), int(g.group(3))])
        return Report(files=files)
