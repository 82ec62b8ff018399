"""The compact protocol of the Relace tool set (``ToolLimits(prompt="compact")``): a short system prompt,
a short user prompt and short descriptions of the SAME five tools, for the CPU RL miniature.

A stated deviation (``docs/design.md``, ``fasbench/rl/README.md``): Relace's published system prompt,
user prompt template and tool schemas (:mod:`fasbench.tools.relace_published`) render to ≈ 2,100
tokens with SmolLM2's tokenizer, and a 135M model on 2 CPU cores spends most of an episode's time
prefilling them (``/work/shared/RL-ON-CPU.md``: issue 35). This text says what the published one says
about the task (explore /repo with the tools, call independent tools in parallel to save turns, answer
with ``report_back``: files and line ranges) in a few sentences, and shows each tool's parameters with
the published names and types but without their long descriptions. Everything else is unchanged: the
tool implementations, their validation (the published schemas, made lenient as in
:func:`fasbench.tools.relace._lenient`), the sandbox, the harness loop and its notes, the tool-call
parser and the rewards. The published prompts stay the default everywhere (every ``ToolLimits``
without ``prompt``, every GPU profile); only the miniature's profiles (``sft_mini``, ``rl_mini``) set
``prompt: compact``. Written for fasbench; no published source.
"""

from __future__ import annotations

SYSTEM_PROMPT = (
    "You search a code repository with tools. Call several independent tools in one reply: fewer turns "
    "is better. When you have found the relevant code, call report_back with each file and its line ranges."
)

USER_PROMPT_TEMPLATE = "Repository: {repo_root}\nQuery: {prompt}"


def user_prompt(query: str, repo_root: str = "/repo") -> str:
    return USER_PROMPT_TEMPLATE.format(repo_root=repo_root, prompt=query)


#: The ``function`` objects the model sees under the compact protocol: the published names; each tool's
#: required parameters and the one optional parameter a search needs most (view_file's view_range,
#: grep_search's include_pattern), with the published types; one-line descriptions. The parameters left
#: unshown (view_directory's include_hidden, grep_search's case_sensitive and exclude_pattern) keep their
#: published defaults and are still accepted.
SCHEMAS: list[dict] = [
    {
        "name": "view_file",
        "description": "Show numbered lines of a file; view_range [start, end], end -1 = to the end.",
        "parameters": {
            "type": "object",
            "required": ["path"],
            "properties": {"path": {"type": "string"}, "view_range": {"type": "array", "items": {"type": "integer"}}},
        },
    },
    {
        "name": "view_directory",
        "description": "List a directory recursively.",
        "parameters": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "grep_search",
        "description": "Regex search: path:line:text lines.",
        "parameters": {
            "type": "object",
            "required": ["query"],
            "properties": {"query": {"type": "string"}, "include_pattern": {"type": "string"}},
        },
    },
    {
        "name": "bash",
        "description": "Run a read-only bash command.",
        "parameters": {"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "report_back",
        "description": "Answer: files maps each path to its line ranges [[start, end]].",
        "parameters": {
            "type": "object",
            "required": ["explanation", "files"],
            "properties": {"explanation": {"type": "string"}, "files": {"type": "object"}},
        },
    },
]
