"""FastContext's released harness text: the Read / Glob / Grep schemas and descriptions, the system
prompt, the user message form and the last-turn message.

Source: the public FastContext code release, GitHub ``T0mSIlver/fastcontext`` (files and commits as
stored in the reference index):

- ``src/fastcontext/agent/tool/read.py`` @24541aa (the version with negative offsets, pinned by
  ``tests/test_read_negative_offset.py`` @3d3b8e0), ``glob.py`` @91ae3c0, ``grep.py`` and
  ``grep.md`` @058b710 / @6c98019, ``tool.py`` @058b710 (``Tool.schema``);
- ``src/fastcontext/agent/system.md`` @44b0f51 (system prompt with ``${OS_KIND}``,
  ``${SHELL_NAME}``, ``${WORK_DIR}``, ``${WORK_DIR_LS}``);
- ``training/fastcontext-rl/rl_data_preprocess.py`` @0dc077f (user message ``<query>{query}</query>``);
- ``src/fastcontext/agent/agent.py`` (message when the turn limit is reached).

``read.md`` and ``glob.md`` (the Read and Glob descriptions) are not in the stored release; the texts
below state what the released code does (``LINE|content`` lines, 'File is empty.', 500-character line
cut, 2000-line cut, results in modification-time order, capped at 100) and are marked as
reconstructed in ``fasbench/tools/README.md``. Everything else is verbatim; tests/test_published.py
pins it.
"""

from __future__ import annotations

#: Read: lines per call and characters per line (read.py ``MAX_LINE``, ``MAX_LINE_LENGTH``).
READ_MAX_LINES = 2000
READ_MAX_LINE_LENGTH = 500
#: Glob: paths per call (glob.py ``limit``).
GLOB_LIMIT = 100
#: Grep: output lines when ``head_limit`` is not given (grep.py ``limit``).
GREP_HEAD = 100

#: The workspace path the prompt shows; fasbench presents every workspace at ``/repo``.
WORK_DIR = "/repo"

READ_DESCRIPTION = (
    "Reads a file from the local filesystem. Only files inside the working directory are reachable.\n"
    "It is okay to read a file that does not exist; an error will be returned.\n\n"
    "Usage:\n"
    "- You can optionally specify a line offset and limit (especially handy for long files), but it's "
    "recommended to read the whole file by not providing these parameters\n"
    "- Lines in the output are numbered starting at 1, using following format: LINE_NUMBER|LINE_CONTENT\n"
    "- You have the capability to call multiple tools in a single response. It is always better to "
    "speculatively read multiple files as a batch that are potentially useful.\n"
    "- If you read a file that exists but has empty contents you will receive 'File is empty.'\n"
    "- Any lines longer than 500 characters will be truncated to 500 characters with '...' appended to the end.\n"
    "- Any file content that exceeds the 2000 lines will be truncated to 2000 lines with '...' appended to the end."
)

GLOB_DESCRIPTION = (
    "- Fast file pattern matching tool that works with any codebase size\n"
    "- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"\n"
    "- Returns matching file paths sorted by modification time\n"
    "- Results are capped at 100 paths, and the output says so when it truncates\n"
    "- Use this tool when you need to find files by name patterns\n"
    "- You have the capability to call multiple tools in a single response. It is always better to "
    "speculatively perform multiple searches as a batch that are potentially useful."
)

GREP_DESCRIPTION = (
    "A powerful search tool built on ripgrep\n"
    "Usage:\n"
    "- Prefer using Grep for search tasks when you know the exact symbols or strings to search for. Whenever "
    "possible, use this tool instead of invoking grep or rg as a terminal command.\n"
    "- Supports full regex syntax (e.g., \"log.*Error\", \"function\\s+\\w+\")\n"
    "- Filter files with glob parameter (e.g., \"*.js\", \"**/*.tsx\") or type parameter (e.g., \"js\", \"py\", \"rust\")\n"
    "- Output modes: \"content\" shows matching lines (default), \"files_with_matches\" shows only file paths, "
    "\"count\" shows match counts\n"
    "- Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use interface\\{\\} to find "
    "interface{} in Go code)\n"
    "- Multiline matching: By default patterns match within single lines only. For cross-line patterns like "
    "struct \\{[\\s\\S]*?field, use multiline: true\n"
    "- Output is capped at the first 100 lines by default for responsiveness; raise or lower this with the "
    "head_limit parameter. When truncation occurs, the output ends with a \"Results truncated to first N lines\" note.\n"
    "- Content output formatting closely follows ripgrep output format: '-' for context lines, ':' for match "
    "lines, and all context/match lines below each file group."
)

READ_PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The absolute path of the file to read."},
        "offset": {
            "type": "integer",
            "description": "The line number to start reading from. Positive values are 1-indexed from the start of "
            "the file. Negative values count backwards from the end of the file (e.g. -1 starts at the last line). "
            "Only provide if the file is too large to read at once.",
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
            "description": "The absolute path of the directory to search in. If not provided, the current working "
            "directory will be used.",
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
            "description": "File or directory to search in (rg pattern -- PATH). Defaults to current working directory.",
        },
        "glob": {
            "type": "string",
            "description": 'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob',
        },
        "output_mode": {
            "type": "string",
            "enum": ["content", "files_with_matches", "count"],
            "description": 'Output mode: "content" shows matching lines (supports -A/-B/-C context, -n line numbers, '
            'head_limit), "files_with_matches" shows file paths (supports head_limit), "count" shows match counts '
            '(supports head_limit). Defaults to "content".',
        },
        "-B": {
            "type": "number",
            "description": 'Number of lines to show before each match (rg -B). Requires output_mode: "content", '
            "ignored otherwise.",
        },
        "-A": {
            "type": "number",
            "description": 'Number of lines to show after each match (rg -A). Requires output_mode: "content", '
            "ignored otherwise.",
        },
        "-C": {
            "type": "number",
            "description": 'Number of lines to show before and after each match (rg -C). Requires output_mode: '
            '"content", ignored otherwise.',
        },
        "-n": {
            "type": "boolean",
            "description": 'Show line numbers in output (rg -n). Requires output_mode: "content", ignored otherwise. '
            "Defaults to true.",
        },
        "-i": {"type": "boolean", "description": "Case insensitive search (rg -i)"},
        "type": {
            "type": "string",
            "description": "File type to search (rg --type). Common types: js, py, rust, go, java, etc. More "
            "efficient than include for standard file types.",
        },
        "head_limit": {
            "type": "number",
            "minimum": 0,
            "description": 'Limit output to first N lines/entries, equivalent to "| head -N". Works across all output '
            "modes: content (limits output lines), files_with_matches (limits file paths), count (limits count "
            "entries). When unspecified, results are capped at the first 100 lines.",
        },
        "multiline": {
            "type": "boolean",
            "description": "Enable multiline mode where . matches newlines and patterns can span lines (rg -U "
            "--multiline-dotall). Default: false.",
        },
    },
    "required": ["pattern"],
}

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

#: agent.py: the user message added when the turn limit is reached.
FINAL_TURN_MESSAGE = (
    "Max number of turns reached. Please provide the final answer based on the information you have gathered."
)


def system_prompt(work_dir_ls: str, work_dir: str = WORK_DIR, os_kind: str = "Linux", shell: str = "bash") -> str:
    """system.md with its four placeholders filled."""
    return (SYSTEM_PROMPT_TEMPLATE.replace("${OS_KIND}", os_kind).replace("${SHELL_NAME}", shell)
            .replace("${WORK_DIR}", work_dir).replace("${WORK_DIR_LS}", work_dir_ls))


def user_prompt(query: str) -> str:
    """The user message of the released RL data: ``<query>{query}</query>``."""
    return f"<query>{query}</query>"
