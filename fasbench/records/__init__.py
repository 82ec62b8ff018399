"""Versioned, JSON-serialisable records shared by every part of the workbench.

Line ranges are 1-based and inclusive: ``[start, end]``. Paths are relative to the
workspace root, with ``/`` separators. Every record round-trips through
``to_dict``/``from_dict``; traces are stored one episode per JSONL line.

The records are one API (``from fasbench.records import Task, Trace, ...``); the code is split by
concept: ``base`` (schema version, range validation), ``task`` (``Gold``, ``Task``), ``trace``
(calls, their results and what they showed, turns, reports, and the episode ``Trace`` that records
every message the policy saw), and ``fasbench.records.jsonl`` (the JSONL files, and ``read_records`` for a JSON list or JSONL file).
"""

from fasbench.records.base import SCHEMA_VERSION, Ranges
from fasbench.records.jsonl import (
    RecordError,
    append_jsonl,
    iter_jsonl,
    parse_json_or_jsonl,
    read_records,
    repair_jsonl,
)
from fasbench.records.task import Gold, Task, read_tasks, write_tasks
from fasbench.records.trace import (
    STOP_REASONS,
    Reply,
    Report,
    Shown,
    ToolCall,
    ToolResult,
    Trace,
    Turn,
    iter_traces,
    now,
    parse_arguments,
    parse_confidence,
    read_traces,
    turn_messages,
)

__all__ = [
    "SCHEMA_VERSION",
    "STOP_REASONS",
    "Gold",
    "Ranges",
    "RecordError",
    "Reply",
    "Report",
    "Shown",
    "Task",
    "ToolCall",
    "ToolResult",
    "Trace",
    "Turn",
    "append_jsonl",
    "iter_jsonl",
    "iter_traces",
    "now",
    "parse_arguments",
    "parse_confidence",
    "parse_json_or_jsonl",
    "read_records",
    "read_tasks",
    "read_traces",
    "repair_jsonl",
    "turn_messages",
    "write_tasks",
]
