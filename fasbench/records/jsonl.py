"""JSONL files of records: append flushed and fsynced (a killed run loses at most the line being
written), read with a truncated last line skipped and any other corrupt line an error, repair before
resuming. :func:`read_records` reads a file of records that is either a JSON list or JSONL (the
importers' input files); :func:`parse_json_or_jsonl` is its parser, shared with the trajectory
parsers. The record types themselves are in ``fasbench.records``."""

from __future__ import annotations

import gzip
import json
import os
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fasbench.base.contain import NoSuchFile, PathRefused, Unreadable, open_regular, read_regular

MAX_LINE_BYTES = 256 << 20  # one JSONL line (one record) larger than this is refused, never held whole
MAX_FILE_BYTES = 512 << 20  # a whole JSON/JSONL file read at once (or its gunzipped text) larger than this is refused


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
    with raw, gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw as f:
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
                raise RecordError(
                    f"{path}: not UTF-8 text, not a JSONL file ({e.reason} at byte {at + e.start})"
                ) from None
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


def _gunzip(data: bytes, max_bytes: int) -> bytes:
    """Every gzip member of ``data``, at most ``max_bytes`` of output (a gzip bomb stops there)."""
    out, rest = [], data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(rest, max_bytes + 1 - sum(map(len, out))))
        except zlib.error as e:
            raise RecordError(f"corrupt gzip ({e})") from e
        if sum(map(len, out)) > max_bytes:
            raise RecordError(f"larger than {max_bytes} bytes once gunzipped")
        if not d.eof:
            raise RecordError("truncated gzip (Compressed file ended before the end-of-stream marker was reached)")
        rest = d.unused_data.lstrip(b"\x00")
    return b"".join(out)


def read_json_text(path: str | os.PathLike, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A JSON or JSONL file's text, gunzipped when it starts with the gzip magic: a regular file only
    (a FIFO, device or folder refused, never waited on), at most ``max_bytes`` read or gunzipped.
    FileNotFoundError for a missing file; RecordError (without the path) for anything else."""
    try:
        data, more = read_regular(path, max_bytes)
    except NoSuchFile:
        raise FileNotFoundError(2, "No such file or directory", str(path)) from None
    except (PathRefused, Unreadable) as e:
        raise RecordError(e.why) from None
    if more:
        raise RecordError(f"larger than {max_bytes} bytes")
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"not UTF-8 text ({e})") from e


def parse_json_or_jsonl(text: str) -> tuple[Any, str | None, bool]:
    """(the value, why it is partial or None, whether it was JSONL) of a text that is one JSON
    document or JSONL (one value a line). A JSONL last line cut off mid-write (no newline after it)
    is left out and named in the partial reason; any other bad line, an empty text or a JSON document
    cut short is a RecordError (without a path: the caller names the file)."""
    if not text.strip():
        raise RecordError("empty file")
    try:
        return json.loads(text), None, False
    except RecursionError:
        raise RecordError("JSON nested too deeply") from None
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":
            if e.msg.startswith("Unterminated string") or e.pos >= len(text.rstrip()) - 1:  # ran into EOF
                raise RecordError(f"truncated JSON ({e.msg} at char {e.pos} of {len(text)})") from e
            raise RecordError(f"invalid JSON ({e.msg} at line {e.lineno} col {e.colno})") from e
    lines = text.split("\n")
    objs, partial = [], None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            objs.append(json.loads(line))
        except RecursionError:
            raise RecordError(f"JSONL line {i + 1} is nested too deeply") from None
        except json.JSONDecodeError as e:
            if i == len(lines) - 1:  # no newline after it: cut off mid-write
                partial = f"truncated last line {i + 1} ({e.msg})"
                continue
            raise RecordError(f"invalid JSONL line {i + 1} ({e.msg})") from e
    if not objs:
        raise RecordError(partial or "no JSON objects")
    return objs, partial, True


def read_records(path: str | os.PathLike, max_bytes: int = MAX_FILE_BYTES) -> list:
    """The records of a file that is a JSON list or JSONL (``.gz`` accepted), read through
    :func:`read_json_text` (contained, at most ``max_bytes``) and :func:`parse_json_or_jsonl`. A
    truncated last JSONL line is skipped with a warning, as :func:`iter_jsonl` does. FileNotFoundError
    for a missing file; RecordError naming the file for anything else. The records are returned as
    they are: the caller checks each one (one bad record never stops the batch)."""
    try:
        obj, partial, jsonl = parse_json_or_jsonl(read_json_text(path, max_bytes))
    except RecordError as e:
        raise RecordError(f"{os.fspath(path)}: {e}") from None
    if partial:
        warnings.warn(f"{os.fspath(path)}: skipping {partial}", stacklevel=2)
    if isinstance(obj, dict) and not jsonl:  # a JSONL file of one line
        return [obj]
    if not isinstance(obj, list):
        raise RecordError(
            f"{os.fspath(path)}: expected a JSON list or JSONL of objects, got a JSON {type(obj).__name__}"
        )
    return obj
