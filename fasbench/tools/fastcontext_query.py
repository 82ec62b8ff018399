"""FastContext's query, as released: the main agent's ``bash`` + ``subagent`` tools, its prompt, and
the query = the ``prompt`` argument of its ``subagent`` call.

Source: GitHub ``T0mSIlver/fastcontext`` (Microsoft's commits, up to ``913afd3``):

- ``benchmark/evaluation/query_gen.py`` @5fb8c1d (unchanged at 913afd3 but for an ``encoding=``):
  ``fastcontext_desc``, ``tools`` (``bash`` and ``subagent``), ``task_prompt``, the messages of
  ``get_subagent_tool_call`` (system ``You are a helpful assistant that can interact with a computer
  to solve programming tasks.``, user ``<problem_statement>\\n{problem_statement.strip()}\\n
  </problem_statement>\\n{task_prompt}``), one chat completion at ``temperature=1.0``; no tool call,
  or a finish reason other than ``tool_calls``, is a failed instance;
- ``training/fastcontext-rl/rl_data_preprocess.py`` @5fb8c1d and ``benchmark/swebench/bench_fastcontext.py``
  @5fb8c1d: the query is ``sample["subagent"]["tool_calls"][0]["arguments"]["prompt"]``, given to the
  explorer as ``<query>{prompt}</query>``; ``check_samples_query`` requires ``len(prompt) > 3``.

Deviations: the release reads the first tool call whatever its name (a ``bash`` call first makes it
fail on the missing ``prompt``); here the first ``subagent`` call with a string ``prompt`` of more
than 3 characters is taken, and a reply without one is a failed instance with its reason. The
release's history ships no generated query file (checked over every commit of the fork's history).
"""

from __future__ import annotations

import json

#: Task.meta keys: the generated query, and where it came from (generator, model, endpoint).
FC_QUERY = "fc_query"
FC_QUERY_SOURCE = "fc_query_source"
#: The query source recorded when a FastContext episode had no generated query.
PROBLEM_STATEMENT = "problem_statement"

SUBAGENT = "subagent"


def query_note(sources: dict[str, int]) -> str | None:
    """One line when some tasks (``sources``: query source -> tasks, ``Toolset.episode_query``) give a
    FastContext explorer their problem statement for want of a generated query; None otherwise. The
    release trained and evaluated on generated queries only (``rl_data_preprocess.py``,
    ``bench_fastcontext.py`` @5fb8c1d); no shipped task carries one."""
    n, total = sources.get(PROBLEM_STATEMENT, 0), sum(sources.values())
    if not n:
        return None
    return (
        f"{n} of {total} tasks have no FastContext generated query: their explorer is given the problem "
        "statement, not the release's query (`fasbench data fc-queries --tasks SET --endpoint openai:model=…,"
        "base_url=… --out QUERIES.jsonl --tasks-out TASKS.jsonl`, then use TASKS.jsonl as the task set)"
    )


FASTCONTEXT_DESC = """
Fast agent specialized for exploring codebases. Use this when you need to quickly find files by patterns (eg. "src/components/**/*.tsx"), search code for keywords (eg. "API endpoints"), or answer questions about the codebase (eg. "how do API endpoints work?").

When NOT to use the fastcontext tool:
- Simple, single or few-step tasks that can be performed by a single agent (using parallel or sequential tool calls) -- just call the tools directly instead.
- For example:
  - If you want to read a specific file path
  - If you are searching for code within a specific file or set of 2-3 files
  - If you are searching for a specific class definition like "class Foo"

Usage notes:
- Provide clear, detailed prompts so the agent can work autonomously and return exactly the information you need.
- When the fastcontext is done, it will return a single message back to you: A brief summary and a listing relevant file paths with line ranges.
""".strip()

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The bash command to execute",
                    }
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": SUBAGENT,
            "description": FASTCONTEXT_DESC,
            "parameters": {
                "type": "object",
                "properties": {
                    "description": {"description": "A short (3-5 word) description of the task", "type": "string"},
                    "prompt": {"description": "The task for the agent to perform", "type": "string"},
                },
                "required": ["description", "prompt"],
            },
        },
    },
]

TASK_PROMPT = """
Please based on the <problem_statement> call the `subagent` tool to explore the codebase and get related code files which can help to solve the problem (Do not call `subagent` in parallel).
""".strip()

SYSTEM = "You are a helpful assistant that can interact with a computer to solve programming tasks."
TEMPERATURE = 1.0


def messages(problem_statement: str) -> list[dict]:
    """``get_subagent_tool_call``'s messages for one problem statement."""
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"<problem_statement>\n{problem_statement.strip()}\n</problem_statement>\n{TASK_PROMPT}",
        },
    ]


def offers_subagent(tools) -> bool:
    """True when a request's tools include the ``subagent`` tool (a query-generation request)."""
    return any(isinstance(t, dict) and (t.get("function") or {}).get("name") == SUBAGENT for t in tools or [])


def subagent_call(call_id: str, description: str, prompt: str) -> dict:
    """An OpenAI-style ``subagent`` tool call (what a main agent's reply holds)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": SUBAGENT, "arguments": json.dumps({"description": description, "prompt": prompt})},
    }


def query_of(message: dict) -> tuple[str | None, str]:
    """(the query, "") from a main agent's reply message: the ``prompt`` argument of its first
    ``subagent`` call; (None, why) when it has none usable."""
    calls = message.get("tool_calls") or []
    names = []
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            continue
        names.append(str(fn.get("name")))
        if fn.get("name") != SUBAGENT:
            continue
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return None, "the subagent call's arguments are not JSON"
        prompt = args.get("prompt") if isinstance(args, dict) else None
        if not isinstance(prompt, str):
            return None, "the subagent call has no string 'prompt'"
        if len(prompt) <= 3:  # bench_fastcontext.py check_samples_query
            return None, f"the subagent prompt is too short ({len(prompt)} characters; the release wants > 3)"
        return prompt, ""
    return None, f"no subagent call (tool calls: {', '.join(names) or 'none'})"
