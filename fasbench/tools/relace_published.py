"""Relace's published Fast Agentic Search harness text, verbatim: the five tool schemas, the system
prompt and the user prompt template.

Source: https://docs.relace.ai/docs/fast-agentic-search/agent ("Overview"), sections "System
Prompt", "User Prompt Template", "Tool Schema Definition" and "Code Example with OpenAI SDK" (the
page shows the five schemas in the code example; the view_file schema also standalone, identical).
The documentation warns: "Deviating from the toolsets & schemas defined in this guide can lead to
unexpected behavior. The fast agentic search model is reinforced to correctly format tool calls with
these specific parameters." Nothing here is paraphrased; tests/test_published.py pins it.

Limits stated by the published text: view_file shows lines 1-100 by default, ``[start, -1]`` to the
end; view_directory is "limited to the first 250 items"; grep_search results "are capped at 50
matches". It also says the model "typically makes 4-12 tool calls per turn" over "4-5 turns": a
description, not a cap (``harness.Limits.max_calls_per_turn`` = 12 is fasbench's choice).
"""

from __future__ import annotations

VIEW_DEFAULT = [1, 100]
DIR_LIMIT = 250
GREP_LIMIT = 50
#: The note the reference view_file handler appends when the view stops before the end of the file.
TRUNCATED_NOTE = "... rest of file truncated ..."

SYSTEM_PROMPT = (
    "You are an AI agent whose job is to explore a code base with the provided tools and thoroughly "
    "understand the problem.\n"
    "\n"
    "You should use the tools provided to explore the codebase, read files, search for specific terms, "
    "and execute bash commands as needed.\n"
    "\n"
    "Once you have a good understanding of the problem, use the `report_back` tool share your findings. "
    "Make sure to only use the `report_back` tool when you are confident that you have gathered enough "
    "information to make an informed decision.\n"
    "\n"
    "Your objective is speed and efficiency so call multiple tools at once where applicable to reduce "
    "latency and reduce the number of turns.\n"
    "\n"
    "You are given a limited number of turns so aim to call 4-12 tools in parallel. You are suggested to "
    "explain your reasoning for the tools you choose to call before calling them."
)

USER_PROMPT_TEMPLATE = """I have uploaded a code repository in the {{repo_root}} directory.

Now consider the following user query:

<user_query>
{{prompt}}
</user_query>

You need to resolve the <user_query>.

To do this, follow the workflow below:

---

Your job is purely to understand the codebase.

### 1. Explore and Understand the Codebase

You **must first build a deep understanding of the relevant code**.

Use the available tools to:

- Locate and examine all relevant parts of the codebase.
- Understand how the current code works, including expected behaviors, control flow, and edge cases.
- Identify the potential root cause(s) of the issue or the entry points for the requested feature.
- Review any related unit tests to understand expected behavior.

---

### 2. Report Back Your Understanding

Once you believe you have a solid understanding of the issue and the relevant code:

- Use the `report_back` tool to report you findings.
  - File paths should be relative to the project root excluding the base `/repo/` failure to comply will result in deductions.
  - Only report the relevant files within the repository. You may speculate that a file or folder may be added in your explaination, but it must not be put within you reported files.

---

### Success Criteria

A successful resolution means:

- The specific issue in the <user_query> is well understood.
- Your explain clearly the reasoning behind marking code as relavent.
- The files comprehensively covers all the key files needed to address the query.
  - Relevant files can be any of three types:
    - Files needing edits
    - Files providing needed provide the required edits

<use_parallel_tool_calls>
If you intend to call multiple tools and there are no dependencies between the tool calls, make all of the independent tool calls in parallel. Prioritize calling tools simultaneously whenever the actions can be done in parallel rather than sequentially. For example, when reading 3 files, run 3 tool calls in parallel to read all 3 files into context at the same time. Maximize use of parallel tool calls where possible to increase speed and efficiency. However, if some tool calls depend on previous calls to inform dependent values like the parameters, do NOT call these tools in parallel and instead call them sequentially. Never use placeholders or guess missing parameters in tool calls.

Parallel tool calls can be made using the following schema:

<tool_call>
<function=example_function_name_1>
<parameter=example_parameter_1>
value_1
</parameter>
<parameter=example_parameter_2>
</parameter>
</function>

<function=example_function_name_2>
<parameter=example_parameter_1>
value_1
</parameter>
<parameter=example_parameter_2>
</parameter>
</function>
</tool_call>

Where you can place as many <function=...>...</function> tags as you want within the <tool_call>...</tool_calls> tags for parallel tool calls.
</use_parallel_tool_calls>"""


def user_prompt(query: str, repo_root: str = "/repo") -> str:
    """The published template with ``{{repo_root}}`` and ``{{prompt}}`` replaced."""
    return USER_PROMPT_TEMPLATE.replace("{{repo_root}}", repo_root).replace("{{prompt}}", query)


_PAIR = {"type": "array", "minItems": 2, "maxItems": 2, "prefixItems": [{"type": "integer"}, {"type": "integer"}]}

#: The ``function`` objects of the five published tool definitions, in the documentation's order.
SCHEMAS: list[dict] = [
    {
        "name": "view_file",
        "strict": True,
        "description": "Tool for viewing/exploring the contents of existing files\n\nLine numbers are included in the "
        "output, indexing at 1. If the output does not include the end of the file, it will be noted after the "
        "final output line.\n\nExample (viewing the first 2 lines of a file):\n1   def my_function():\n2       "
        'print("Hello, World!")\n... rest of file truncated ...',
        "parameters": {
            "type": "object",
            "required": ["path", "view_range"],
            "properties": {
                "path": {"type": "string", "description": "Absolute path to a file, e.g. `/repo/file.py`."},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "default": [1, 100],
                    "description": "Range of file lines to view. If not specified, the first 100 lines of the file are "
                    "shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will "
                    "show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from "
                    "`start_line` to the end of the file.",
                },
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "view_directory",
        "strict": True,
        "description": "Tool for viewing the contents of a directory.\n\n* Lists contents recursively, relative to the "
        "input directory\n* Directories are suffixed with a trailing slash '/'\n* Depth might be limited by the tool "
        "implementation\n* Output is limited to the first 250 items\n\nExample output:\nfile1.txt\nfile2.txt\n"
        "subdir1/\nsubdir1/file3.txt",
        "parameters": {
            "type": "object",
            "required": ["path", "include_hidden"],
            "properties": {
                "path": {"type": "string", "description": "Absolute path to a directory, e.g. `/repo/`."},
                "include_hidden": {
                    "type": "boolean",
                    "default": False,
                    "description": "If true, include hidden files in the output (false by default).",
                },
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "grep_search",
        "strict": True,
        "description": "Fast text-based regex search that finds exact pattern matches within files or directories, "
        "utilizing the ripgrep command for efficient searching. Results will be formatted in the style of ripgrep "
        "and can be configured to include line numbers and content. To avoid overwhelming output, the results are "
        "capped at 50 matches. Use the include or exclude patterns to filter the search scope by file type or "
        "specific paths. This is best for finding exact text matches or regex patterns.",
        "parameters": {
            "type": "object",
            "required": ["query", "case_sensitive", "exclude_pattern", "include_pattern"],
            "properties": {
                "query": {"type": "string", "description": "The regex pattern to search for"},
                "case_sensitive": {
                    "type": "boolean",
                    "default": True,
                    "description": "Whether the search should be case sensitive",
                },
                "exclude_pattern": {"type": ["string", "null"], "description": "Glob pattern for files to exclude"},
                "include_pattern": {
                    "type": ["string", "null"],
                    "description": "Glob pattern for files to include (e.g. '*.ts' for TypeScript files)",
                },
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "bash",
        "strict": True,
        "description": "Tool for executing bash commands.\n\n* Avoid long running commands\n* Avoid "
        "dangerous/destructive commands\n* Prefer using other more specialized tools where possible",
        "parameters": {
            "type": "object",
            "required": ["command"],
            "properties": {"command": {"type": "string", "description": "Bash command to execute"}},
            "additionalProperties": False,
        },
    },
    {
        "name": "report_back",
        "strict": True,
        "description": "This is a tool to use when you feel like you have finished exploring the codebase and "
        "understanding the problem, and now would like to report back to the user.",
        "parameters": {
            "type": "object",
            "required": ["explanation", "files"],
            "properties": {
                "explanation": {
                    "type": "string",
                    "description": "Details your reasoning for deeming the files relevant for solving the issue.",
                },
                "files": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": _PAIR},
                    "description": "A dictionary where the keys are file paths and the values are lists of tuples "
                    "representing the line ranges in each file that are relevant to solving the issue.",
                },
            },
            "additionalProperties": False,
        },
    },
]
