"""JSONL files of records: append flushed and fsynced (a killed run loses at most the line being
written), read with a truncated last line skipped and any other corrupt line an error, repair before
resuming. The record types themselves are in ``fasbench.records``."""

from __future__ import annotations

import gzip
import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator

from fasbench.base.contain import NoSuchFile, PathRefused, open_regular

MAX_LINE_BYTES = 256 << 20  # one JSONL line (one record) larger than this is refused, never held whole

class RecordError(ValueError):
    """A record could not be built from the given data; the message says which field."""


def append_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> None:
    """Append records (anything with ``to_dict`` or plain dicts), one per line, flushed and
    fsynced so that a killed run loses at most the line being written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            d = r.to_dict() if hasattr(r, "to_dict") else r
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """Yield the JSON objects of a JSONL file (``.gz`` accepted), streamed line by line. A truncated
    last line (a run killed mid-write) is skipped with a warning; a corrupt line elsewhere is an error.
    Only a regular file is read (a FIFO ``traces.jsonl`` is refused, never waited on), and a line over
    :data:`MAX_LINE_BYTES` is refused with its number, not read into memory."""
    path = Path(path)
    if path.is_dir():
        raise RecordError(f"{path}: is a folder, not a JSONL file")
    try:
        raw = open_regular(path)
    except PathRefused as e:
        if isinstance(e, NoSuchFile):
            raise FileNotFoundError(2, "No such file or directory", str(path)) from None
        raise RecordError(f"{path}: {e.why}") from None
    with raw, (gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw) as f:
        i, at = 0, 0
        while True:
            try:
                line = f.readline(MAX_LINE_BYTES + 1)
            except (gzip.BadGzipFile, EOFError, OSError) as e:
                raise RecordError(f"{path}: corrupt gzip ({e})") from None
            if not line:
                return
            i += 1
            if len(line) > MAX_LINE_BYTES:
                raise RecordError(f"{path}: line {i} is longer than {MAX_LINE_BYTES} bytes")
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise RecordError(f"{path}: not UTF-8 text, not a JSONL file ({e.reason} at byte {at + e.start})") from None
            at += len(line)
            if not text.strip():
                continue
            try:
                yield json.loads(text)
            except RecursionError:
                raise RecordError(f"{path}: line {i} is JSON nested too deeply") from None
            except json.JSONDecodeError as e:
                if not text.endswith("\n"):  # only the last line can lack its newline
                    warnings.warn(f"{path}: skipping truncated last line {i} ({e})", stacklevel=2)
                    continue
                raise RecordError(f"{path}: line {i} is not valid JSON: {e}") from e


def repair_jsonl(path: str | os.PathLike) -> int:
    """Cut a truncated last line off a JSONL file (before resuming appends). Returns bytes cut."""
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(keep)
    return len(data) - keep
