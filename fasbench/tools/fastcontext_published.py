"""FastContext's released harness text: the Read / Glob / Grep schemas and descriptions, the system
prompt, the user message form and the last-turn message.

Source: Microsoft's FastContext release. Microsoft's repository (github.com/microsoft/fastcontext) has
been removed; the release survives in the history of GitHub ``T0mSIlver/fastcontext`` (a fork: its
commits after ``913afd3``, 2026-06-26, are the fork's own, not Microsoft's). The published models were
trained with the tool package ``training/fastcontext-rl`` imports (``agent_runner.py``:
``fastcontext.agent.tool.{read,glob,grep,tool}``) at ``5fb8c1d`` (= the merge ``0dc077f``, same tree):

- ``src/fastcontext/agent/tool/read.md``, ``glob.md``, ``grep.md`` @5fb8c1d: the descriptions, verbatim
  (loaded by ``Tool.load_desc``; unchanged in every Microsoft commit up to ``913afd3``);
- ``src/fastcontext/agent/tool/read.py``, ``glob.py``, ``grep.py`` @5fb8c1d: the parameters, verbatim
  (``913afd3`` drops the negative-offset sentence from Read's ``offset``); ``tool.py`` @5fb8c1d
  (``Tool.schema``: no ``strict``, no ``additionalProperties``);
- ``training/fastcontext-rl/system.md`` @5fb8c1d (the RL system prompt: ``Linux``, ``bash`` filled in,
  ``${WORK_DIR}`` and ``${WORK_DIR_LS}`` left; ``src/fastcontext/agent/system.md`` is the same text
  with ``${OS_KIND}``/``${SHELL_NAME}`` and no space after ``Workspace Path:``);
- ``training/fastcontext-rl/rl_data_preprocess.py`` @5fb8c1d (user message ``<query>{query}</query>``);
- ``src/fastcontext/agent/agent.py`` @5fb8c1d (message when the turn limit is reached).

The descriptions say things the released code does not do (Read: lines cut at 500 characters, the code
cuts at 2000; Glob: sorted by modification time, the code does not sort; Grep's ``output_mode``:
"Defaults to files_with_matches", the code's default prints matching lines); the model was trained
with these texts and that code, so both are kept. ``FORK_*``: the texts of the fork's fixed tools
(tool set ``fastcontext-fork``, ``T0mSIlver/fastcontext`` @058b710). tests/test_published.py pins them.
"""

from __future__ import annotations

import copy

# the workspace path the prompt shows (/repo), defined beside the answer parser that strips it
from fasbench.records.fastcontext_answer import WORK_DIR

#: Read: lines per call and characters per line (read.py @5fb8c1d ``MAX_LINE``, ``MAX_LINE_LENGTH``).
READ_MAX_LINES = 2000
READ_MAX_LINE_LENGTH = 2000
#: Glob: paths per call (glob.py @5fb8c1d ``limit``).
GLOB_LIMIT = 100
#: Grep: output lines at most (grep.py @5fb8c1d ``limit``: a head_limit only lowers it).
GREP_HEAD = 100
#: Grep content mode's context when ``-C`` is not given (grep.py @5fb8c1d ``params.get("-C", 3)``).
GREP_CONTEXT = 3


READ_DESCRIPTION = (
    "Reads a file from the local filesystem. You can access any file directly by using this tool.\n"
    "If the User provides a path to a file assume that path is valid. It is okay to read a file that does not exist; an error will be returned.\n"
    "\n"
    "Usage:\n"
    "- You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters\n"
    "- Lines in the output are numbered starting at 1, using following format: LINE_NUMBER|LINE_CONTENT\n"
    "- You have the capability to call multiple tools in a single response. It is always better to speculatively read multiple files as a batch that are potentially useful.\n"
    "- If you read a file that exists but has empty contents you will receive 'File is empty.'\n"
    "- Any lines longer than 500 characters will be truncated to 500 characters with '...' appended to the end.\n"
    "- Any file content that exceeds the 2000 lines will be truncated to 2000 lines with '...' appended to the end."
)

GLOB_DESCRIPTION = (
    "- Fast file pattern matching tool that works with any codebase size\n"
    '- Supports glob patterns like "**/*.js" or "src/**/*.ts"\n'
    "- Returns matching file paths sorted by modification time\n"
    "- Use this tool when you need to find files by name patterns\n"
    "- When you are doing an open ended search that may require multiple rounds of globbing and grepping, use the Agent tool instead\n"
    "- You have the capability to call multiple tools in a single response. It is always better to speculatively perform multiple searches as a batch that are potentially useful."
)

GREP_DESCRIPTION = (
    "A powerful search tool built on ripgrep\n"
    "Usage:\n"
    "- Prefer using Grep for search tasks when you know the exact symbols or strings to search for. Whenever possible, use this tool instead of invoking grep or rg as a terminal command.\n"
    '- Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+")\n'
    '- Filter files with glob parameter (e.g., ".js", "**/.tsx") or type parameter (e.g., "js", "py", "rust")\n'
    '- Output modes: "content" shows matching lines (default), "files_with_matches" shows only file paths, "count" shows match counts\n'
    "- Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use interface\\{\\} to find interface{} in Go code)\n"
    "- Multiline matching: By default patterns match within single lines only. For cross-line patterns like struct \\{[\\s\\S]*?field, use multiline: true\n"
    '- Results are capped to several thousand output lines for responsiveness; when truncation occurs, the results report "at least" counts, but are otherwise accurate.\n'
    "- Content output formatting closely follows ripgrep output format: '-' for context lines, ':' for match lines, and all context/match lines below each file group."
)

READ_PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The absolute path of the file to read."},
        "offset": {
            "type": "integer",
            "description": "The line number to start reading from. Positive values are 1-indexed from "
            "the start of the file. Negative values count backwards from the end (e.g. "
            "-1 is the last line). Only provide if the file is too large to read at "
            "once.",
        },
        "limit": {
            "type": "integer",
            "description": "The number of lines to read. Only provide if the file is too large to read at once.",
        },
    },
    "required": ["path"],
}

GLOB_PARAMETERS = {
    "type": "object",
    "properties": {
        "directory": {
            "type": "string",
            "description": "The absolute path of the directory to search in. If not provided, the "
            "current working directory will be used.",
        },
        "pattern": {"type": "string", "description": "The glob pattern to match files or directories."},
    },
    "required": ["pattern"],
}

GREP_PARAMETERS = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "The regular expression pattern to search for in file contents"},
        "path": {
            "type": "string",
            "description": "File or directory to search in (rg pattern -- PATH). Defaults to current "
            "working directory.",
        },
        "glob": {
            "type": "string",
            "description": 'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob',
        },
        "output_mode": {
            "type": "string",
            "enum": ["content", "files_with_matches", "count"],
            "description": 'Output mode: "content" shows matching lines (supports -A/-B/-C '
            'context, -n line numbers, head_limit), "files_with_matches" shows '
            'file paths (supports head_limit), "count" shows match counts '
            '(supports head_limit). Defaults to "files_with_matches".',
        },
        "-B": {
            "type": "number",
            "description": "Number of lines to show before each match (rg -B). Requires output_mode: "
            '"content", ignored otherwise.',
        },
        "-A": {
            "type": "number",
            "description": "Number of lines to show after each match (rg -A). Requires output_mode: "
            '"content", ignored otherwise.',
        },
        "-C": {
            "type": "number",
            "description": "Number of lines to show before and after each match (rg -C). Requires "
            'output_mode: "content", ignored otherwise.',
        },
        "-n": {
            "type": "boolean",
            "description": 'Show line numbers in output (rg -n). Requires output_mode: "content", ignored '
            "otherwise. Defaults to true.",
        },
        "-i": {"type": "boolean", "description": "Case insensitive search (rg -i)"},
        "type": {
            "type": "string",
            "description": "File type to search (rg --type). Common types: js, py, rust, go, java, etc. "
            "More efficient than include for standard file types.",
        },
        "head_limit": {
            "type": "number",
            "minimum": 0,
            "description": 'Limit output to first N lines/entries, equivalent to "| head -N". '
            "Works across all output modes: content (limits output lines), "
            "files_with_matches (limits file paths), count (limits count entries). "
            "When unspecified, shows all results from ripgrep.",
        },
        "multiline": {
            "type": "boolean",
            "description": "Enable multiline mode where . matches newlines and patterns can span "
            "lines (rg -U --multiline-dotall). Default: false.",
        },
    },
    "required": ["pattern"],
}


# ---------------------------------------------------------------- the fork's texts (fastcontext-fork)

#: The fork's Read cut (read.py @e3dcb89 / @35db843 "truncate long lines at 500 chars as documented").
FORK_READ_MAX_LINE_LENGTH = 500
#: read.md and glob.md: the fork never changed them (its 058b710 files are the release's).
FORK_READ_DESCRIPTION = READ_DESCRIPTION
FORK_GLOB_DESCRIPTION = GLOB_DESCRIPTION
#: grep.md @6c98019 (= @058b710): glob examples fixed (@d506ae0/#8), the real cap described (@a9ab70b/#3).
FORK_GREP_DESCRIPTION = GREP_DESCRIPTION.replace('(e.g., ".js", "**/.tsx")', '(e.g., "*.js", "**/*.tsx")').replace(
    "- Results are capped to several thousand output lines for responsiveness; when truncation occurs, the results "
    'report "at least" counts, but are otherwise accurate.',
    "- Output is capped at the first 100 lines by default for responsiveness; raise or lower this with the "
    'head_limit parameter. When truncation occurs, the output ends with a "Results truncated to first N lines" note.',
)
FORK_GLOB_PARAMETERS = GLOB_PARAMETERS
#: read.py @24541aa (#10): the offset text for negative offsets counted from the end.
FORK_READ_PARAMETERS = copy.deepcopy(READ_PARAMETERS)
FORK_READ_PARAMETERS["properties"]["offset"]["description"] = (
    "The line number to start reading from. Positive values are 1-indexed from the start of the file. Negative "
    "values count backwards from the end of the file (e.g. -1 starts at the last line). Only provide if the file is "
    "too large to read at once."
)
#: grep.py @058b710: content the default (@0bbeb7c/#4), head_limit above 100 honoured (@c4034e7/#2).
FORK_GREP_PARAMETERS = copy.deepcopy(GREP_PARAMETERS)
FORK_GREP_PARAMETERS["properties"]["output_mode"]["description"] = GREP_PARAMETERS["properties"]["output_mode"][
    "description"
].replace('Defaults to "files_with_matches".', 'Defaults to "content".')
FORK_GREP_PARAMETERS["properties"]["head_limit"]["description"] = GREP_PARAMETERS["properties"]["head_limit"][
    "description"
].replace(
    "When unspecified, shows all results from ripgrep.", "When unspecified, results are capped at the first 100 lines."
)

SYSTEM_PROMPT_TEMPLATE = """You are a codebase exploration specialist focused exclusively on searching and analyzing existing code.
Your main goal is to explore the codebase based on a query, which are denoted by the <query> tag.

Your strengths:
- Rapidly finding files using glob patterns
- Searching code and text with powerful regex patterns
- Reading and analyzing file contents

Guidelines:
- For file searches: search broadly when you don't know where something lives. Use Read when you know the specific file path.
- For analysis: Start broad and narrow down. Use multiple search strategies if the first doesn't yield results.
- Be thorough: Check multiple locations, consider different naming conventions, look for related files.

NOTE: You are meant to be a fast agent that returns output as quickly as possible. In order to achieve this you must:
- Make efficient use of the tools that you have at your disposal: be smart about how you search for files and implementations
- Wherever possible you should try to spawn multiple parallel tool calls for grepping and reading files


## Required Output

End your response with an optional brief explanation of your findings (no more than 50 words), followed by a `<final_answer>` tag containing the relevant file paths and line ranges.

<example>
The core routing logic lives in two files.

<final_answer>
/absolute/path/to/file_1.py:10-15 (Optional Brief Reason: e.g., "Core logic to modify")
/absolute/path/to/file_2.js:102-123
</final_answer></example>

## Working Environment

OS Version: ${OS_KIND}

Shell: ${SHELL_NAME}

Workspace Path: ${WORK_DIR}

The directory listing of the workspace is:
```
${WORK_DIR_LS}
```

Now, complete the user's search request efficiently and report your findings clearly."""

#: agent.py @5fb8c1d: the user message added when the turn limit is reached.
FINAL_TURN_MESSAGE = (
    "Max number of turns reached. Please provide the final answer based on the information you have gathered."
)


def system_prompt(work_dir_ls: str, work_dir: str = WORK_DIR, os_kind: str = "Linux", shell: str = "bash") -> str:
    """system.md with its four placeholders filled."""
    return (
        SYSTEM_PROMPT_TEMPLATE.replace("${OS_KIND}", os_kind)
        .replace("${SHELL_NAME}", shell)
        .replace("${WORK_DIR}", work_dir)
        .replace("${WORK_DIR_LS}", work_dir_ls)
    )


def user_prompt(query: str) -> str:
    """The user message of the released RL data: ``<query>{query}</query>``."""
    return f"<query>{query}</query>"
