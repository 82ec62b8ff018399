"""FastContext's released SFT data formats, verbatim (Microsoft's release in the history of
``T0mSIlver/fastcontext``, commit ``0dc077f``, tree identical to ``5fb8c1d``;
``training/fastcontext-sft`` was removed from the repository at ``86d72b7`` and is not in ``913afd3``).

- ``parallel_toolcalls`` (``training/fastcontext-sft/data/gen_parallel_toolcalls_1turn.py``): a
  teacher model is asked, with :data:`PARALLEL_SYNTHESIS_SYSTEM` + :data:`WORK_ENV_TEMPLATE` as its
  system prompt and ``<query>…</query>`` + :data:`PARALLEL_SYNTHESIS_USER_SUFFIX` as its user message
  (lines 13–30, 32–45, 48–72), for the parallel calls of a first turn; a reply that stops for
  ``tool_calls`` with at least one call is kept (lines 101–113). The SFT example is the explorer's own
  system prompt (``system.md``), the user message ``<query>…</query>`` and the teacher's calls with
  the content emptied (``construct_trajectory_with_tool_calls``, lines 149–171): no tool results.
- ``linerange`` (``training/fastcontext-sft/data/gen_linerange.py``): a tool-free task, its own system
  prompt :data:`LINERANGE_SYSTEM` (lines 4–24) and one user message of ``<files>`` blocks
  (```` ```PATH:START-END ```` … the Read tool's numbered lines) then :data:`LINERANGE_TASK_PROMPT`
  (lines 26–33, 50–59); the answer is ``<final_answer>\n…\n</final_answer>`` (lines 90–95). No tools.

tests/test_sft_formats.py pins each text by its SHA-256 computed from the release.
"""

from __future__ import annotations

#: gen_parallel_toolcalls_1turn.py @0dc077f lines 13-30 (``TASK_SYSTEM_PROMPT``, ``.strip()``-ed there).
PARALLEL_SYNTHESIS_SYSTEM = """You are a helpful data synthesis assistant that generates parallel tool calls to explore a codebase based on a user query.

# Task
Focusing on the below <query>, you MUST follow the rules to generate parallel tool calls in your **first turn** to explore the codebase.

## Rules (in priority order)

1. **Parallel execution**: All tool calls in the first turn MUST be issued simultaneously in a single response — do NOT wait for one to finish before calling the next.
2. **No redundancy**: Each call must target distinct information. Do not issue two calls that would return overlapping results (e.g., searching the same keyword in two different ways).
3. **Coverage-driven count**: Issue as many calls as needed to achieve broad, diverse coverage of the query — typically **4 tool calls**.
4. **Diversity of signal**: Calls should vary in strategy — e.g., combine file-pattern search, symbol search and directory listing rather than repeating the same approach.

## Decision logic for parallel call count
- Simple / narrow query → 1 - 2 tool calls
- Moderate scope → 3 - 4 tool calls
- Broad / multi-faceted query → 5 - 6 tool calls (justify each extra call)"""

#: gen_parallel_toolcalls_1turn.py @0dc077f lines 32-45 (``work_env_template``; ``${WORK_DIR}`` and
#: ``${WORK_DIR_LS}`` are replaced, line 58).
WORK_ENV_TEMPLATE = """
## Working Environment

OS Version: Linux

Shell: bash

Workspace Path:${WORK_DIR}

The directory listing of the workspace is:
```
${WORK_DIR_LS}
```
"""

#: gen_parallel_toolcalls_1turn.py @0dc077f lines 61-65: after ``<query>{query}</query>`` and a newline.
PARALLEL_SYNTHESIS_USER_SUFFIX = (
    "Now, let's generate parallel tool calls to explore the codebase based on the above query."
)

#: gen_linerange.py @0dc077f lines 4-24 (``system``, not stripped).
LINERANGE_SYSTEM = """
Your main goal is to locate relevant file paths and line ranges that can help answer the <query>.

## Final Answer Format

Provide the final answer in the form of absolute file paths and line ranges, which are denoted by the <final_answer> tag:
<example>
<final_answer>
/absolute/path/to/file_1.py:10-15 (3 ~ 5 words brief explanation of relevance in parentheses, optional but helpful)
/absolute/path/to/file_2.js:102-123
</final_answer></example>

## Guidelines for Final Answer

- **Relevance**: Only include file paths and line ranges that are highly relevant to the query
- **Precision**: Include only the necessary lines that directly address the query
- **Conciseness**: Keep line ranges as narrow as possible while capturing all relevant information
- The provided file contents may contain irrelevant information - carefully filter based on the query
- Avoid large line ranges that include mostly irrelevant content
- Provide only the final answer in the specified format - no explanations needed
"""

#: gen_linerange.py @0dc077f lines 26-33 (``task_prompt``, ``.strip()``-ed there).
LINERANGE_TASK_PROMPT = """## Task
You can assume that the <files> contents are the tool results from the previous steps, which are explored based on the <query>.
The <files> contents may contain a large amount of information, and only a small portion of it is relevant to the <query>.
Your task is to identify the relevant file paths and line ranges that can help answer the <query>, and provide the final answer in the specified format.

let's get started!"""

#: gen_linerange.py @0dc077f line 64 / the released Read tool (``read.py`` @5fb8c1d): longer lines are cut.
MAX_LINE_LENGTH = 2000


def query_message(query: str) -> str:
    """The explorer's user message: ``<query>{query}</query>`` (gen_parallel_toolcalls_1turn.py line 157)."""
    return f"<query>{query}</query>"


def synthesis_messages(query: str, workspace: str, workspace_ls: str) -> list[dict]:
    """The teacher's prompt for a first turn of parallel calls (``prepare_samples_message``, lines 48-72)."""
    system = (
        PARALLEL_SYNTHESIS_SYSTEM
        + "\n\n"
        + WORK_ENV_TEMPLATE.replace("${WORK_DIR}", workspace).replace("${WORK_DIR_LS}", workspace_ls)
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": query_message(query) + "\n" + PARALLEL_SYNTHESIS_USER_SUFFIX},
    ]


def numbered_lines(lines: list[str], start: int, end: int) -> str:
    """Lines ``start..end`` (1-based, inclusive) as the released Read tool shows them: ``N|line``, each
    line keeping its newline, a line over :data:`MAX_LINE_LENGTH` characters cut with ``...``
    (``read.py`` @5fb8c1d lines 60-73)."""
    out = []
    for i in range(start - 1, min(end, len(lines))):
        line = lines[i]
        if len(line) > MAX_LINE_LENGTH:
            line = line[:MAX_LINE_LENGTH] + "...\n"
        out.append(f"{i + 1}|{line}")
    return "".join(out)


def linerange_messages(files: list[tuple[str, int, int, str]], answer: list[tuple[str, int, int]]) -> list[dict]:
    """The whole ``linerange`` example: system, the ``<files>`` user message (``task_messages``,
    lines 50-59) and the assistant's ``<final_answer>`` (lines 90-95), one ``PATH:START-END`` a line."""
    file_content = ""
    for fpath, start, end, content in files:
        file_content += f"\n```{fpath}:{start}-{end}\n{content}\n```"
    file_content = f"<files>\n{file_content}\n</files>"
    final = "\n".join(f"{p}:{a}-{b}" for p, a, b in answer)
    return [
        {"role": "system", "content": LINERANGE_SYSTEM},
        {"role": "user", "content": file_content + "\n\n" + LINERANGE_TASK_PROMPT},
        {"role": "assistant", "content": "<final_answer>\n" + final + "\n</final_answer>"},
    ]
