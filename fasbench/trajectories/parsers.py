"""Main-agent trajectories in seven formats → one ``Trajectory`` of turns and calls each.

Formats (``detect`` tells them apart by content, not by name; files may be gzip or plain):

- ``mini-swe-agent-1``: mini-swe-agent v1 ``.traj.json``: one ```bash block per assistant message
  (a message with zero or several blocks was a format error and ran nothing), usage in
  ``extra.response.usage``.
- ``mini-swe-agent-tools``: mini-swe-agent v1.1/v2 (and any OpenAI-style ``messages`` list):
  assistant ``tool_calls``, ``role: tool`` results.
- ``swe-agent``: classic SWE-agent ``.traj`` (``trajectory`` steps with ``action``/``observation``,
  ``history``, ``info``); per-step tokens are not recorded, so they are estimated.
- ``claude-code``: Claude Code session JSONL (``type: user|assistant``, ``message.content`` blocks
  ``tool_use``/``tool_result``, ``message.usage``); one turn per API message id; subagents
  (``isSidechain`` lines inline, or ``<session>/subagents/agent-*.jsonl`` beside the file) nested
  under the ``Task``/``Agent`` call that started them (``fasbench.trajectories.claude_code``);
  sidechain lines no call claims are left out and counted.
- ``openhands``: OpenHands event lists (a saved trajectory, or evaluation ``output.jsonl`` rows
  with ``history``): actions with ``tool_call_metadata``, one turn per model response
  (``fasbench.trajectories.openhands``).
- ``fasbench-trace``: fasbench's own ``Trace`` JSONL (``fasbench.records``), one trace per line.
- ``atif``: Harbor's ATIF (``fasbench.trajectories.atif``): the main agent and its embedded
  subagents, one trajectory each, checked against the published schema; a fasbench trace exported
  to ATIF (``fasbench.trajectories.atif_trace``) is read back as that trace.

A file that cannot be read (bad gzip, invalid or truncated JSON, unknown layout) raises
``TrajectoryError`` with the reason; ``analysis`` counts it. An unknown layout's reason says what
was seen (``seen``: "a JSON list of 12 objects with keys …"); ``SUPPORTED`` names the formats for
messages and ``--help``. OpenHands V1 SDK events are recognised and refused: they are not read
yet. A JSONL file whose last line was cut
off mid-write is read without that line and reported as partial.
"""

from __future__ import annotations

import json
import stat
from collections import Counter
from pathlib import Path
from typing import Any

from fasbench.records import RecordError, Trace, parse_arguments, parse_json_or_jsonl
from fasbench.tools import shell_command
from fasbench.trajectories import atif, atif_trace, claude_code, openhands
from fasbench.trajectories.raw import bash_blocks, cap_fields, message_text, read_text
from fasbench.trajectories.tokens import count_tokens_batch
from fasbench.trajectories.trajectory import (  # noqa: F401
    FORMAT_NAMES,
    FORMATS,
    SUPPORTED,
    AgentTurn,
    Call,
    ParsedFile,
    Trajectory,
    TrajectoryError,
)

# ------------------------------------------------------------------ reading


def load(path: str | Path) -> tuple[Any, str | None]:
    """(object or list of JSONL objects, partial-reason). Raises TrajectoryError."""
    obj, partial, _ = load_jsonl(path)
    return obj, partial


def load_jsonl(path: str | Path) -> tuple[Any, str | None, bool]:
    """``load`` and whether the file was JSONL (one object per line): the records' one JSON-or-JSONL
    parser (:func:`fasbench.records.parse_json_or_jsonl`), strings capped (``cap_fields``)."""
    text = read_text(path)
    try:
        obj, partial, jsonl = parse_json_or_jsonl(text)
    except RecordError as e:
        raise TrajectoryError(str(e)) from e
    return cap_fields(obj), partial, jsonl


def _keys(dicts: list[dict], most: int = 8) -> str:
    keys = list(dict.fromkeys(k for d in dicts[:50] for k in d))
    return ", ".join(map(str, keys[:most])) + (", …" if len(keys) > most else "") if keys else "no keys"


def seen(obj: Any, jsonl: bool = False) -> str:
    """What a loaded file holds, in words: "a JSON list of 12 objects with keys action, observation, …"."""
    what = "JSONL lines" if jsonl else "a JSON list of"
    if isinstance(obj, dict):
        return f"a JSON object with keys {_keys([obj])}"
    if isinstance(obj, list):
        if not obj:
            return "an empty JSON list"
        dicts = [o for o in obj if isinstance(o, dict)]
        if len(dicts) == len(obj):
            return f"{what} {len(obj)} objects with keys {_keys(dicts)}"
        kinds = ", ".join(f"{n} {k}" for k, n in Counter(type(o).__name__ for o in obj).most_common())
        return f"{what} {len(obj)} values ({kinds})"
    return f"a JSON {type(obj).__name__}"


def _refused(obj: Any) -> str | None:
    """Why a recognised format that is not read yet is refused (None for the others)."""
    events = obj.get("history") if isinstance(obj, dict) else obj
    if isinstance(events, list) and any(
        isinstance(e, dict) and str(e.get("kind", "")).endswith("Event") for e in events[:50]
    ):
        return "OpenHands V1 SDK events (`kind`: ActionEvent, ObservationEvent, …): not read yet"
    return None


def detect(obj: Any, jsonl: bool = False) -> str:
    """The format of a loaded file (see ``FORMATS``); raises TrajectoryError when unknown, saying
    what was seen (``seen``), or when the format is recognised but not read yet (OpenHands V1 events)."""
    if atif.is_atif(obj):
        return "atif"
    refused = _refused(obj)
    if refused:
        raise TrajectoryError(refused)
    if isinstance(obj, dict):
        if isinstance(obj.get("trajectory"), list):
            return "swe-agent"
        msgs = obj.get("messages")
        if isinstance(msgs, list):
            fmt = str(obj.get("trajectory_format", ""))
            if fmt.startswith("mini-swe-agent-1."):
                return "mini-swe-agent-tools"
            if fmt == "mini-swe-agent-1":
                return "mini-swe-agent-1"
            # other chat logs: tool calls anywhere make them tool-call logs
            if any(isinstance(m, dict) and m.get("tool_calls") for m in msgs if m.get("role") == "assistant"):
                return "mini-swe-agent-tools"
            return "mini-swe-agent-1"
        if "task_id" in obj and "turns" in obj:
            return "fasbench-trace"
        if openhands.is_history(obj):
            return "openhands"
    elif isinstance(obj, list) and obj and all(isinstance(o, dict) for o in obj):
        first = obj[0]
        if "task_id" in first and "turns" in first and "policy" in first:
            return "fasbench-trace"
        if any(o.get("type") in ("user", "assistant") and isinstance(o.get("message"), dict) for o in obj[:50]):
            return "claude-code"
        if openhands.is_history(first) or any(openhands.is_event(o) for o in obj[:50]):
            return "openhands"
        if isinstance(first.get("role"), str):  # a bare list of chat messages
            return "mini-swe-agent-tools"
    raise TrajectoryError(f"unknown trajectory layout ({seen(obj, jsonl)})")


def parse_file(path: str | Path) -> ParsedFile:
    """Parse one trajectory file of any known format. Raises TrajectoryError with the reason."""
    path = Path(path)
    obj, partial, jsonl = load_jsonl(path)
    fmt = detect(obj, jsonl)
    try:
        if fmt == "mini-swe-agent-1":
            trajs, dropped = [_mini_v1(obj, path)], 0
        elif fmt == "mini-swe-agent-tools":
            trajs, dropped = [_mini_tools(obj if isinstance(obj, dict) else {"messages": obj}, path)], 0
        elif fmt == "swe-agent":
            trajs, dropped = [_swe_agent(obj, path)], 0
        elif fmt == "claude-code":
            t, dropped = claude_code.parse(obj, path, _stem(path), _subagent_files(path))
            trajs = [t]
        elif fmt == "openhands":
            trajs, dropped = openhands.parse(obj, path, _stem(path)), 0
        elif fmt == "atif":  # a trace fasbench exported is read as that trace; any other as ATIF
            tr = atif_trace.from_atif(obj)
            trajs = _fasbench([tr.to_dict()], path, "atif") if tr else atif.parse(obj, path, _stem(path))
            dropped = 0
        else:
            trajs, dropped = _fasbench(obj if isinstance(obj, list) else [obj], path), 0
    except TrajectoryError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise TrajectoryError(f"{fmt}: malformed ({type(e).__name__}: {e})") from e
    return ParsedFile(trajs, fmt, partial, dropped)


def _stem(path: Path) -> str:
    name = path.name
    for suf in (".gz", ".jsonl", ".json", ".traj"):
        if name.endswith(suf):
            name = name[: -len(suf)]
    return name


def _usage(m: dict) -> dict | None:
    extra = m.get("extra")
    if extra:
        resp = extra.get("response")
        if isinstance(resp, dict):
            u = resp.get("usage")
            if isinstance(u, dict):
                return u
    u = m.get("usage")
    return u if isinstance(u, dict) else None


def _apply_usage(turn: AgentTurn, u: dict | None) -> None:
    if not u:
        return
    turn.prompt_tokens = u["prompt_tokens"] if "prompt_tokens" in u else u.get("input_tokens")
    turn.completion_tokens = u["completion_tokens"] if "completion_tokens" in u else u.get("output_tokens")
    details = u.get("completion_tokens_details")
    if details and isinstance(details, dict):
        turn.reasoning_tokens = int(details.get("reasoning_tokens") or 0)


def _estimate_chat(turns: list[AgentTurn], msgs: list[dict], assistant_idx: list[int]) -> None:
    """Fill missing prompt/completion tokens from the chat messages with the offline tokenizer."""
    if all(t.prompt_tokens is not None and t.completion_tokens is not None for t in turns):
        return
    sizes = count_tokens_batch([_msg_text(m) for m in msgs])
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)
    for t, i in zip(turns, assistant_idx):
        if t.prompt_tokens is None or t.completion_tokens is None:
            t.prompt_tokens, t.completion_tokens, t.estimated = prefix[i], sizes[i], True


def _msg_text(m: dict) -> str:
    s = message_text(m.get("content"))
    for tc in m.get("tool_calls") or []:
        fn = tc.get("function") or {}
        s += "\n" + str(fn.get("name", "")) + " " + str(fn.get("arguments", ""))
    return s


def _model_of(info: dict, msgs: list[dict]) -> str:
    cfg = info.get("config") or {}
    model = (cfg.get("model") or {}).get("model_name") if isinstance(cfg.get("model"), dict) else None
    if not model:
        for m in msgs:
            resp = (m.get("extra") or {}).get("response") if isinstance(m, dict) else None
            if isinstance(resp, dict) and resp.get("model"):
                return str(resp["model"])
    return str(model or "")


def _mini_v1(d: dict, path: Path) -> Trajectory:
    info = d.get("info") or {}
    msgs = d["messages"]
    turns, idx = [], []
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        content = m.get("content")
        blocks = bash_blocks(content if isinstance(content, str) else message_text(content))
        t = AgentTurn(len(turns) + 1, [Call("bash", blocks[0])] if len(blocks) == 1 else [])
        _apply_usage(t, _usage(m))
        turns.append(t)
        idx.append(i)
    return _mini_trajectory(d, path, turns, idx, "mini-swe-agent-1", info.get("submission"), "mini-swe-agent")


def _mini_tools(d: dict, path: Path) -> Trajectory:
    info = d.get("info") or {}
    msgs = d["messages"]
    turns, idx = [], []
    submission = info.get("submission")
    for i, m in enumerate(msgs):
        if m.get("role") == "exit" and submission is None:
            submission = (m.get("extra") or {}).get("submission") or m.get("content")
        if m.get("role") != "assistant":
            continue
        t = AgentTurn(len(turns) + 1)
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or tc
            name = str(fn.get("name", ""))
            raw = fn.get("arguments", {})
            args = parse_arguments(raw)
            action = args.get("command", args.get("cmd")) if isinstance(args, dict) else None
            t.calls.append(
                Call(
                    name,
                    str(action) if action is not None else (raw if isinstance(raw, str) else json.dumps(raw)),
                    args if isinstance(args, dict) else None,
                )
            )
        _apply_usage(t, _usage(m))
        turns.append(t)
        idx.append(i)
    return _mini_trajectory(d, path, turns, idx, "mini-swe-agent-tools", submission, "chat")


def _mini_trajectory(
    d: dict, path: Path, turns: list[AgentTurn], idx: list[int], fmt: str, submission, agent_without_info: str
) -> Trajectory:
    """The Trajectory of a mini-swe-agent file (either format) from its parsed turns; ``idx`` are the
    message indices of the turns (for the token estimates of turns without usage);
    ``agent_without_info`` names the agent of a file with no ``info`` block."""
    info, msgs = d.get("info") or {}, d["messages"]
    _estimate_chat(turns, msgs, idx)
    return Trajectory(
        trajectory_id=_stem(path),
        instance_id=str(d.get("instance_id") or _stem(path)),
        agent=f"mini-swe-agent {info.get('mini_version', '')}".strip() if info else agent_without_info,
        model=_model_of(info, msgs),
        format=fmt,
        turns=turns,
        submission=submission,
        exit_status=info.get("exit_status"),
        path=str(path),
    )


SWE_AGENT_TOOLS = {
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "search_dir",
    "search_file",
    "find_file",
    "edit",
    "create",
    "insert",
    "append",
    "submit",
    "str_replace_editor",
    "filemap",
}


def _swe_agent(d: dict, path: Path) -> Trajectory:
    info = d.get("info") or {}
    steps = d["trajectory"]
    history = d.get("history") or []
    prefix_texts = []
    for m in history:
        if m.get("role") == "assistant" and not m.get("is_demo"):
            break
        prefix_texts.append(message_text(m.get("content")))
    texts = []
    for s in steps:
        texts.append(str(s.get("response") or (str(s.get("thought") or "") + "\n" + str(s.get("action") or ""))))
        texts.append(str(s.get("observation") or ""))
    sizes = count_tokens_batch(prefix_texts + texts)
    prompt = sum(sizes[: len(prefix_texts)])
    sizes = sizes[len(prefix_texts) :]
    turns = []
    open_file = None
    for i, s in enumerate(steps):
        action = str(s.get("action") or "").strip()
        first = action.split(None, 1)[0] if action else ""
        tool = first if first in SWE_AGENT_TOOLS else "bash"
        t = AgentTurn(i + 1, [Call(tool, action)] if action else [], prompt, sizes[2 * i], 0, sizes[2 * i + 1], True)
        state = parse_arguments(s.get("state"))  # a dict, or a JSON string of one
        if tool == "edit" and open_file and t.calls:
            t.calls[0].args = {"path": open_file}  # SWE-agent's edit changes the open file
        if isinstance(state, dict) and state.get("open_file") not in (None, "n/a"):
            open_file = state["open_file"]
        prompt += sizes[2 * i] + sizes[2 * i + 1]
        turns.append(t)
    model = ""
    rc = parse_arguments(d.get("replay_config"))  # a dict, or a JSON string of one
    if isinstance(rc, dict):
        model = str(((rc.get("agent") or {}).get("model") or {}).get("name", ""))
    return Trajectory(
        trajectory_id=_stem(path),
        instance_id=_stem(path),
        agent="swe-agent",
        model=model,
        format="swe-agent",
        turns=turns,
        submission=info.get("submission"),
        exit_status=info.get("exit_status"),
        path=str(path),
        meta={"model_stats": info.get("model_stats")},
    )


def _subagent_files(path: Path) -> list[list[dict]]:
    """The subagent transcripts newer Claude Code keeps beside a session file
    (``<dir>/<session>/subagents/agent-*.jsonl``, names listed by the file system, not taken from the
    data); one that is not a regular file or not JSONL is left out."""
    folder = path.parent / _stem(path) / "subagents"
    if not folder.is_dir() or folder.is_symlink():
        return []
    out = []
    for f in sorted(folder.glob("agent-*.jsonl")):
        if f.is_symlink() or not stat.S_ISREG(f.stat().st_mode):  # os.stat first: a FIFO must never be opened
            continue
        try:
            obj, _, _ = load_jsonl(f)
        except TrajectoryError:
            continue
        if isinstance(obj, list):
            out.append([o for o in obj if isinstance(o, dict)])
    return out


def _fasbench(objs: list[dict], path: Path, fmt: str = "fasbench-trace") -> list[Trajectory]:
    out = []
    for k, o in enumerate(objs):
        try:
            tr = Trace.from_dict(o)
        except RecordError as e:
            raise TrajectoryError(f"fasbench-trace record {k + 1}: {e}") from e
        turns = []
        for j, turn in enumerate(tr.turns):
            calls = [_fasbench_call(tr.toolset, c) for c in turn.calls]
            t = AgentTurn(j + 1, calls, turn.prompt_tokens, turn.completion_tokens)
            turns.append(t)
        if any(t.prompt_tokens is None or t.completion_tokens is None for t in turns):
            msgs = tr.to_messages()
            idx = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
            _estimate_chat(turns, msgs, idx)
        out.append(
            Trajectory(
                trajectory_id=tr.trace_id,
                instance_id=tr.task_id,
                agent=tr.policy,
                model=str(tr.meta.get("model", "")),
                format=fmt,
                turns=turns,
                path=str(path),
                exit_status=tr.stop_reason,
                meta={"toolset": tr.toolset},
            )
        )
    return out


def trace_trajectory(trace: Trace) -> Trajectory:
    """A fasbench search episode (``Trace``) as the reader's ``Trajectory`` (its calls classified as
    every trace's are; ``meta["wall_s"]``: the episode's wall time), e.g. to nest it under the main
    agent that delegated to it."""
    t = _fasbench([trace.to_dict()], Path(""))[0]
    t.meta.update(role="subagent", wall_s=trace.wall_time, trace_id=trace.trace_id)
    return t


def _fasbench_call(toolset: str, c) -> Call:
    """A fasbench call: its tool set's shell tool as shell text (classified by the rubric, as an agent's
    command is), any other tool by its arguments."""
    cmd = shell_command(toolset, c)
    if cmd is not None:
        return Call(c.name, cmd)
    return Call(c.name, c.arguments_json(), c.arguments if isinstance(c.arguments, dict) else None)
