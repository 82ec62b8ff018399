"""FastContext's queries, generated the released way (``benchmark/evaluation/query_gen.py`` @5fb8c1d):
a main agent with the released ``bash`` + ``subagent`` tools and prompt (:mod:`fasbench.tools.fastcontext_query`)
answers each task's problem statement once; the ``prompt`` argument of its ``subagent`` call is the
task's FastContext query (``task.meta["fc_query"]``, with ``task.meta["fc_query_source"]``).

Any OpenAI-compatible endpoint, through the bounded client of :class:`~fasbench.policies.openai_compat.
OpenAIPolicy` (total deadline, body cap, reply shape checked, retries). As released: one request per
task, ``temperature=1.0`` (unless the spec sets another), a reply whose finish reason is not
``tool_calls`` or that holds no usable ``subagent`` call is a failed instance (recorded with its reason;
the task keeps no query, and a FastContext run then uses its problem statement and says so). The
output is JSONL, one record per task, appended as each answer comes and resumed (tasks already in it
are skipped; a failed one is retried only with ``retry_failed``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from fasbench.base.specs import build, parse_spec
from fasbench.policies.openai_compat import EndpointError, OpenAIPolicy
from fasbench.records import Task, append_jsonl, iter_jsonl, repair_jsonl
from fasbench.tools.fastcontext_query import FC_QUERY, FC_QUERY_SOURCE, SUBAGENT, TEMPERATURE, TOOLS, messages, query_of

GENERATOR = "query_gen.py@5fb8c1d"


def make_client(spec: str) -> OpenAIPolicy:
    """The endpoint client of ``openai:model=NAME,base_url=URL[,temperature=…,max_tokens=…,timeout_s=…]``;
    temperature defaults to the release's 1.0. ``max_tokens`` is sent only when the spec sets it: the
    release's ``query_gen.py`` sends none (the endpoint's own limit applies). A clear ValueError on a bad spec."""
    name, kw = parse_spec(spec)
    if name != "openai":
        raise ValueError(f"endpoint spec {spec!r}: expected 'openai:model=NAME,base_url=URL', got {name!r}")
    if "model" not in kw:
        raise ValueError(f"endpoint spec {spec!r} needs model=NAME (the model the endpoint serves)")
    kw.setdefault("temperature", str(TEMPERATURE))
    client = build(OpenAIPolicy, "fc-queries endpoint", kw, name=spec)
    client.extra_body = {**client.extra_body, SEND_MAX_TOKENS: "max_tokens" in kw}
    return client


#: Key of ``extra_body`` (never sent) saying whether the spec set ``max_tokens``.
SEND_MAX_TOKENS = "__fasbench_send_max_tokens"


def source_of(client: OpenAIPolicy) -> str:
    return f"{GENERATOR} model={client.model} base_url={client.base_url}"


def generate_one(task: Task, client: OpenAIPolicy) -> dict:
    """One record: ``task_id``, ``fc_query`` (None when it failed), ``fc_query_source``, ``description``,
    ``finish_reason``, ``tool_calls`` (name and arguments as the model gave them), ``error``."""
    extra = dict(client.extra_body)
    body = {
        "model": client.model,
        "messages": messages(task.query),
        "tools": TOOLS,
        "temperature": client.temperature,
        "stream": False,
    }
    if extra.pop(SEND_MAX_TOKENS, True):  # as query_gen.py@5fb8c1d: no max_tokens unless the spec asks
        body["max_tokens"] = client.max_tokens
    if client.top_p is not None:
        body["top_p"] = client.top_p
    if client.seed is not None:
        body["seed"] = client.seed
    body.update(extra)
    rec = {
        "task_id": task.id,
        FC_QUERY: None,
        FC_QUERY_SOURCE: source_of(client),
        "description": None,
        "finish_reason": None,
        "tool_calls": [],
        "error": None,
    }
    try:
        reply = client.complete(body)
    except EndpointError as e:
        rec["error"] = f"endpoint: {e}"
        return rec
    choice = reply["choices"][0]
    msg = choice.get("message") or {}
    rec["finish_reason"] = choice.get("finish_reason")
    rec["tool_calls"] = [
        {"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
        for c in msg.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    if rec["finish_reason"] != "tool_calls":
        rec["error"] = f"finish reason {rec['finish_reason']!r}, not 'tool_calls' (query_gen.py counts it failed)"
        return rec
    q, why = query_of(msg)
    if q is None:
        rec["error"] = why
        return rec
    rec[FC_QUERY] = q
    rec["description"] = _description(msg)
    return rec


def _description(msg: dict) -> str | None:
    for c in msg.get("tool_calls") or []:
        fn = c.get("function") or {}
        if fn.get("name") == SUBAGENT:
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                return None
            d = args.get("description") if isinstance(args, dict) else None
            return d if isinstance(d, str) else None
    return None


def read_queries(path: str | Path) -> dict[str, dict]:
    """The records of a queries file by task id (the last record of a task wins)."""
    path = Path(path)
    if not path.exists():
        return {}
    repair_jsonl(path)
    out = {}
    for i, d in enumerate(iter_jsonl(path)):
        if not isinstance(d, dict) or not isinstance(d.get("task_id"), str):
            raise ValueError(f"{path}: record {i + 1} is not a query record (no string 'task_id')")
        out[d["task_id"]] = d
    return out


def generate(
    tasks: Sequence[Task],
    client: OpenAIPolicy,
    out: str | Path,
    retry_failed: bool = False,
    progress: Callable[[dict], None] | None = None,
) -> dict[str, dict]:
    """Generate the query of every task not yet in ``out`` (JSONL, appended one record per task as it
    comes); returns every record of ``out`` for these tasks by id."""
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; give a file name")
    have = read_queries(out)
    for t in tasks:
        old = have.get(t.id)
        if old is not None and (old.get(FC_QUERY) or not retry_failed):
            continue
        rec = generate_one(t, client)
        append_jsonl(out, [rec])
        have[t.id] = rec
        if progress:
            progress(rec)
    return {t.id: have[t.id] for t in tasks if t.id in have}


def with_queries(tasks: Iterable[Task], records: dict[str, dict]) -> list[Task]:
    """The tasks with ``meta["fc_query"]`` / ``meta["fc_query_source"]`` set from their records (tasks
    whose generation failed are returned unchanged)."""
    res = []
    for t in tasks:
        r = records.get(t.id)
        if r and isinstance(r.get(FC_QUERY), str) and r[FC_QUERY]:
            t = replace(t, meta={**t.meta, FC_QUERY: r[FC_QUERY], FC_QUERY_SOURCE: r.get(FC_QUERY_SOURCE) or GENERATOR})
        res.append(t)
    return res
