"""A policy backed by any OpenAI-compatible chat completions endpoint (vLLM, SGLang, OpenRouter,
Relace, ``transformers serve``), with tool calling and parallel calls, timeouts and retries.

One ``POST {base_url}/chat/completions`` per turn with the conversation, the tool schemas and
``parallel_tool_calls``. ``tool_calls`` in the answer become ``ToolCall`` records (arguments parsed
from their JSON string; kept as the raw string when it is not JSON, which the harness answers with an
error observation). Connection errors, timeouts, 408/409/429 and 5xx are retried with exponential
backoff (honouring ``Retry-After``); other HTTP errors fail the turn with the server's message.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field

from fasbench.records import Reply, ToolCall, parse_arguments

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    """The endpoint answered with an error that retrying will not fix (or retries ran out)."""


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

    def __post_init__(self):
        self.base_url = (self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        if not self.model:
            raise ValueError("openai policy needs model=NAME (the model the endpoint serves)")
        if self.timeout_s <= 0 or self.retries < 0:
            raise ValueError("openai policy: timeout_s must be > 0 and retries >= 0")
        self._client = None

    def _http(self):
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)))
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

    def complete(self, body: dict) -> dict:
        """POST the body, retrying what can be retried; returns the response JSON."""
        import httpx

        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * (2 ** attempt) * (0.5 + random.random() / 2)
            try:
                r = self._http().post(url, json=body, headers=self._headers())
            except (httpx.TimeoutException, httpx.TransportError) as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if r.status_code == 200:
                    try:
                        return r.json()
                    except ValueError:
                        raise EndpointError(f"{url} returned invalid JSON: {r.text[:300]}") from None
                last = f"HTTP {r.status_code}: {r.text[:500]}"
                if r.status_code not in RETRY_STATUS:
                    raise EndpointError(f"{url}: {last}")
                ra = r.headers.get("retry-after")
                if ra and ra.replace(".", "", 1).isdigit():
                    wait = min(60.0, float(ra))
            if attempt < self.retries:
                time.sleep(wait)
        raise EndpointError(f"{url}: giving up after {self.retries + 1} attempts; last error: {last}")

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        data = self.complete(self.request_body(messages, tools))
        choices = data.get("choices") or []
        if not choices:
            raise EndpointError(f"endpoint returned no choices: {json.dumps(data)[:300]}")
        msg = choices[0].get("message") or {}
        usage = data.get("usage") or {}
        return Reply(text=str(msg.get("content") or ""), calls=parse_tool_calls(msg),
                     prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"))
