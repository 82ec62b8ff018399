"""A real OpenAI-compatible HTTP server process that answers chat completions from a script (for the
live main-agent tests): ``python tests/scripted_openai_server.py PORT SCRIPT.json [DELAY_S]``.

SCRIPT maps a marker (a string looked for in the first user message) to a list of bash commands; the
k-th assistant turn of a conversation gets the k-th command as a ``bash`` tool call. When the first user
message holds a ``<search_report>`` (the subagent's handoff), the commands marked ``"explore": true`` are
skipped, as a main agent that trusts the report would. ``usage`` counts characters / 4.
"""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(body: dict, script: dict) -> dict:
    msgs = body.get("messages") or []
    first = next((m.get("content") for m in msgs if m.get("role") == "user"), "") or ""
    if isinstance(first, list):
        first = " ".join(p.get("text", "") for p in first if isinstance(p, dict))
    steps = next((v for k, v in script.items() if k in first), [])
    if "<search_report>" in first:
        steps = [s for s in steps if not s.get("explore")]
    k = sum(1 for m in msgs if m.get("role") == "assistant")
    cmd = steps[k]["command"] if k < len(steps) else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    prompt = sum(len(json.dumps(m)) for m in msgs) // 4
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": f"THOUGHT: step {k + 1}.",
                    "tool_calls": [
                        {
                            "id": f"call_{k}",
                            "type": "function",
                            "function": {"name": "bash", "arguments": json.dumps({"command": cmd})},
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": len(cmd) // 4 + 5,
            "total_tokens": prompt + len(cmd) // 4 + 5,
        },
    }


def main() -> None:
    port, script_path = int(sys.argv[1]), sys.argv[2]
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    script = json.loads(open(script_path, encoding="utf-8").read())

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            time.sleep(delay)
            self._send(200, reply(body, script))

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
