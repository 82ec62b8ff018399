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
    """Yield the JSON objects of a JSONL file (``.gz`` accepted). A truncated last line (a run
    killed mid-write) is skipped with a warning; a corrupt line elsewhere is an error."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    if path.is_dir():
        raise RecordError(f"{path}: is a folder, not a JSONL file")
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = f.readlines()
    except UnicodeDecodeError as e:
        raise RecordError(f"{path}: not UTF-8 text, not a JSONL file ({e.reason} at byte {e.start})") from None
    except (gzip.BadGzipFile, EOFError) as e:
        raise RecordError(f"{path}: corrupt gzip ({e})") from None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except RecursionError:
            raise RecordError(f"{path}: line {i + 1} is JSON nested too deeply") from None
        except json.JSONDecodeError as e:
            if i == len(lines) - 1 and not line.endswith("\n"):
                warnings.warn(f"{path}: skipping truncated last line {i + 1} ({e})")
                continue
            raise RecordError(f"{path}: line {i + 1} is not valid JSON: {e}") from e


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
