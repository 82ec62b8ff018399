"""Bounded HTTP to model endpoints: every call under a total deadline and a body size cap, the reply
parsed with bounded depth and checked against the chat-completions shape, every failure one named line.

- :func:`bounded_client` gives an ``httpx.Client`` whose transport enforces, on every request, a
  **total wall deadline** (the request's read timeout is taken as the whole call's budget: every
  socket connect, write and read gets only the time left, so a server that drips a byte a second
  is cut off at the deadline, in the headers as in the body), a **body size cap** (the body is
  counted as it streams in and refused past the cap; ``Accept-Encoding: identity`` is sent and a
  compressed reply refused, so what is counted is what is kept), for the policy and the judge
  (:func:`post_json`) and for LiteLLM's OpenAI client in the e2e main agent (``litellm.client_session``).
- :func:`parse_json` refuses non-JSON and JSON nested deeper than ``MAX_DEPTH`` (no RecursionError).
- :func:`check_chat_reply` checks ``choices[0].message`` (``content`` a string or null,
  ``tool_calls`` a list of ``{id, function: {name, arguments}}`` with string name and arguments,
  ``usage`` integers) and the answer's length: a reply longer than ``max_chars`` is refused, not cut
  (a cut answer would be an answer the model never gave, and a cut report would be scored).

Every failure is an :class:`EndpointError` with one line naming it, e.g.
``reply: choices[0].message.tool_calls[1].function.arguments is a dict, expected a string``.
Proxies named in the environment (``HTTPS_PROXY``, ``NO_PROXY``) are honoured through the same transport.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from urllib.parse import urlsplit

MAX_REPLY_BYTES = 16 << 20  # body cap of one reply (a 1024-token reply is a few KB)
MAX_DEPTH = 64  # JSON nesting accepted in a reply (chat replies nest 6 deep)
ERROR_BODY_BYTES = 4096  # bytes of an error status's body read for its message
TOO_LARGE = "reply body over the limit of"  # how the body cap's httpx.ReadError begins


class EndpointError(OSError):
    """The endpoint failed in a way retrying will not fix (or retries ran out); one line. An
    ``OSError`` (a failure of another machine, like ``ConnectionError``): the ``fasbench`` command
    prints it as one ``error:`` line with exit status 2. ``requests`` holds the record of every attempt."""

    def __init__(self, message: str, requests: list[dict] | None = None):
        super().__init__(" ".join(str(message).split()))
        self.requests = list(requests or [])


def one_line(text: str, n: int = 300) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 3] + "..."


# ---------------------------------------------------------------- the deadline, per thread

_local = threading.local()


def _set_deadline(value):
    prev = getattr(_local, "deadline", None)
    _local.deadline = value
    return prev


def _bound(timeout: float | None, exc: type) -> float | None:
    """The socket timeout of one network operation: ``timeout``, or less when the request's total
    deadline is nearer; past it, ``exc`` (an httpcore timeout, mapped to httpx's by the transport)."""
    d = getattr(_local, "deadline", None)
    if d is None:
        return timeout
    left = d[0] - time.monotonic()
    if left <= 0:
        raise exc(f"total deadline of {d[1]:g} s passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """An httpcore network stream whose every read and write gets at most the time left."""

    def __init__(self, inner):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # local import: httpcore comes with httpx (heavy); only remote calls need it
        import httpcore

        return self._inner.read(max_bytes, _bound(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # local import: httpcore comes with httpx (heavy); only remote calls need it
        import httpcore

        self._inner.write(buffer, _bound(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        # local import: httpcore comes with httpx (heavy); only remote calls need it
        import httpcore

        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _bound(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _Backend:
    """httpcore's network backend, its streams bounded by the deadline (:class:`_Stream`)."""

    def __init__(self, inner):
        self._inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        # local import: httpcore comes with httpx (heavy); only remote calls need it
        import httpcore

        return _Stream(
            self._inner.connect_tcp(
                host,
                port,
                _bound(timeout, httpcore.ConnectTimeout),
                local_address=local_address,
                socket_options=socket_options,
            )
        )

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        # local import: httpcore comes with httpx (heavy); only remote calls need it
        import httpcore

        return _Stream(
            self._inner.connect_unix_socket(
                path, _bound(timeout, httpcore.ConnectTimeout), socket_options=socket_options
            )
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _proxy_for(base_url: str) -> str | None:
    """The environment's proxy for ``base_url`` (``HTTPS_PROXY``/``HTTP_PROXY``, ``NO_PROXY``)."""
    u = urlsplit(base_url)
    proxy = urllib.request.getproxies().get(u.scheme)
    if not proxy or not u.hostname or urllib.request.proxy_bypass(u.hostname):
        return None
    return proxy


def bounded_client(
    base_url: str, timeout_s: float, max_bytes: int = MAX_REPLY_BYTES, max_connections: int = 16, gateway_chars: int = 0
):
    """An ``httpx.Client`` for ``base_url`` whose every request has the total deadline of its read
    timeout (``timeout_s`` unless a caller passes another) and refuses bodies over ``max_bytes``.

    ``gateway_chars`` > 0 makes the client a checking gateway for a caller that cannot be changed (the
    OpenAI SDK inside LiteLLM, which turns a transport error into a bare "Connection error."): the
    body is read whole in the transport (within the cap), a chat-completions reply is checked
    (:func:`check_chat_reply`, ``gateway_chars`` characters), and every failure comes back as a
    response of its own, ``504`` for the deadline and ``502`` for the rest, whose JSON error message
    is the one named line (``fasbench.base.endpoint: ...``)."""
    # local import: httpx is heavy to import; only remote calls need it
    import httpx

    class Body(httpx.SyncByteStream):
        def __init__(self, inner, deadline):
            self._inner, self._deadline = inner, deadline

        def __iter__(self):
            n, it = 0, iter(self._inner)
            while True:
                prev = _set_deadline(self._deadline)
                try:
                    chunk = next(it, None)
                finally:
                    _set_deadline(prev)
                if chunk is None:
                    return
                n += len(chunk)
                if n > max_bytes:
                    raise httpx.ReadError(f"{TOO_LARGE} {max_bytes} bytes")
                yield chunk

        def close(self) -> None:
            self._inner.close()

    class Transport(httpx.BaseTransport):
        def __init__(self):
            self._inner = httpx.HTTPTransport(
                proxy=_proxy_for(base_url),
                limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            )
            pool = getattr(self._inner, "_pool", None)
            if pool is None or not hasattr(pool, "_network_backend"):  # an httpx/httpcore that changed
                raise RuntimeError("fasbench.base.endpoint: this httpx has no connection pool backend to bound")
            pool._network_backend = _Backend(pool._network_backend)

        def handle_request(self, request):
            total = (request.extensions.get("timeout") or {}).get("read") or timeout_s
            deadline = (time.monotonic() + total, total)
            request.headers["Accept-Encoding"] = "identity"
            prev = _set_deadline(deadline)
            try:
                resp = self._inner.handle_request(request)
            except httpx.TimeoutException:
                if not gateway_chars:
                    raise
                err = f"fasbench.base.endpoint: no complete reply within the total deadline (timeout_s={float(total)})"
                return httpx.Response(504, json={"error": {"message": err, "type": "invalid_reply"}})
            finally:
                _set_deadline(prev)
            enc = resp.headers.get("content-encoding", "identity").strip().lower()
            if enc not in ("", "identity"):
                resp.close()
                raise httpx.DecodingError(f"reply is {enc}-encoded; only identity (uncompressed) is accepted")
            resp.stream = Body(resp.stream, deadline)
            return self._gateway(request, resp, total) if gateway_chars else resp

        def _gateway(self, request, resp, total: float):
            def fail(status: int, why: str):
                resp.close()
                err = {"error": {"message": f"fasbench.base.endpoint: {one_line(why)}", "type": "invalid_reply"}}
                return httpx.Response(status, json=err)

            try:
                data = b"".join(resp.stream)
            except httpx.TimeoutException:
                return fail(504, f"no complete reply within the total deadline (timeout_s={float(total)})")
            except httpx.HTTPError as e:
                return fail(502, str(e))
            finally:
                resp.close()
            if resp.status_code == 200 and request.url.path.endswith("/chat/completions"):
                try:
                    check_chat_reply(parse_json(data, content_type=resp.headers.get("content-type", "")), gateway_chars)
                except EndpointError as e:
                    return fail(502, str(e))
            return httpx.Response(resp.status_code, headers=resp.headers, content=data, extensions=resp.extensions)

        def close(self) -> None:
            self._inner.close()

    return httpx.Client(
        transport=Transport(),
        trust_env=False,
        timeout=httpx.Timeout(timeout_s),
        headers={"Accept-Encoding": "identity"},
    )


def post_json(client, url: str, body: dict, headers: dict, timeout_s: float) -> tuple[int, dict, bytes]:
    """POST ``body`` as JSON; (status, headers, body bytes) within the total deadline ``timeout_s``.
    The body of an error status is read only up to ``ERROR_BODY_BYTES``. Transport failures raise
    httpx's exceptions, their messages naming the deadline or the size cap."""
    # local import: httpx is heavy to import; only remote calls need it
    import httpx

    req = client.build_request("POST", url, json=body, headers=headers, timeout=httpx.Timeout(timeout_s))
    r = client.send(req, stream=True)
    try:
        chunks, n = [], 0
        for chunk in r.iter_bytes():
            chunks.append(chunk)
            n += len(chunk)
            if r.status_code != 200 and n >= ERROR_BODY_BYTES:
                break
        return r.status_code, dict(r.headers), b"".join(chunks)
    finally:
        r.close()


# ---------------------------------------------------------------- the reply


def depth_over(obj, limit: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list)):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return False


def parse_json(data: bytes | str, what: str = "reply", content_type: str = ""):
    """The JSON value of ``data``; EndpointError when it is not JSON or nests deeper than MAX_DEPTH."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise EndpointError(f"{what}: JSON nested too deeply (over the limit of {MAX_DEPTH} levels)") from None
    except ValueError:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        ct = f" ({content_type})" if content_type else ""
        raise EndpointError(f"{what}: not JSON{ct}: {one_line(text, 200)!r}") from None
    if depth_over(value, MAX_DEPTH):
        raise EndpointError(f"{what}: JSON nested too deeply (over the limit of {MAX_DEPTH} levels)")
    return value


def _kind(v) -> str:
    if v is None:
        return "null"
    return {bool: "a bool", int: "an int", float: "a float", str: "a string", list: "a list", dict: "a dict"}.get(
        type(v), type(v).__name__
    )


def _want(v, types: tuple, where: str, expected: str):
    if isinstance(v, bool) and bool not in types or not isinstance(v, types):
        raise EndpointError(f"reply: {where} is {_kind(v)}, expected {expected}")
    return v


def _check_function(fn, where: str) -> int:
    _want(fn, (dict,), where, "a dict")
    _want(fn.get("name"), (str,), f"{where}.name", "a string")
    args = fn.get("arguments", "")
    _want(args, (str,), f"{where}.arguments", "a string")
    return len(fn["name"]) + len(args)


def check_chat_reply(data, max_chars: int) -> dict:
    """The chat-completions reply ``data`` checked (see the module doc); returns it. ``max_chars``
    bounds the characters of content and tool-call names and arguments together."""
    _want(data, (dict,), "the body", "a dict")
    choices = _want(data.get("choices"), (list,), "choices", "a list")
    if not choices:
        raise EndpointError("reply: choices is empty")
    msg = _want(
        _want(choices[0], (dict,), "choices[0]", "a dict").get("message"), (dict,), "choices[0].message", "a dict"
    )
    content = msg.get("content")
    n = len(_want(content, (str, type(None)), "choices[0].message.content", "a string or null") or "")
    calls = _want(msg.get("tool_calls"), (list, type(None)), "choices[0].message.tool_calls", "a list or null")
    for i, c in enumerate(calls or []):
        where = f"choices[0].message.tool_calls[{i}]"
        _want(c, (dict,), where, "a dict")
        _want(c.get("id"), (str, type(None)), f"{where}.id", "a string")
        n += _check_function(c.get("function"), f"{where}.function")
    if msg.get("function_call") is not None:
        n += _check_function(msg["function_call"], "choices[0].message.function_call")
    usage = _want(data.get("usage"), (dict, type(None)), "usage", "a dict or null")
    for k in ("prompt_tokens", "completion_tokens"):
        v = (usage or {}).get(k)
        if v is not None and (_want(v, (int,), f"usage.{k}", "an int") < 0):
            raise EndpointError(f"reply: usage.{k} is negative ({v})")
    if n > max_chars:
        raise EndpointError(
            f"reply: the answer is {n} characters (content and tool calls), over the limit of "
            f"{max_chars}; refused, not cut"
        )
    return data
