"""FastContext's LLM judge, as released: an OpenAI-compatible chat model scores, 0-10, how well the
*contents* of the cited lines answer the query; the reward uses ``score × 0.1``.

Source: GitHub ``T0mSIlver/fastcontext``, ``training/fastcontext-rl/agent_judge.py`` @5fb8c1d
(``JudgeAgent.judge``, ``call_llm``, ``parse_judge_result``), ``training/fastcontext-rl/utils.py``
@5fb8c1d (``read_citations_content``) and ``generate_with_fastcontext.py`` @716fe4b (the query is the
episode's last prompt message, ``<query>…</query>``). As released:

- messages: ``system`` = the judge prompt, ``user`` = ``f"{query}\\n\\n<final_answer>\\n{contents}\\n</final_answer>"``;
  one chat completion with ``max_completion_tokens=1024`` (no other sampling setting);
- contents: per citation, in answer order, ```` ```{path}:{range}\\n{lines}``` ```` + newline (the range as
  written), at most
  500 lines of at most 500 characters each (the cut drops a long line's newline, as released);
  ``Error: the file does not exist.`` for a missing file (here also for a path outside the root or
  a special file: every path is read through :mod:`fasbench.base.contain`, see :func:`citation_contents`);
- parsing: the ```` ```json ```` block if there is one, else the whole reply, as JSON; ``int(score) × 0.1``;
  anything unparsable (or a failed call) scores 0. Deviation: the score is clamped to the prompt's
  published range 0-10 (``SCORE_RANGE``, ``agent_judge.md`` @0dc077f: "Scoring Criteria (0-10)",
  ``"score": <integer 0-10>``); the release does not clamp, so a judge reply of 10^6 gave a reward of
  200,002 and -50 one of -8.

The judge prompt: ``agent_judge.py`` reads ``agent_judge.md`` next to it, ``training/fastcontext-rl/
agent_judge.md`` @0dc077f (byte-identical to the sibling recipe's ``training/swefc-rl/agent_judge.md``
@23ca8c6), used here verbatim (see ``fasbench/tools/README.md``).

fasbench additions: a spec string like the policies' (``openai:model=NAME,base_url=URL[,workers=N,
cache=DIR,...]``; the HTTP client, retries and timeouts are :class:`~fasbench.policies.openai_compat.
OpenAIPolicy`'s), concurrent calls (``score_many``), an on-disk cache keyed by the whole request, and a
reason for every score (a failed call scores 0 as released, but says so; a ``strict`` judge, the one
``fasbench score --judge`` uses, raises the call's ``EndpointError`` instead, so that the command ends
with one ``error:`` line and exit status 2 rather than a 0 that reads like a verdict). The client bounds
every call (:mod:`fasbench.base.endpoint`: total deadline ``timeout_s``, body cap, reply shape checked).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from fasbench.base import contain
from fasbench.base.paths import cache_dir
from fasbench.base.specs import build, parse_spec
from fasbench.policies.openai_compat import EndpointError, OpenAIPolicy
from fasbench.records.fastcontext_answer import RELEASED_BLOCK, RELEASED_LINE, WORK_DIR
from fasbench.stats.metrics import normalize_path

MAX_LINES = 500  # read_citations_content: lines per citation
MAX_LINE_LENGTH = 500  # read_citations_content: characters per line
MAX_COMPLETION_TOKENS = 1024  # call_llm
# agent_judge.md @0dc077f (training/fastcontext-rl/, identical to training/swefc-rl/agent_judge.md @23ca8c6):
# "## Scoring Criteria (0-10)" and the output format's `"score": <integer 0-10>`
SCORE_RANGE = (0, 10)

JUDGE_PROMPT = """# LLM-as-Judge: Explore Subagent Evaluation

You are an expert Codebase Exploration Evaluator. Your task is to evaluate the quality of the findings returned by an "Explore Subagent" based on a specific Main Agent query.

The Explore Subagent's job is to search the codebase and extract the exact file contents needed to answer the query. 

## Evaluation Philosophy: "Information Density & Signal-to-Noise Ratio"
The ultimate goal of the Subagent is to help the Main Agent reason efficiently. Therefore, a perfect exploration result must be both **accurate** and **concise**. 
- Providing the correct file is required.
- **However, burying the correct file inside massive amounts of irrelevant files or lines (context bloat) is highly penalized.** The Main Agent will get distracted by the noise.

## Input Data
You will be provided with:
1. <query>: What the main agent requested to find.
2. <final_answer>: The file path and context the subagent extracted.

## Scoring Criteria (0-10)
Evaluate the `<final_answer>` based on the following rubric:

- **[Score 10] Perfect Precision & Complete Sufficiency**: The subagent found exactly the correct files/lines needed to satisfy the query, and **nothing else**. The signal-to-noise ratio is 100%.
- **[Score 8-9] Excellent, but Minor Noise**: The necessary information is present. The subagent included a few extra lines or a small related function that wasn't strictly asked for, but it doesn't cause significant distraction.
- **[Score 5-7] Found the target, but High Noise (Bloated)**: The subagent found the requested information, but used a "scattergun" approach. It dumped entire large files or several irrelevant files alongside the correct one. The information density is low, forcing the Main Agent to read through a lot of garbage.
- **[Score 2-4] Partial/Tangential Information**: The subagent missed the core file requested, but found something tangentially related. 
- **[Score 0-1] Total Failure or Pure Noise**: The subagent failed to find the relevant file, or returned completely irrelevant files.

## Output Format

You MUST respond in the following JSON format and nothing else:

```json
{
  "justification": "<1-2 sentence overall justification for the score>",
  "score": <integer 0-10>
}
```"""


def query_message(query: str) -> str:
    """The episode's query as the released RL data words it (``rl_data_preprocess.py``). ``query`` is
    the query the explorer was given (``reward.episode_query``: FastContext's generated query,
    ``task.meta["fc_query"]``, when the task has one; else the problem statement)."""
    return f"<query>{query}</query>"


def _range_text(s: int, e: int) -> str:
    return str(s) if s == e else f"{s}-{e}"


MISSING = "Error: the file does not exist.\n"  # read_citations_content, as released
UNREADABLE = "Error: failed to read the file.\n"  # read_citations_content, as released
MAX_CONTENT_CHARS = 4_000_000  # all citations' contents together (~1M tokens, past any judge's window)


def _cited_lines(root: str, rel: str, s: int, e: int, budget: list[int]) -> str:
    """Lines ``s..e`` of one cited file as ``read_citations_content`` gives them (text mode: universal
    newlines, strict UTF-8), read through :mod:`fasbench.base.contain` and bounded: at most ``MAX_LINES``
    kept lines of ``MAX_LINE_LENGTH`` characters, the rest of a long line read past in chunks, at most
    ``budget[0]`` bytes read (shared by the whole answer)."""
    with contain.open_file(root, rel) as raw:
        limited = _Limited(raw, budget)
        f = io.TextIOWrapper(io.BufferedReader(limited), encoding="utf-8")
        out, n = [], 0
        last = s - 1 + MAX_LINES if e == -1 else min(e, s - 1 + MAX_LINES)
        while n < last:
            ln = f.readline(MAX_LINE_LENGTH)
            if not ln:
                break
            tail = ln
            while not tail.endswith("\n") and (tail := f.readline(1 << 16)):
                pass  # the rest of a long line: read past, not kept
            n += 1
            if n >= s:
                out.append(ln)
        if limited.exhausted:
            raise contain.Unreadable(rel, "the answer's read budget is spent")
        return "".join(out)


class _Limited(io.RawIOBase):
    """A raw reader that stops (``exhausted``) once the shared byte budget is spent."""

    def __init__(self, f, budget: list[int]):
        self.f, self.budget, self.exhausted = f, budget, False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.budget[0] <= 0:
            self.exhausted = True
            return 0
        data = self.f.read(min(len(b), self.budget[0], 1 << 20))
        self.budget[0] -= len(data)
        b[: len(data)] = data
        return len(data)


def _released_rel(path: str) -> str:
    """The workspace-relative path the release's judge can open for a cited ``path``: it opens the
    path as written (``read_citations_content`` without ``workspace``), so only a path under the
    workspace path the prompt showed (``/repo/``) reaches a workspace file; a relative path is opened
    from the trainer's directory and reads as missing, as does any other path (fasbench never opens
    a path outside the workspace)."""
    pre = WORK_DIR.rstrip("/") + "/"
    if not path.startswith(pre):
        return ""
    rel = path[len(pre) :]
    parts = rel.split("/")
    return "" if ".." in parts or not rel else rel


#: One citation as the release lists it: (path, line range as written, start, end).
Citation = tuple[str, str, int, int]


def released_citations(text: str) -> list[Citation] | None:
    """The citations of ``text``'s answer as the release lists them (``utils.py`` ``parse_final_answer``
    @5fb8c1d, its ``citations``; the regular expressions of ``tools.fastcontext.parse_final_answer``):
    path and line range as written, in answer order (the order ``read_citations_content`` reads them
    in); None without a closed block."""
    m = RELEASED_BLOCK.search(text or "")
    if m is None:
        return None
    out = []
    for entry in m.group(1).strip().splitlines():
        cm = RELEASED_LINE.match(entry.strip())  # a blank line matches nothing
        if cm:
            rng = cm.group(2).strip()
            s, e = rng.split("-") if "-" in rng else (rng, rng)
            out.append((cm.group(1).strip(), rng, int(s), int(e)))
    return out


def citation_list(files: Mapping[str, Sequence[Sequence[int]]] | Sequence[Citation]) -> list[Citation]:
    """``files`` as a list of citations: a list (the answer's own, ``fastcontext.released_citations``)
    as given; a path -> ranges mapping (a report without its answer text) path by path, each range
    shown as ``S`` or ``S-E``."""
    if isinstance(files, Mapping):
        return [(p, _range_text(s, e), s, e) for p, rs in files.items() for s, e in rs]
    return list(files)


def citation_contents(
    files: Mapping[str, Sequence[Sequence[int]]] | Sequence[Citation], root: str | Path | None, released: bool = False
) -> str:
    """The cited lines, as ``read_citations_content`` lays them out. ``files``: the answer's citations
    (:func:`released_citations`: in answer order, each range as written, as released) or a
    path -> ranges mapping (:func:`citation_list`). ``released``: paths are opened as
    the release opens them (:func:`_released_rel`: only ``/repo/…`` paths reach the workspace ``root``);
    otherwise they are resolved against ``root`` (any ``/repo/`` or absolute-root spelling, the
    ``fastcontext-lenient`` reward). An end of ``-1`` reads to the end of the file. Files cited
    without a line range are not citations in the release and are skipped. Deviation, only for a
    mapping: its citations are grouped by path and a range is shown as ``S`` or ``S-E`` (the release
    keeps answer order and shows a range as written, so ``4-4`` there is ``4`` here); the rewards pass
    the answer's own citations where the episode holds its answer text (``reward.judge_citations``).

    Every path is read through :mod:`fasbench.base.contain` (the tools' rule), which the release does not
    have (``os.path.join(workspace, path)``: an absolute path or ``..`` reads any file). A path that
    leaves the root (``..``, absolute, a symlink out) or is not a regular file (a FIFO, a device, a
    directory) gets the release's ``Error: the file does not exist.``, as a file missing from the
    repository does (the judge sees the repository only, and one text for both says nothing about
    what exists outside it); a file that fails to read, is not UTF-8, or whose bytes pass the
    answer's read budget (``contain.MAX_READ_BYTES`` for all citations together) gets
    ``Error: failed to read the file.``; once ``MAX_CONTENT_CHARS`` are written, every further
    citation gets that text too. Without a ``root`` nothing is read (every citation "does not exist")."""
    out, used, budget = [], 0, [contain.MAX_READ_BYTES]
    for path, rng, s, e in citation_list(files):
        rel = _released_rel(path) if released else normalize_path(path, str(root) if root else None)
        if not rel or not root:
            content = MISSING
        elif used > MAX_CONTENT_CHARS:
            content = UNREADABLE
        else:
            try:
                if not all(isinstance(b, int) for b in (s, e)):  # 1e999, NaN, null of a report file
                    raise contain.PathRefused(rel, "a line range that is not two integers")
                content = _cited_lines(str(root), rel, s, e, budget)
            except (contain.OutsideRoot, contain.NoSuchFile, contain.NotARegularFile):
                content = MISSING
            except (contain.PathRefused, OSError, UnicodeDecodeError, ValueError):
                content = UNREADABLE
        block = f"```{path}:{rng}\n{content}```\n"
        used += len(block)
        out.append(block)
    return "".join(out)


def judge_messages(query: str, contents: str) -> list[dict]:
    """``JudgeAgent.judge``'s messages; ``query`` is the episode's query message (``<query>…</query>``)."""
    return [
        {"role": "system", "content": JUDGE_PROMPT},
        {"role": "user", "content": f"{query}\n\n<final_answer>\n{contents}\n</final_answer>"},
    ]


def parse_judge_result(text: str) -> tuple[float, str]:
    """``parse_judge_result`` as released: (``int(score) × 0.1``, "") or (0.0, why it scored 0), with
    one deviation: the score is clamped to the judge prompt's published range ``SCORE_RANGE`` (0-10),
    so a reply of ``{"score": 1000000}`` gives quality 1.0, not 100000 (a reward of 200,002), and
    ``-50`` gives 0, not -5; the reason then says the score was clamped. The release does not clamp."""
    if "```json" in text:
        m = re.search(r"```json(.*?)```", text, re.DOTALL)
        if m:
            text = m.group(1).strip()
    try:
        score = int(json.loads(text).get("score", 0))
    except Exception as e:  # as released: anything unparsable scores 0
        return 0.0, f"judge reply not parsable ({type(e).__name__}: {e})"
    lo, hi = SCORE_RANGE
    if lo <= score <= hi:
        return score * 0.1, ""
    clamped = min(max(score, lo), hi)
    return clamped * 0.1, f"judge score {_short(score)} outside {lo}-{hi}, clamped to {clamped}"


def _short(n: int) -> str:
    """An integer for a reason line, at most 24 characters (a reply may hold a 4,000-digit score)."""
    s = str(n) if abs(n) < 10**20 else f"{'-' if n < 0 else ''}~1e{len(str(abs(n))) - 1}"
    return s[:24]


@dataclass
class Verdict:
    quality: float  # judge score × 0.1, in [0, 1]
    reason: str  # "" for a parsed score, else why it is 0
    raw: str = ""  # the judge's reply
    cached: bool = False


class Judge:
    """An OpenAI-compatible judge; build one with :func:`make_judge`."""

    def __init__(
        self,
        client: OpenAIPolicy,
        workers: int = 8,
        cache: str | Path | None = None,
        spec: str = "",
        strict: bool = False,
    ):
        if workers < 1:
            raise ValueError("judge: workers must be >= 1")
        self.client = client
        self.strict = strict  # a failed call raises EndpointError instead of scoring 0 (one report, `fasbench score`)
        self.workers = workers
        self.cache = Path(cache) if cache else cache_dir("judge")
        self.spec = spec or f"openai:model={client.model},base_url={client.base_url}"
        self._memo: dict[str, Verdict] = {}  # this process's verdicts, failed calls included

    def _key(self, body: dict) -> str:
        blob = json.dumps({"base_url": self.client.base_url, "body": body}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> dict | None:
        f = self.cache / key[:2] / f"{key}.json"
        try:
            return json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _store(self, key: str, reply: str) -> None:
        d = self.cache / key[:2]
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"reply": reply, "spec": self.spec}), encoding="utf-8")
        os.replace(tmp, d / f"{key}.json")  # atomic: concurrent writers never leave half a file

    def judge(self, query: str, contents: str) -> Verdict:
        """One verdict for the query message and the cited contents (cached)."""
        body = {
            "model": self.client.model,
            "messages": judge_messages(query, contents),
            "max_completion_tokens": MAX_COMPLETION_TOKENS,
            "stream": False,
        }
        key = self._key(body)
        if key in self._memo:
            return self._memo[key]
        v = self._judge(key, body)
        self._memo[key] = v
        return v

    def _judge(self, key: str, body: dict) -> Verdict:
        hit = self._cached(key)
        if hit is not None:
            q, why = parse_judge_result(hit["reply"])
            return Verdict(q, why, hit["reply"], cached=True)
        try:  # the reply is checked by the client (endpoint.check_chat_reply): content is a string or null
            reply = (self.client.complete(body)["choices"][0]["message"].get("content") or "").strip()
        except EndpointError as e:  # as released, a failed call scores 0; it is not cached
            if self.strict:
                raise EndpointError(f"judge call failed: {e}", e.requests) from None
            return Verdict(0.0, f"judge call failed: EndpointError: {e}")
        self._store(key, reply)
        q, why = parse_judge_result(reply)
        return Verdict(q, why, reply)

    def score_many(self, items: Sequence[tuple[str, str]], progress: bool = True) -> list[Verdict]:
        """Verdicts for many (query, contents) pairs, ``workers`` calls at a time, in order. Later
        :meth:`judge` calls with the same pair reuse them (evaluation and RL prefetch a batch this way)."""
        items = list(items)
        with tqdm(total=len(items), desc="judge", unit="call", disable=len(items) < 2 or not progress) as bar:

            def one(qc):
                v = self.judge(*qc)
                bar.update()
                return v

            if len(items) <= 1 or self.workers == 1:
                return [one(qc) for qc in items]
            with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
                return list(pool.map(one, items))


def make_judge(spec: str, strict: bool = False) -> Judge:
    """A judge from ``openai:model=NAME,base_url=URL[,api_key_env=…,timeout_s=…,retries=…,workers=N,
    cache=DIR]`` (the spec form of the ``openai`` policy); a clear ValueError on a bad spec.
    ``strict``: a failed call raises ``EndpointError`` instead of scoring 0."""
    name, kw = parse_spec(spec)
    if name != "openai":
        raise ValueError(f"judge spec {spec!r}: only 'openai:model=NAME,base_url=URL' judges exist, got {name!r}")
    workers = kw.pop("workers", "8")
    cache = kw.pop("cache", None)
    try:
        workers = int(workers)
    except ValueError:
        raise ValueError(f"judge spec {spec!r}: workers={workers!r} is not an integer") from None
    if "model" not in kw:
        raise ValueError(f"judge spec {spec!r} needs model=NAME (the model the endpoint serves)")
    client = build(OpenAIPolicy, "openai judge", kw, name=spec)
    return Judge(client, workers=workers, cache=cache, spec=spec, strict=strict)
