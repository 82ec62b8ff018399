"""FastContext's answer block, read into a :class:`~fasbench.records.Report`: the parser the release
trains and scores with (:func:`parse_final_answer`, ``training/fastcontext-rl/utils.py`` @5fb8c1d; the
format and every rule are in :mod:`fasbench.tools.fastcontext`'s docstring) and fasbench's older, looser
reading (:func:`parse_final_answer_lenient`, only the ``fastcontext-lenient`` reward), with
:data:`WORK_DIR`, the workspace path FastContext's prompt shows.

They sit here, below the tool sets and the scoring, because both read them: the tool set parses its
answer with them, and the rewards and the judge re-read an answer and strip the shown workspace
(``scoring`` never imports a tool set; ``tests/test_architecture.py``). A model's reply is hostile
data: each parser returns a Report or None and never raises on a malformed line.
"""

from __future__ import annotations

import re

from fasbench.records.trace import Report, parse_confidence

#: The workspace path the prompt shows; fasbench presents every workspace at ``/repo``.
WORK_DIR = "/repo"

_BLOCK = re.compile(r"<final_answer>(.*?)(?:</final_answer>|\Z)", re.S | re.I)
_NUM = r"L?\d+"
_RANGES = rf"{_NUM}(?:\s*[-–]\s*{_NUM})?(?:\s*,\s*{_NUM}(?:\s*[-–]\s*{_NUM})?)*"
_LINE = re.compile(
    rf"^\s*(?:[-*•+]\s+|\d+[.)]\s+)?`?(?P<path>[^\s`:()]+?)`?"
    rf"(?::(?P<ranges>{_RANGES}))?`?(?:\s*[(\-–—:].*|\s+.*)?$"
)


_CONFIDENCE = re.compile(r"^\s*confidence\s*[:=]\s*([0-9.]+%?)\s*$", re.I)


def _looks_like_path(p: str) -> bool:
    return "/" in p or re.search(r"\w\.\w+$", p) is not None


#: utils.py parse_final_answer @5fb8c1d: the block and one citation line, as released.
RELEASED_BLOCK = re.compile(r"<final_answer>(.*?)</final_answer>", re.DOTALL)
RELEASED_LINE = re.compile(r"(.+?):(\d+(?:-\d+)?)\s*(.*)")


def parse_final_answer(text: str) -> Report | None:
    """The report in ``text`` as the release reads it (see the module docstring): None without a
    closed block; a Report whose ``files`` map each path as written to its ranges in answer order
    (``[start, end]`` as written, a single line ``N`` as ``[N, N]``), else empty."""
    m = RELEASED_BLOCK.search(text or "")
    if m is None:
        return None
    files: dict[str, list[list[int]]] = {}
    reasons = []
    confidence = None
    for entry in m.group(1).strip().splitlines():
        if not entry.strip():
            continue
        cm = RELEASED_LINE.match(entry.strip())
        if not cm:
            c = _CONFIDENCE.match(entry)  # fasbench addition, on a line the release counts as broken
            if c:
                confidence = parse_confidence(c.group(1))
            continue  # the release's n_broken_lines
        path, rng, why = cm.group(1).strip(), cm.group(2).strip(), (cm.group(3) or "").strip()
        s, e = rng.split("-") if "-" in rng else (rng, rng)
        files.setdefault(path, []).append([int(s), int(e)])
        if why:
            reasons.append(f"{path}: {why.strip('()')}")
    return Report(files=files, explanation="\n".join(reasons), confidence=confidence)


def parse_final_answer_lenient(text: str) -> Report | None:
    """fasbench's looser reading (not the release's): the report in the last ``<final_answer>``
    block of ``text`` (an unclosed one runs to the end), accepting bullets, backticks, ``L`` numbers,
    several ranges a line and bare paths; None without a block."""
    blocks = _BLOCK.findall(text or "")
    if not blocks:
        return None
    files: dict[str, list[list[int]]] = {}
    reasons = []
    confidence = None
    for line in blocks[-1].splitlines():
        c = _CONFIDENCE.match(line)  # fasbench addition: an optional `confidence: 0.8` line (bon feature)
        if c:
            confidence = parse_confidence(c.group(1))
            continue
        m = _LINE.match(line)
        if not m or not _looks_like_path(m.group("path")):
            continue
        path = m.group("path").rstrip(".,;")
        ranges = files.setdefault(path, [])
        if m.group("ranges"):
            for part in m.group("ranges").split(","):
                nums = [int(x.strip().lstrip("L")) for x in re.split(r"[-–]", part)]
                s, e = (nums[0], nums[0]) if len(nums) == 1 else (nums[0], nums[1])
                s, e = max(1, min(s, e)), max(1, max(s, e))
                ranges.append([s, e])
        rest = line[m.end("ranges") if m.group("ranges") else m.end("path") :].strip(" `")
        if rest:
            reasons.append(f"{path}: {rest.strip('()')}")
    for p in files:  # duplicates dropped and sorted in one pass (a membership test per range was quadratic)
        files[p] = [list(r) for r in sorted({tuple(r) for r in files[p]})]
    return Report(files=files, explanation="\n".join(reasons), confidence=confidence)
