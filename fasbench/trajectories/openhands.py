"""OpenHands trajectories (the V0 event stream of ``All-Hands-AI/OpenHands``) → ``Trajectory``.

Each event is ``openhands.events.serialization.event_to_dict``'s dict: ``id``, ``timestamp``,
``source`` (``agent`` | ``user`` | ``environment``), ``message``, then either ``action`` with
``args`` (an action) or ``observation`` with ``content`` and ``extras`` (its result, ``cause`` = the
action's id), and, on actions the model asked for, ``tool_call_metadata`` (``function_name``,
``tool_call_id``, ``model_response`` — the LiteLLM response with ``id``, ``model``, ``usage`` and
the tool calls' own arguments —, ``total_calls_in_response``) and ``llm_metrics``. Two layouts hold them:

- a saved trajectory (``save_trajectory_path``, the GUI's trajectory download): a JSON list of events;
- evaluation output (``evaluation/benchmarks/*/output.jsonl``): one object per instance with
  ``instance_id``, ``history`` (the events), ``test_result.git_patch`` and ``metadata.llm_config.model``.

Delegation (``AgentDelegateAction``, ``action: delegate`` with ``args.agent``): the delegate's events
follow it in the same stream up to the ``delegate`` observation that answers it; they are read as a
trajectory of their own, nested under the delegate call (``Call.subagent``).

Turns: agent actions of one model response (``model_response.id``) are one turn and its parallel
calls; an agent action without ``tool_call_metadata`` (a text reply, a finish without function
calling) is a turn by itself; events of the user and the environment (system prompt, recall, agent
state changes, condensation) are not turns. Calls: the function the model called with the
arguments it sent (from ``model_response``), else the action type's tool (``run`` →
``execute_bash`` with its command, ``read``/``edit``/``write`` → the ``str_replace_editor`` view /
edit / create of its path, ``run_ipython`` → ``execute_ipython_cell``). Tokens: the response's
``usage`` (or ``llm_metrics.token_usages`` of its id); turns without them are estimated from the
texts (prompt: everything before; observation: the results' content).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fasbench.records import parse_arguments
from fasbench.trajectories.tokens import count_tokens_batch
from fasbench.trajectories.trajectory import AgentTurn, Call, Trajectory, TrajectoryError

EDITOR = "str_replace_editor"  # OpenHands' file tool (CodeActAgent); ``file_editor`` in newer versions
#: tool of an action without tool_call_metadata, by action type
ACTION_TOOLS = {
    "run": "execute_bash",
    "run_ipython": "execute_ipython_cell",
    "read": EDITOR,
    "edit": EDITOR,
    "write": EDITOR,
    "browse": "browser",
    "browse_interactive": "browser",
}
NOT_TURNS = {"system", "recall", "change_agent_state", "condensation", "condensation_request", "null"}


def is_event(o: Any) -> bool:
    """An OpenHands event dict (an action or an observation with its source)."""
    return (
        isinstance(o, dict)
        and "source" in o
        and (isinstance(o.get("action"), str) or isinstance(o.get("observation"), str))
    )


def is_history(o: Any) -> bool:
    """One instance of OpenHands evaluation output: ``{instance_id, history: [events]}``."""
    h = o.get("history") if isinstance(o, dict) else None
    return isinstance(h, list) and any(is_event(e) for e in h[:50])


def parse(obj: list | dict, path: Path, stem: str) -> list[Trajectory]:
    """The trajectories of a loaded OpenHands file: a list of events, or evaluation output rows."""
    if isinstance(obj, dict):
        return [_trajectory(obj["history"], path, stem, obj)]
    if obj and is_history(obj[0]):
        return [_trajectory(row["history"], path, stem, row) for row in obj if is_history(row)]
    return [_trajectory(obj, path, stem, {})]


def _tool_call_args(meta: dict) -> dict | None:
    """The arguments the model sent for this event's tool call (from the model response), if recorded."""
    resp = meta.get("model_response")
    if not isinstance(resp, dict):
        return None
    for choice in resp.get("choices") or []:
        msg = choice.get("message") if isinstance(choice, dict) else None
        for tc in (msg or {}).get("tool_calls") or []:
            if isinstance(tc, dict) and tc.get("id") == meta.get("tool_call_id"):
                args = parse_arguments((tc.get("function") or {}).get("arguments"))
                return args if isinstance(args, dict) else None
    return None


def _args_of(action: str, args: dict) -> dict:
    """The tool arguments an action stands for, when the model response is not recorded."""
    if action == "run":
        return {"command": args.get("command", "")}
    if action == "run_ipython":
        return {"code": args.get("code", "")}
    if action == "read":
        out = {"command": "view", "path": args.get("path", "")}
        if args.get("view_range"):
            out["view_range"] = args["view_range"]
        return out
    if action == "write":
        return {"command": "create", "path": args.get("path", ""), "file_text": args.get("content", "")}
    if action == "edit":
        out = {"command": args.get("command") or "edit", "path": args.get("path", "")}
        out.update(
            {
                k: args[k]
                for k in ("old_str", "new_str", "file_text", "insert_line", "content")
                if args.get(k) not in (None, "")
            }
        )
        return out
    return {
        k: v
        for k, v in args.items()
        if k not in ("thought", "security_risk", "confirmation_state", "impl_source", "is_input", "blocking", "hidden")
    }


def _call(e: dict) -> Call:
    action, args = e["action"], e.get("args") if isinstance(e.get("args"), dict) else {}
    meta = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else {}
    if action == "call_tool_mcp":
        name, cargs = str(args.get("name", "mcp")), args.get("arguments") or {}
    else:
        name = str(meta.get("function_name") or ACTION_TOOLS.get(action, action))
        cargs = _tool_call_args(meta) or _args_of(action, args)
    if not isinstance(cargs, dict):
        cargs = {"arguments": cargs}
    if action == "run":  # a shell action is its command line, whatever the tool's name
        cargs.setdefault("command", args.get("command", ""))
        return Call(name, str(cargs.get("command") or ""), cargs)
    return Call(name, json.dumps(cargs, ensure_ascii=False), cargs)


def _usage(e: dict, resp_id: str) -> dict | None:
    resp = (e.get("tool_call_metadata") or {}).get("model_response")
    if isinstance(resp, dict) and isinstance(resp.get("usage"), dict):
        return resp["usage"]
    m = e.get("llm_metrics")
    for u in (m.get("token_usages") or []) if isinstance(m, dict) else []:
        if isinstance(u, dict) and (not resp_id or u.get("response_id") == resp_id):
            return u
    return None


def _delegations(events: list) -> tuple[list, dict[int, list]]:
    """The events of this agent and, by the position of each ``delegate`` action among them, the
    events of the delegate it started: those after it up to the ``delegate`` observation that answers
    it (``cause`` = its id; nested delegations are matched inside). A delegation never answered keeps
    the events to the end."""
    outer: list = []
    inner: dict[int, list] = {}
    i = 0
    while i < len(events):
        e = events[i]
        outer.append(e)
        i += 1
        if not (isinstance(e, dict) and e.get("action") == "delegate" and e.get("source") == "agent"):
            continue
        depth, j = 0, i
        while j < len(events):
            o = events[j]
            if isinstance(o, dict) and o.get("action") == "delegate" and o.get("source") == "agent":
                depth += 1
            elif isinstance(o, dict) and o.get("observation") == "delegate":
                if depth == 0 and (o.get("cause") in (None, e.get("id")) or e.get("id") is None):
                    break
                depth = max(0, depth - 1)
            j += 1
        inner[len(outer) - 1] = events[i:j]
        i = j  # the answering observation is this agent's
    return outer, inner


def _trajectory(events: list, path: Path, stem: str, row: dict, depth: int = 0) -> Trajectory:
    events, delegated = _delegations(events)
    turns: list[AgentTurn] = []
    texts: list[list[str]] = []  # per turn: completion text, then its observations
    prefix: list[str] = []  # text before the first turn (system prompt, task)
    by_resp: dict[str, int] = {}
    turn_of_action: dict[Any, int] = {}
    model, state = "", None
    for pos, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        if isinstance(e.get("observation"), str):
            if e["observation"] == "agent_state_changed":
                state = (e.get("extras") or {}).get("agent_state") or state
            k = turn_of_action.get(e.get("cause"))
            content = str(e.get("content") or "")
            (texts[k] if k is not None else prefix if not turns else texts[-1]).append(content)
            continue
        action = e.get("action")
        if not isinstance(action, str):
            continue
        if e.get("source") != "agent" or action in NOT_TURNS:
            if not turns:
                prefix.append(str((e.get("args") or {}).get("content") or e.get("message") or ""))
            continue
        meta = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        resp = meta.get("model_response") if meta else None
        rid = str(resp.get("id") or "") if isinstance(resp, dict) else ""
        if isinstance(resp, dict) and resp.get("model"):
            model = str(resp["model"])
        if rid and rid in by_resp:
            k = by_resp[rid]
        else:
            k = len(turns)
            turns.append(AgentTurn(k + 1))
            texts.append([str((e.get("args") or {}).get("thought") or "")])
            if rid:
                by_resp[rid] = k
        t = turns[k]
        if e.get("id") is not None:
            turn_of_action[e["id"]] = k
        if meta is not None or action not in ("message", "finish"):
            c = _call(e)
            t.calls.append(c)
            if pos in delegated and depth < 8:  # a delegate's own events, nested under this call
                try:
                    c.subagent = _trajectory(delegated[pos], path, f"{stem}/delegate-{pos}", {}, depth + 1)
                    c.subagent.meta.update(
                        role="subagent", parent=stem, delegate=str((e.get("args") or {}).get("agent") or "")
                    )
                except TrajectoryError:  # a delegate that took no action
                    pass
            texts[k][0] += "\n" + c.tool + " " + c.action
        else:
            texts[k][0] += "\n" + str((e.get("args") or {}).get("content") or e.get("message") or "")
        u = _usage(e, rid)
        if u and t.prompt_tokens is None:
            t.prompt_tokens = u.get("prompt_tokens")
            t.completion_tokens = u.get("completion_tokens")
            d = u.get("completion_tokens_details")
            t.reasoning_tokens = int((d or {}).get("reasoning_tokens") or 0) if isinstance(d, dict) else 0
    if not turns:
        raise TrajectoryError("openhands: no agent actions")
    _estimate(turns, texts, prefix)
    test = row.get("test_result") if isinstance(row.get("test_result"), dict) else {}
    cfg = ((row.get("metadata") or {}).get("llm_config") or {}) if isinstance(row.get("metadata"), dict) else {}
    report = test.get("report") if isinstance(test.get("report"), dict) else {}
    iid = str(row.get("instance_id") or stem)
    return Trajectory(
        trajectory_id=iid if row else stem,
        instance_id=iid,
        agent=str((row.get("metadata") or {}).get("agent_class") or "openhands") if row else "openhands",
        model=model or str(cfg.get("model") or ""),
        format="openhands",
        turns=turns,
        submission=test.get("git_patch"),
        resolved=report.get("resolved") if isinstance(report.get("resolved"), bool) else None,
        exit_status=str(row.get("error") or state or "") or None,
        path=str(path),
    )


def _estimate(turns: list[AgentTurn], texts: list[list[str]], prefix: list[str]) -> None:
    """Token counts of turns without usage: prompt = all text before, completion = the turn's own,
    observation = its results' content (marked estimated)."""
    if all(t.prompt_tokens is not None and t.completion_tokens is not None for t in turns):
        return
    flat = prefix + [s for ts in texts for s in ts]
    sizes = count_tokens_batch(flat)
    prompt = sum(sizes[: len(prefix)])
    i = len(prefix)
    for t, ts in zip(turns, texts):
        comp, obs = sizes[i], sum(sizes[i + 1 : i + len(ts)])
        i += len(ts)
        if t.prompt_tokens is None or t.completion_tokens is None:
            t.prompt_tokens, t.completion_tokens, t.obs_tokens, t.estimated = prompt, comp, obs, True
        prompt += comp + obs
