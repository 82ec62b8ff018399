"""A policy backed by any OpenAI-compatible chat completions endpoint (vLLM, SGLang, OpenRouter,
Relace, ``transformers serve``), with tool calling and parallel calls, timeouts and retries.

One ``POST {base_url}/chat/completions`` per turn with the conversation, the tool schemas and
``parallel_tool_calls``. ``tool_calls`` in the answer become ``ToolCall`` records (arguments parsed
from their JSON string; kept as the raw string when it is not JSON, which the harness answers with an
error observation). Each request goes through :mod:`fasbench.base.endpoint` with a total wall-time
deadline (a server that drips its reply is cut off): ``timeout_s`` until one reply has come back, then
sized from the slowest pace measured (:meth:`OpenAIPolicy.deadline`: a CPU server's replies take
minutes, and one busy machine is slower than another); giving up closes the connection (a server
that notices, as ``transformers serve`` does, stops generating), a body over ``max_reply_bytes`` is refused, and
the reply is parsed with bounded depth and checked against the chat-completions shape, an answer
longer than ``max_reply_chars`` refused; each failure is one named ``EndpointError`` line, which the
harness records as the episode's ``policy_error``. Connection errors, timeouts, 408/409/429 and 5xx are
retried with exponential backoff (honouring ``Retry-After``); other HTTP errors, a reply of the wrong
shape and a reply over the caps fail the turn at once.
A reply without structured ``tool_calls`` whose content holds calls written as text (a server
started without its tool-call parser, or one that does not know the model's format: Hermes/Qwen2.5
``<tool_call>`` JSON, Qwen3-Coder ``<function=…>`` XML, a fenced or bare JSON call) is read with
fasbench's one text parser, :func:`fasbench.models.parse_tool_calls` (``text_tool_calls=false``
turns this off); the turn's last request record then says so: ``calls_from_text`` (how many),
``text_format``, ``text_errors`` (malformed blocks, which stay in the text and give no call: a server
refuses a chat whose earlier call's arguments are not JSON). ``finish_reason`` is recorded too.
Every HTTP attempt is recorded (``Reply.requests`` → ``Turn.requests`` in the trace: attempt, HTTP
status or error, latency, prompt/completion tokens); when the last retry fails, ``EndpointError``
carries them too (the harness keeps them in ``trace.meta["failed_requests"]``). One policy object is
shared by the threads of a concurrent eval: its HTTP client (one connection pool, ``max_connections``)
is created once under a lock.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass, field

from fasbench.base.endpoint import (
    MAX_DEPTH,
    MAX_REPLY_BYTES,
    TOO_LARGE,
    EndpointError,
    bounded_client,
    check_chat_reply,
    depth_over,
    one_line,
    parse_json,
    post_json,
)
from fasbench.harness import Policy
from fasbench.models import call_format, parse_tool_calls
from fasbench.policies.sampling import sampling_for
from fasbench.records import Reply, ToolCall, parse_arguments

__all__ = ["EndpointError", "OpenAIPolicy", "reply_calls", "structured_calls"]

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def _arguments(raw):
    """Parsed arguments, or the raw string (which the harness reports) when they are not a JSON
    object or nest deeper than the reply may (``endpoint.MAX_DEPTH``)."""
    try:
        args = parse_arguments(raw)
    except RecursionError:
        return raw
    return raw if isinstance(args, dict) and depth_over(args, MAX_DEPTH) else args


def structured_calls(message: dict) -> list[ToolCall]:
    """ToolCalls of an OpenAI chat message (``tool_calls`` list; legacy ``function_call`` too)."""
    raw = list(message.get("tool_calls") or [])
    if not raw and message.get("function_call"):
        raw = [{"id": "call_0", "function": message["function_call"]}]
    out = []
    for i, c in enumerate(raw):
        fn = c.get("function") or {}
        args = _arguments(fn.get("arguments", {}))  # a raw string stays: the harness reports it
        out.append(ToolCall(id=str(c.get("id") or f"call_{i}"), name=str(fn.get("name", "")), arguments=args))
    return out


def reply_calls(
    message: dict, tools: list[dict] | None = None, id_prefix: str = "text_call", text_calls: bool = True
) -> tuple[str, list[ToolCall], dict]:
    """``(text, calls, note)`` of a chat message: its structured ``tool_calls``; else, with
    ``text_calls``, the calls its content writes as text (``models.parse_tool_calls``; the text is then
    the content without them) and a ``note`` for the request record (``calls_from_text``,
    ``text_format``, ``text_errors``); ``note`` is {} when the calls were structured or there were none."""
    text = message.get("content") or ""
    calls = structured_calls(message)
    if calls or not text_calls or not text:
        return text, calls, {}
    # a malformed block stays text: servers refuse a chat whose earlier call's arguments are not JSON
    # (transformers serve answers HTTP 500 to the next request)
    rest, found, errors = parse_tool_calls(text, tools, id_prefix=id_prefix, keep_malformed=True)
    if errors and not found:
        return text, [], {"calls_from_text": 0, "text_errors": [one_line(e, 200) for e in errors[:8]]}
    if not found:
        return text, [], {}
    return (
        rest,
        found,
        {
            "calls_from_text": len(found),
            "text_format": call_format(text, tools),
            "text_errors": [one_line(e, 200) for e in errors[:8]],
        },
    )


@dataclass
class OpenAIPolicy(Policy):
    """Parameters (settable from ``make_policy("openai:model=...,base_url=...")``):"""

    model: str = ""  # model name the endpoint serves
    base_url: str = ""  # e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL, else OpenAI's)
    api_key_env: str = "OPENAI_API_KEY"  # environment variable holding the key ("" = none)
    temperature: float | None = None  # None: the tool set's documented sampling (fasbench.policies.sampling), else 0
    top_p: float | None = None
    top_k: int | None = None  # sent as "top_k" when set (vLLM, SGLang accept it; Relace documents 100)
    max_tokens: int = 1024  # completion tokens per turn
    parallel_tool_calls: bool = True
    tool_choice: str = "auto"  # auto | required | none ("none" on the final turn is not forced)
    timeout_s: float = 60.0  # deadline of one request (its whole wall time) until a reply was measured; the least after
    timeout_scale: float = 4.0  # later deadlines: this x slowest s per completion token x max_tokens; 0 = timeout_s
    timeout_max_s: float = 1800.0  # the most a sized deadline may be (timeout_s if that is more)
    retries: int = 3  # extra attempts on retryable errors
    backoff_s: float = 1.0  # first backoff; doubles per retry, with jitter
    seed: int | None = None
    name: str = "openai"
    extra_body: dict = field(default_factory=dict)  # merged into every request body
    max_connections: int = 256  # HTTP connections kept to the endpoint (concurrent episodes share them)
    max_reply_bytes: int = MAX_REPLY_BYTES  # body of one reply; a longer one is refused (EndpointError)
    max_reply_chars: int = 0  # content + tool calls of one reply; 0 = 32 x max_tokens, at least 65536
    text_tool_calls: bool = True  # no structured tool_calls: read calls written in the content (<tool_call>, XML, JSON)
    backend = "thread"  # one object, one HTTP connection pool for every concurrent episode
    default_workers = (
        1  # fasbench eval without --workers: one episode at a time (transformers serve generates one request at a time)
    )

    @classmethod
    def spec_parameters(cls, family):
        return [(k, "(required)" if k == "model" else v, c) for k, v, c in super().spec_parameters(family)]

    def __post_init__(self):
        self.base_url = (self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        if not self.model:
            raise ValueError("openai policy needs model=NAME (the model the endpoint serves)")
        if self.timeout_s <= 0 or self.retries < 0 or self.max_reply_bytes < 1 or self.max_reply_chars < 0:
            raise ValueError(
                "openai policy: timeout_s and max_reply_bytes must be > 0, retries and max_reply_chars >= 0"
            )
        if self.timeout_scale < 0 or self.timeout_max_s <= 0:
            raise ValueError("openai policy: timeout_scale must be >= 0 and timeout_max_s > 0")
        self._client = None
        self._s_per_token = 0.0  # slowest seconds per completion token of any reply so far (0: none yet)
        self._lock = threading.Lock()

    def _http(self):
        with self._lock:
            if self._client is None:
                self._client = bounded_client(self.base_url, self.timeout_s, self.max_reply_bytes, self.max_connections)
            return self._client

    def deadline(self) -> float:
        """The total deadline of the next request: ``timeout_s`` until a reply has been measured; then
        ``timeout_scale`` x the slowest seconds per completion token seen so far x ``max_tokens`` (a
        longest reply at the slowest pace seen, with room for longer prompts and more load), never
        above ``timeout_max_s`` (unless ``timeout_s`` is more) nor below ``timeout_s``."""
        with self._lock:
            rate = self._s_per_token
        if not self.timeout_scale or not rate:
            return float(self.timeout_s)
        return float(max(self.timeout_s, min(self.timeout_max_s, self.timeout_scale * rate * self.max_tokens)))

    def _measured(self, latency_s: float, completion_tokens) -> None:
        """Note a complete reply's pace (its whole latency, prompt processing and queueing included,
        over its completion tokens; a reply without ``usage`` counts as ``max_tokens`` long)."""
        n = completion_tokens if isinstance(completion_tokens, int) and completion_tokens > 0 else self.max_tokens
        with self._lock:
            self._s_per_token = max(self._s_per_token, latency_s / max(1, n))

    @property
    def reply_chars(self) -> int:
        """The longest answer accepted (content and tool calls, in characters)."""
        return self.max_reply_chars or max(65536, 32 * self.max_tokens)

    def _headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def request_body(self, messages: list[dict], tools: list[dict]) -> dict:
        # top_k only when asked for: not an OpenAI chat field, strict servers refuse it (fasbench.policies.sampling)
        temperature, top_p, top_k = sampling_for(tools, self.temperature, self.top_p, self.top_k or 0)
        body: dict = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if tools:
            body["tools"] = tools
            body["tool_choice"] = self.tool_choice
            body["parallel_tool_calls"] = self.parallel_tool_calls
        if top_p is not None:
            body["top_p"] = top_p
        if top_k is not None:
            body["top_k"] = top_k
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        return body

    def complete(self, body: dict, log: list[dict] | None = None) -> dict:
        """POST the body, retrying what can be retried; returns the reply, checked
        (``endpoint.check_chat_reply``). Each attempt is appended to ``log`` (attempt, status, error,
        latency_s, tokens). Every failure is an ``EndpointError`` of one line."""
        # local import: httpx is heavy to import; only remote policies need it
        import httpx

        url = f"{self.base_url}/chat/completions"
        log = [] if log is None else log
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * (2**attempt) * (0.5 + random.random() / 2)
            deadline = self.deadline()
            rec: dict = {"attempt": attempt, "started_at": time.time(), "deadline_s": round(deadline, 3)}
            log.append(rec)
            t0 = time.perf_counter()
            try:
                # giving up closes the connection: transformers serve then stops generating (docs/own_model.md)
                status, headers, data = post_json(self._http(), url, body, self._headers(), deadline)
            except httpx.HTTPError as e:
                rec["latency_s"] = round(time.perf_counter() - t0, 6)
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                if isinstance(e, httpx.TimeoutException):
                    sized = "" if deadline == self.timeout_s else f"{deadline:.1f} s, sized from the replies so far; "
                    last = f"no complete reply within the total deadline ({sized}timeout_s={float(self.timeout_s)}): {last}"
                rec["status"], rec["error"] = None, one_line(last, 200)
                if str(e).startswith(TOO_LARGE) or isinstance(e, httpx.DecodingError):
                    raise EndpointError(f"{url}: {last}", log) from None  # the same reply again will not fit
            else:
                rec["latency_s"] = round(time.perf_counter() - t0, 6)
                rec["status"] = status
                if status == 200:
                    try:
                        reply = check_chat_reply(
                            parse_json(data, content_type=headers.get("content-type", "")), self.reply_chars
                        )
                    except EndpointError as e:
                        rec["error"] = one_line(str(e), 200)
                        raise EndpointError(f"{url}: {e}", log) from None
                    usage = reply.get("usage") or {}
                    rec["prompt_tokens"], rec["completion_tokens"] = (
                        usage.get("prompt_tokens"),
                        usage.get("completion_tokens"),
                    )
                    self._measured(rec["latency_s"], rec["completion_tokens"])
                    return reply
                last = f"HTTP {status}: {one_line(data.decode('utf-8', 'replace'), 300)}"
                rec["error"] = last[:200]
                if status not in RETRY_STATUS:
                    raise EndpointError(f"{url}: {last}", log)
                ra = headers.get("retry-after")
                if ra and ra.replace(".", "", 1).isdigit():
                    wait = min(60.0, float(ra))
            if attempt < self.retries:
                time.sleep(wait)
        raise EndpointError(f"{url}: giving up after {self.retries + 1} attempts; last error: {last}", log)

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        log: list[dict] = []
        data = self.complete(self.request_body(messages, tools), log)
        choice = data["choices"][0]
        msg = choice["message"]
        usage = data.get("usage") or {}
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        text, calls, note = reply_calls(msg, tools, f"text_{turn}", self.text_tool_calls)
        log[-1].update(note)
        if choice.get("finish_reason") is not None:
            log[-1]["finish_reason"] = one_line(str(choice["finish_reason"]), 40)
        return Reply(
            text=text,
            calls=calls,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            requests=log,
        )
