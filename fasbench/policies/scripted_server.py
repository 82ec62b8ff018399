"""A real local HTTP server speaking the OpenAI chat-completions protocol, answering with scripted
tool calls after a fixed delay: the stand-in for a model server (vLLM, SGLang) when what is measured
or tested is the client — concurrency, timeouts, retries — not the model.

``POST /v1/chat/completions`` reads the conversation, counts the assistant turns already in it
(the turn index ``k``), sleeps ``delay_s`` while holding one of ``max_concurrent`` slots (requests
past that wait for a slot, as requests wait for a place in a server's batch), and answers:

- turns ``k < turns - 1``: the tool calls ``calls`` (a directory listing and a file view of the
  Relace tool set by default: cheap reads, so the client's cost per call stays small);
- turn ``k = turns - 1``: the Relace answer call naming ``report_path`` (under the ids report contract,
  ``fasbench.tools.contract``, the first ID the tool results showed, whole).

Three other scripts, chosen by the tools a request offers: a request offering one ``bash`` tool and
nothing else (mini-swe-agent, the live main agent of ``fasbench e2e``) gets ``main_agent_command``'s
commands (explore, or re-read the hand-off's first cited range, or trust a hand-off with code; then
submit); a request offering FastContext's
query-generation tools (``subagent``, :mod:`fasbench.tools.fastcontext_query`) gets one ``subagent``
call whose ``prompt`` is ``Find the code involved in: `` + the problem statement's first line (at
most 200 characters); a request offering FastContext's explorer tools gets, before the last turn, a
``Grep`` for the longest word of the ``<query>`` (then the calls' turns as above are not used), and
on the last turn a text answer ``<final_answer>`` citing lines 1-20 of the first ``/repo/…`` path the
tool results showed (``README.md`` if none; under the ids contract the first ID shown), without tool calls (finish reason ``stop``).

``usage`` carries prompt tokens (request bytes / 4) and completion tokens (answer bytes / 4), so a
client can record them. A task steers the server from its query, for failure tests: a query holding
``[[server:500]]`` always gets HTTP 500, ``[[server:sleep=S]]`` waits S seconds before answering,
``[[server:flaky=N]]`` gets 503 (with ``Retry-After: 0``) on the first N attempts of each turn.
How the calls are written is ``tool_format`` (``--tool-format``, or ``[[server:format=F]]`` in a query):
``structured`` (``tool_calls``, the default); ``hermes_json`` or ``qwen3_coder_xml`` (no
``tool_calls``: the calls as ``<tool_call>`` text in the content, as a server without its tool-call
parser returns them); ``prose`` (text only, never a call: a model that does not call tools).
``GET /v1/models`` and ``GET /health`` answer 200. Run it as
``fasbench scripted-server --port 8000 [--delay-s 0.25 --max-concurrent 32 --turns 3]`` (``python -m fasbench.cli
scripted-server`` from a checkout); it prints ``ready <port>`` once it listens.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fasbench.tools import MAIN_AGENT_SHELL, calls_for
from fasbench.tools.contract import contract_of, shown_ids
from fasbench.tools.fastcontext_query import offers_subagent, subagent_call

_RELACE = calls_for("relace")
_FC = calls_for("fastcontext")
_FC_SEARCH = _FC.search("x", "x").name  # the explorer's search tool: a request offering it is a FastContext one
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_REPO_PATH = re.compile(r"/repo/[\w./-]+\.\w+")
DEFAULT_CALLS = tuple(
    {"name": c.name, "arguments": c.arguments}
    for c in (_RELACE.list_dir("c0", "/repo"), _RELACE.read("c1", "/repo/requests/__init__.py", 1, 40))
)
STEER = re.compile(r"\[\[server:(500|sleep=[0-9.]+|flaky=[0-9]+)\]\]")
TOOL_FORMATS = ("structured", "hermes_json", "qwen3_coder_xml", "prose")
FORMAT = re.compile(r"\[\[server:format=(\w+)\]\]")
PROSE = "I would start with requests/sessions.py, where redirects are resolved, and then read the adapters."


def as_text(text: str, calls: list[dict], fmt: str) -> str:
    """``text`` and OpenAI ``tool_calls`` written into one content string in a model's text format."""
    if fmt == "hermes_json":
        return text + "".join(
            f"\n<tool_call>\n{json.dumps({'name': c['function']['name'], 'arguments': json.loads(c['function']['arguments'])})}"
            "\n</tool_call>"
            for c in calls
        )
    funcs = []
    for c in calls:  # Qwen3-Coder: one <tool_call> block, a <function=...> element per parallel call
        params = "".join(
            f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
            for k, v in json.loads(c["function"]["arguments"]).items()
        )
        funcs.append(f"<function={c['function']['name']}>\n{params}</function>\n")
    return f"{text}\n<tool_call>\n{''.join(funcs)}</tool_call>"


SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # mini-swe-agent's end of an episode
_REPORT = re.compile(r"<search_report>\n(.*?)\n</search_report>", re.S)
_CITED = re.compile(r"(?m)^- (\S+?): (\d+)-(\d+)")
_HIT = re.compile(r"(?m)^(?:\./)?([\w./-]+\.\w+):(\d+):")


def _identifier(text: str) -> str:
    """The word of ``text`` most like a code identifier: one with ``_`` or an inner capital first, then
    the longest."""
    words = sorted(
        set(_WORD.findall(text)), key=lambda w: (not ("_" in w or any(c.isupper() for c in w[1:])), -len(w), w)
    )
    return words[0] if words else "def"


def main_agent_command(user: str, msgs: list, k: int) -> str:
    """The main agent's script (mini-swe-agent's ``bash`` tool), turn ``k``. Without a hand-off in the task
    (``<search_report>``): grep for the task's identifier, read 40 lines around the first hit, submit.
    With a hand-off of citations only: read the first cited range again (``sed -n``: the agent checks the
    code it was pointed to), submit. With a hand-off that carries the code (``## path`` sections): submit."""
    m = _REPORT.search(user)
    if m is None:
        issue = user.split("<pr_description>")[-1].split("</pr_description>")[0]  # mini-swe-agent's task block
        issue = issue.replace("Consider the following PR description:", "")
        steps = [f"grep -rn {_identifier(issue)} . | head -20", "read-hit"]
    else:
        cited = _CITED.findall(m.group(1))
        steps = [] if "\n## " in m.group(1) or not cited else [f"sed -n {cited[0][1]},{cited[0][2]}p {cited[0][0]}"]
    step = steps[k] if k < len(steps) else SUBMIT
    if step == "read-hit":
        last = next((str(x.get("content") or "") for x in reversed(msgs) if x.get("role") == "tool"), "")
        hit = _HIT.search(last)
        step = f"sed -n {max(1, int(hit.group(2)) - 10)},{int(hit.group(2)) + 30}p {hit.group(1)}" if hit else SUBMIT
    return step


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many clients connect at once; the default backlog (5) drops some

    def __init__(
        self,
        addr,
        delay_s: float = 0.25,
        max_concurrent: int = 32,
        turns: int = 3,
        calls=DEFAULT_CALLS,
        report_path: str = "requests/sessions.py",
        tool_format: str = "structured",
    ):
        if tool_format not in TOOL_FORMATS:
            raise ValueError(f"tool_format must be one of {', '.join(TOOL_FORMATS)}, got {tool_format!r}")
        super().__init__(addr, Handler)
        self.tool_format = tool_format
        self.delay_s, self.turns, self.calls, self.report_path = delay_s, turns, list(calls), report_path
        self.slots = threading.BoundedSemaphore(max_concurrent)
        self.attempts: dict[str, int] = {}
        self.lock = threading.Lock()
        self.served = 0
        self.in_flight = self.max_in_flight = 0

    def answer(self, body: dict, n_bytes: int = 0) -> tuple[int, dict]:
        msgs = body.get("messages") or []
        k = sum(1 for m in msgs if m.get("role") == "assistant")
        user = next((str(m.get("content") or "") for m in msgs if m.get("role") == "user"), "")
        steer = STEER.search(user)
        key = hashlib.sha1(f"{user}\0{k}".encode()).hexdigest()
        with self.lock:
            self.attempts[key] = n = self.attempts.get(key, 0) + 1
        extra = 0.0
        if steer:
            s = steer.group(1)
            if s == "500":
                return 500, {"error": {"message": "scripted internal error", "type": "server_error"}}
            if s.startswith("flaky=") and n <= int(s.split("=")[1]):
                return 503, {"error": {"message": f"scripted overload (attempt {n})", "type": "overloaded"}}
            if s.startswith("sleep="):
                extra = float(s.split("=")[1])
        with self.slots:  # at most max_concurrent requests are being "generated" at once
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                time.sleep(self.delay_s + extra)
            finally:
                with self.lock:
                    self.in_flight -= 1
                    self.served += 1
        names = {(t.get("function") or {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if names == {MAIN_AGENT_SHELL}:  # a main agent's request (mini-swe-agent offers one bash tool)
            cmd = main_agent_command(user, msgs, k)
            calls = [
                {
                    "id": f"call_{k}_0",
                    "type": "function",
                    "function": {"name": MAIN_AGENT_SHELL, "arguments": json.dumps({"command": cmd})},
                }
            ]
            return self._reply(body, key, n_bytes, f"THOUGHT: step {k + 1}.", calls, "tool_calls")
        if offers_subagent(body.get("tools")):
            first = next(
                (
                    ln.strip()
                    for ln in user.split("</problem_statement>")[0].replace("<problem_statement>", "").splitlines()
                    if ln.strip()
                ),
                "the problem",
            )
            calls = [subagent_call(f"call_{k}_0", "Explore the codebase", f"Find the code involved in: {first[:200]}")]
            return self._reply(body, key, n_bytes, "I will explore first.", calls, "tool_calls")
        if _FC_SEARCH in names:
            if k < self.turns - 1:
                words = sorted(
                    set(_WORD.findall(user.replace("<query>", " ").replace("</query>", " "))),
                    key=lambda w: (-len(w), w),
                )
                c = _FC.search(f"call_{k}_0", words[0] if words else "def", include=None)
                calls = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
                ]
                return self._reply(body, key, n_bytes, f"Turn {k + 1}: searching.", calls, "tool_calls")
            seen = [p for m in msgs if m.get("role") == "tool" for p in _REPO_PATH.findall(str(m.get("content") or ""))]
            cite = f"{seen[0] if seen else '/repo/README.md'}:1-20"
            ids = shown_ids(msgs) if contract_of(msgs) == "ids" else {}
            cite = next(iter(ids), cite)  # the ids report contract: the first ID shown
            return self._reply(
                body, key, n_bytes, f"Found it.\n\n<final_answer>\n{cite} (scripted)\n</final_answer>", [], "stop"
            )
        if k < self.turns - 1:
            calls = [
                {
                    "id": f"call_{k}_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for i, c in enumerate(self.calls)
            ]
            text = f"Turn {k + 1}: exploring."
        else:
            ids = shown_ids(msgs) if contract_of(msgs) == "ids" else {}
            files = {next(iter(ids)): []} if ids else {self.report_path: [[1, 20]]}  # ids contract: the first ID
            (rep,) = _RELACE.report(f"call_{k}_0", files, "scripted report").calls
            calls = [
                {"id": rep.id, "type": "function", "function": {"name": rep.name, "arguments": rep.arguments_json()}}
            ]
            text = "Reporting."
        return self._reply(body, key, n_bytes, text, calls, "tool_calls", user=user)

    def _reply(
        self, body: dict, key: str, n_bytes: int, text: str, calls: list, finish: str, user: str | None = None
    ) -> tuple[int, dict]:
        """The chat completion; ``user`` (the Relace script's turns) picks the tool-call format: the
        server's ``--tool-format`` or a ``[[server:format=F]]`` in the user message (else structured)."""
        msg = {"role": "assistant", "content": text}
        if calls:
            msg["tool_calls"] = calls
        if user is not None:
            fm = FORMAT.search(user)
            fmt = fm.group(1) if fm and fm.group(1) in TOOL_FORMATS else self.tool_format
            if fmt == "prose":
                msg = {"role": "assistant", "content": PROSE}
            elif fmt != "structured":
                msg = {"role": "assistant", "content": as_text(text, calls, fmt)}
            finish = "tool_calls" if msg.get("tool_calls") else "stop"
        n_out = len(json.dumps(msg)) // 4
        return 200, {
            "id": f"chatcmpl-{key[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": n_bytes // 4, "completion_tokens": n_out, "total_tokens": n_bytes // 4 + n_out},
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse their connections

    def log_message(self, *a):
        pass

    def _send(self, status: int, obj: dict, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass

    def do_GET(self):
        if self.path.rstrip("/") in ("/health", "/v1/models"):
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(400, {"error": {"message": "request body is not JSON"}})
        srv: ScriptedServer = self.server  # type: ignore[assignment]
        status, obj = srv.answer(body, len(raw))
        self._send(status, obj, {"Retry-After": "0"} if status == 503 else None)


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    delay_s: float = 0.25,
    max_concurrent: int = 32,
    turns: int = 3,
    report_path: str = "requests/sessions.py",
    tool_format: str = "structured",
) -> None:
    """``fasbench scripted-server``: listen on ``host:port`` (0: a free port), print ``ready <port>``, serve
    until interrupted. A ``tool_format`` not in :data:`TOOL_FORMATS` is a ValueError naming them."""
    if tool_format not in TOOL_FORMATS:
        raise ValueError(f"--tool-format {tool_format!r}: choose one of {', '.join(TOOL_FORMATS)}")
    srv = ScriptedServer((host, port), delay_s, max_concurrent, turns, report_path=report_path, tool_format=tool_format)
    print(f"ready {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":  # the module form before `fasbench scripted-server`: one line saying what it is now
    import sys

    sys.exit(
        "error: `python -m fasbench.policies.scripted_server` is now `fasbench scripted-server` "
        "(`python -m fasbench.cli scripted-server`)"
    )
