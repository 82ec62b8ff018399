"""Raw trajectory files and the shell calls of mini-swe-agent chats, read without the parsers'
tokenizer (``fasbench.data`` builds tasks from these at import-light cost; ``parsers`` builds on them).

- ``read_text`` / ``load_json``: a file's text (gunzipped when it starts with the gzip magic) / JSON:
  a regular file only (a FIFO is refused, never waited on), at most :data:`MAX_FILE_BYTES` read or
  gunzipped; ``cap_fields``: every string of a parsed document cut to :data:`MAX_FIELD_CHARS` (one
  150 MB observation drove ``trajectories analyze`` past 14 GB).
- ``message_text``: a chat message's content as text; ``bash_blocks``: mini-swe-agent v1's ```bash
  blocks.
- ``shell_calls``: ``ShellCall`` (turn, call, command, output) of a mini-swe-agent chat, numbered as
  the parsers number turns (turn k is the k-th assistant message; a v1 turn has a call only when it
  holds exactly one bash block; tool calls are paired with their ``tool_call_id`` result). e2e's
  looks and counterfactual read these.
- ``read_actions``: the (command, output) calls the agent-trace tasks were built from (their
  ``meta.first_edit_action`` indexes this list), kept as the shipped task files were built: v2's
  ``extra.actions`` first, a v1 message's *first* bash block even when it holds several, outputs
  paired in order. It is not ``shell_calls``: the two give different call lists on most shipped trajectories.
- ``output_text``: the text inside mini-swe-agent's ``<output>`` (or ``<output_head>``/``_tail``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fasbench.records import RecordError, parse_arguments
from fasbench.records.jsonl import read_json_text
from fasbench.trajectories.trajectory import TrajectoryError

MAX_FILE_BYTES = (
    512 << 20
)  # a trajectory file, or its gunzipped text, larger than this is refused (as records.jsonl.MAX_FILE_BYTES)
MAX_FIELD_CHARS = 1 << 20  # longer strings of a trajectory are cut (cap_fields)


def read_text(path: str | Path) -> str:
    """The file's text, gunzipped when it starts with the gzip magic (:func:`fasbench.records.jsonl.read_json_text`).
    Raises TrajectoryError (a FIFO, device or folder; a file or gunzipped text over :data:`MAX_FILE_BYTES`;
    bad gzip; not UTF-8)."""
    try:
        return read_json_text(path, MAX_FILE_BYTES)
    except RecordError as e:
        raise TrajectoryError(str(e)) from None


def cap_fields(obj: Any, max_chars: int = MAX_FIELD_CHARS) -> Any:
    """``obj`` with every string longer than ``max_chars`` (values and keys' values, at any depth) cut
    to ``max_chars`` and a note of what was cut; walked without recursion, changed in place."""

    def cut(s: str) -> str:
        return s[:max_chars] + f"\n[... {len(s) - max_chars} characters cut by fasbench]"

    if isinstance(obj, str):
        return cut(obj) if len(obj) > max_chars else obj
    todo = [obj]
    while todo:
        o = todo.pop()
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in list(items):
            if isinstance(v, str):
                if len(v) > max_chars:
                    o[k] = cut(v)
            elif isinstance(v, (dict, list)):
                todo.append(v)
    return obj


def load_json(path: str | Path) -> Any:
    """One JSON document (a trajectory file, gzip or plain), its strings capped (:func:`cap_fields`).
    Raises TrajectoryError with the reason."""
    try:
        return cap_fields(json.loads(read_text(path)))
    except json.JSONDecodeError as e:
        raise TrajectoryError(f"{path}: invalid JSON ({e.msg} at line {e.lineno} col {e.colno})") from e


def message_text(content) -> str:
    """Message content as text (strings, or lists of {type: text, text} blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                parts.append(str(b.get("text") or b.get("content") or ""))
            else:
                parts.append(str(b))
        return "\n".join(parts)
    return str(content)


BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)  # mini-swe-agent v1's own action regex


def bash_blocks(text: str) -> list[str]:
    """``BASH_BLOCK.findall(text)`` with str.find instead of the regex's character-by-character
    lazy scan (the same matches, several times faster on long commands)."""
    out = []
    i = text.find("```bash")
    n = len(text)
    while i >= 0:
        j = i + 7
        k = j
        while k < n and text[k] in " \t\n\r\f\v":
            k += 1
        # ``\s*\n``: greedy, so the rightmost newline of the run first; then the lazy body
        found = None
        p = text.rfind("\n", j, k)
        while p >= j:
            q = text.find("\n```", p + 1)
            if q >= 0:
                found = (p + 1, q)
                break
            p = text.rfind("\n", j, p)
        if found is None:
            i = text.find("```bash", i + 1)
            continue
        out.append(text[found[0] : found[1]])
        i = text.find("```bash", found[1] + 4)
    return out


@dataclass
class ShellCall:
    """One shell command the agent ran and what it was shown; ``turn`` is 1-based, ``call`` 0-based
    within the turn."""

    command: str
    output: str
    turn: int = 0
    call: int = 0


def _following(msgs: list, i: int) -> list[dict]:
    """The user/tool messages after assistant message ``i``, up to the next assistant message."""
    out = []
    for n in msgs[i + 1 :]:
        if not isinstance(n, dict) or n.get("role") == "assistant":
            break
        if n.get("role") in ("user", "tool"):
            out.append(n)
    return out


def shell_calls(d: dict) -> list[ShellCall]:
    """The shell calls of a mini-swe-agent trajectory (v1 bash blocks or tool calls), numbered as the
    parsers number turns (module doc)."""
    msgs = d.get("messages") or []
    out: list[ShellCall] = []
    turn = 0
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        turn += 1
        follow = _following(msgs, i)
        if m.get("tool_calls"):
            by_id = {n.get("tool_call_id"): message_text(n.get("content")) for n in follow if n.get("tool_call_id")}
            plain = [message_text(n.get("content")) for n in follow]
            for k, tc in enumerate(m["tool_calls"]):
                fn = tc.get("function") or tc
                args = parse_arguments(fn.get("arguments", {}))
                cmd = args.get("command", args.get("cmd")) if isinstance(args, dict) else None
                if cmd is None:
                    continue
                obs = by_id.get(tc.get("id"), plain[k] if k < len(plain) else "")
                out.append(ShellCall(str(cmd), obs, turn, k))
            continue
        content = m.get("content")
        blocks = bash_blocks(content if isinstance(content, str) else message_text(content))
        if len(blocks) == 1:
            out.append(ShellCall(blocks[0], message_text(follow[0].get("content")) if follow else "", turn, 0))
    return out


def read_actions(traj: dict) -> list[ShellCall]:
    """The (command, output) calls of a mini-swe-agent v1 (```bash``` block) or v2 (tool call)
    trajectory, in order, as the agent-trace tasks read them (module doc: not ``shell_calls``)."""
    msgs = traj.get("messages") or []
    out: list[ShellCall] = []
    turn = 0
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        turn += 1
        cmds = []
        acts = (m.get("extra") or {}).get("actions")
        if acts:
            cmds = [a.get("command", "") for a in acts]
        elif m.get("tool_calls"):
            for c in m["tool_calls"]:
                try:
                    cmds.append(json.loads(c["function"]["arguments"]).get("command", ""))
                except (KeyError, TypeError, json.JSONDecodeError):
                    pass
        else:
            content = m.get("content") if isinstance(m.get("content"), str) else ""
            cmds = bash_blocks(content)[:1]
        obs = []
        for n in msgs[i + 1 :]:
            if n.get("role") == "assistant":
                break
            if n.get("role") in ("user", "tool") and isinstance(n.get("content"), str):
                obs.append(n["content"])
        for k, c in enumerate(cmds):
            out.append(ShellCall(c, obs[k] if k < len(obs) else (obs[-1] if obs else ""), turn, k))
    return out


def output_text(obs: str) -> str:
    """The text of a mini-swe-agent observation inside ``<output>`` (or its head and tail parts)."""
    m = re.search(r"<output>\n?(.*?)</output>", obs, re.S)
    if m:
        return m.group(1)
    parts = re.findall(r"<output_(?:head|tail)>\n?(.*?)</output_(?:head|tail)>", obs, re.S)
    return "\n".join(parts) if parts else obs
