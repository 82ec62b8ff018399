"""A policy backed by any OpenAI-compatible chat completions endpoint (vLLM, SGLang, OpenRouter,
Relace, ``transformers serve``), with tool calling and parallel calls, timeouts and retries.

One ``POST {base_url}/chat/completions`` per turn with the conversation, the tool schemas and
``parallel_tool_calls``. ``tool_calls`` in the answer become ``ToolCall`` records (arguments parsed
from their JSON string; kept as the raw string when it is not JSON, which the harness answers with an
error observation). Connection errors, timeouts, 408/409/429 and 5xx are retried with exponential
backoff (honouring ``Retry-After``); other HTTP errors fail the turn with the server's message.
Every HTTP attempt is recorded (``Reply.requests`` → ``Turn.requests`` in the trace: attempt, HTTP
status or error, latency, prompt/completion tokens); when the last retry fails, ``EndpointError``
carries them too (the harness keeps them in ``trace.meta["failed_requests"]``). One policy object is
shared by the threads of a concurrent eval: its HTTP client (one connection pool, ``max_connections``)
is created once under a lock.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field

from fasbench.records import Reply, ToolCall, parse_arguments

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    """The endpoint answered with an error that retrying will not fix (or retries ran out).
    ``requests`` holds the record of every attempt."""

    def __init__(self, message: str, requests: list[dict] | None = None):
        super().__init__(message)
        self.requests = list(requests or [])


def parse_tool_calls(message: dict) -> list[ToolCall]:
    """ToolCalls of an OpenAI chat message (``tool_calls`` list; legacy ``function_call`` too)."""
    raw = list(message.get("tool_calls") or [])
    if not raw and message.get("function_call"):
        raw = [{"id": "call_0", "function": message["function_call"]}]
    out = []
    for i, c in enumerate(raw):
        fn = c.get("function") or {}
        args = parse_arguments(fn.get("arguments", {}))  # a raw string stays: the harness reports it
        out.append(ToolCall(id=str(c.get("id") or f"call_{i}"), name=str(fn.get("name", "")), arguments=args))
    return out


@dataclass
class OpenAIPolicy:
    """Parameters (settable from ``make_policy("openai:model=...,base_url=...")``):"""

    model: str = ""  # model name the endpoint serves
    base_url: str = ""  # e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL, else OpenAI's)
    api_key_env: str = "OPENAI_API_KEY"  # environment variable holding the key ("" = none)
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int = 1024  # completion tokens per turn
    parallel_tool_calls: bool = True
    tool_choice: str = "auto"  # auto | required | none ("none" on the final turn is not forced)
    timeout_s: float = 60.0  # per request
    retries: int = 3  # extra attempts on retryable errors
    backoff_s: float = 1.0  # first backoff; doubles per retry, with jitter
    seed: int | None = None
    name: str = "openai"
    extra_body: dict = field(default_factory=dict)  # merged into every request body
    max_connections: int = 256  # HTTP connections kept to the endpoint (concurrent episodes share them)

    def __post_init__(self):
        self.base_url = (self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        if not self.model:
            raise ValueError("openai policy needs model=NAME (the model the endpoint serves)")
        if self.timeout_s <= 0 or self.retries < 0:
            raise ValueError("openai policy: timeout_s must be > 0 and retries >= 0")
        self._client = None
        self._lock = threading.Lock()

    def _http(self):
        # local import: httpx costs ~0.7 s at start-up (python -X importtime); only remote policies need it
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
                    limits=httpx.Limits(max_connections=self.max_connections,
                                        max_keepalive_connections=self.max_connections))
            return self._client

    def _headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def request_body(self, messages: list[dict], tools: list[dict]) -> dict:
        body: dict = {"model": self.model, "messages": messages, "temperature": self.temperature,
                      "max_tokens": self.max_tokens, "stream": False}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = self.tool_choice
            body["parallel_tool_calls"] = self.parallel_tool_calls
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        return body

    def complete(self, body: dict, log: list[dict] | None = None) -> dict:
        """POST the body, retrying what can be retried; returns the response JSON. Each attempt is
        appended to ``log`` (attempt, status, error, latency_s, tokens)."""
        # local import: httpx costs ~0.7 s at start-up (python -X importtime); only remote policies need it
        import httpx

        url = f"{self.base_url}/chat/completions"
        log = [] if log is None else log
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * (2 ** attempt) * (0.5 + random.random() / 2)
            rec: dict = {"attempt": attempt, "started_at": time.time()}
            log.append(rec)
            t0 = time.perf_counter()
            try:
                r = self._http().post(url, json=body, headers=self._headers())
            except (httpx.TimeoutException, httpx.TransportError) as e:
                rec["latency_s"] = round(time.perf_counter() - t0, 6)
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                if isinstance(e, httpx.TimeoutException):
                    last += f" (timeout_s={self.timeout_s})"
                rec["status"], rec["error"] = None, last
            else:
                rec["latency_s"] = round(time.perf_counter() - t0, 6)
                rec["status"] = r.status_code
                if r.status_code == 200:
                    try:
                        data = r.json()
                    except ValueError:
                        rec["error"] = "invalid JSON"
                        raise EndpointError(f"{url} returned invalid JSON: {r.text[:300]}", log) from None
                    usage = (data.get("usage") or {}) if isinstance(data, dict) else {}
                    rec["prompt_tokens"], rec["completion_tokens"] = usage.get("prompt_tokens"), usage.get("completion_tokens")
                    return data
                last = f"HTTP {r.status_code}: {r.text[:500]}"
                rec["error"] = last[:200]
                if r.status_code not in RETRY_STATUS:
                    raise EndpointError(f"{url}: {last}", log)
                ra = r.headers.get("retry-after")
                if ra and ra.replace(".", "", 1).isdigit():
                    wait = min(60.0, float(ra))
            if attempt < self.retries:
                time.sleep(wait)
        raise EndpointError(f"{url}: giving up after {self.retries + 1} attempts; last error: {last}", log)

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        log: list[dict] = []
        data = self.complete(self.request_body(messages, tools), log)
        choices = data.get("choices") or []
        if not choices:
            raise EndpointError(f"endpoint returned no choices: {json.dumps(data)[:300]}", log)
        msg = choices[0].get("message") or {}
        usage = data.get("usage") or {}
        return Reply(text=str(msg.get("content") or ""), calls=parse_tool_calls(msg),
                     prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                     requests=log)
