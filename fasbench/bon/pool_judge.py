"""An LLM judge over the whole pool (the seed's selector), through any OpenAI-compatible endpoint.

Seed 003 finds that choosing a candidate from individual self-confidence is clearly worse than an
LLM judge that looks at the whole pool of candidates together with the relevant source code. For
search, a candidate is a report (files and line ranges); the judge sees the task, every candidate
report and the first lines of each cited range read from the repository, and answers with a JSON
object ``{"best": i, "scores": [s_0, ..., s_{n-1}]}`` (scores in [0, 1]). The scores feed
``select.judge_selector``, so the best-scored candidate's report is the selection and the score
gap is the margin (a stopping feature).

The request goes through ``fasbench.policies.openai_compat.OpenAIPolicy.complete`` (its retries,
timeouts and key handling). A reply that cannot be parsed does not stop an evaluation: the
candidates get the model-free medoid scores and the failure is counted (``LLMJudge.failures``).
Verdicts are cached per (task, candidate indices), so a replayed strategy grid asks once per state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from fasbench.base import contain
from fasbench.bon.pool import Rollout
from fasbench.bon.select import Selector, judge_selector, medoid_judge
from fasbench.policies import make_policy
from fasbench.policies.openai_compat import OpenAIPolicy
from fasbench.records import Task

SYSTEM = (
    "You judge the answers of code-search agents. Each candidate lists the files and line ranges it "
    "claims someone must read or change to solve the task. Pick the candidate whose locations are most "
    "likely the right ones (precise, on the code the task is about). Reply with JSON only: "
    '{"best": <candidate number>, "scores": [<one number in [0, 1] per candidate, in order>]}.'
)


def _json_span(text: str) -> str | None:
    r"""The text from the first ``{`` to the last ``}`` (what ``re.search(r"\{.*\}", re.S)`` finds,
    in linear time: that regex tries every ``{`` against the rest, quadratic on a reply of braces)."""
    i, j = text.find("{"), text.rfind("}")
    return text[i : j + 1] if 0 <= i < j else None


@dataclass
class LLMJudge:
    """``judge(rollouts) -> scores``; ``tasks`` maps task id → Task (its query, and its root for the
    code snippets; without a root the judge sees the locations only)."""

    client: OpenAIPolicy
    tasks: dict[str, Task]
    snippet_lines: int = 8  # lines shown from the start of each cited range
    max_ranges: int = 3  # ranges shown per file
    max_chars: int = 12000  # prompt cap for the candidates' part
    cache: dict = field(default_factory=dict)
    failures: int = 0
    calls: int = 0

    def prompt(self, rollouts: Sequence[Rollout]) -> list[dict]:
        task = self.tasks.get(rollouts[0].task_id)
        if task is None:
            raise ValueError(f"llm judge: no task {rollouts[0].task_id!r} (pass the pool's tasks)")
        parts = []
        for i, r in enumerate(rollouts):
            lines = [f"## Candidate {i}"]
            if not r.files:
                lines.append("(no report)")
            for path, ranges in (r.files or {}).items():
                for a, b in (ranges or [[1, 1]])[: self.max_ranges]:
                    lines.append(f"{path}:{a}-{b}")
                    lines += ["    " + t for t in self._snippet(task, path, a, b)]
            parts.append("\n".join(lines))
        body = "\n\n".join(parts)[: self.max_chars]
        user = f"Task:\n{task.query}\n\n{body}\n\nReply with the JSON object only."
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def _snippet(self, task: Task, path: str, a: int, b: int) -> list[str]:
        if not task.root:
            return []
        # the cited file through fasbench.base.contain: inside the root, a regular file (a FIFO is refused,
        # never waited on), read line by line up to the snippet's last line (a 2 GB file costs one cap)
        try:
            a, b = int(a), int(b)
        except (TypeError, ValueError):
            return []
        a = max(1, a)
        last = a - 1 + self.snippet_lines if b == -1 else min(b, a - 1 + self.snippet_lines)
        out: list[str] = []
        try:
            for i, line in enumerate(contain.iter_lines(task.root, str(path), max_line_bytes=4096), 1):
                if i > last:
                    break
                if i >= a:
                    out.append(line.decode("utf-8", errors="replace").rstrip("\r\n"))
        except contain.OutsideRoot:
            return []
        except contain.PathRefused:
            return ["(file not found)"]
        return out

    def parse(self, text: str, n: int) -> list[float] | None:
        """Scores from a reply, or None when it holds no usable verdict."""
        span = _json_span(text or "")
        if span is None:
            return None
        try:
            d = json.loads(span)
        except (ValueError, RecursionError):  # a reply of nested brackets
            return None
        if not isinstance(d, dict):
            return None
        sc = d.get("scores")
        if (
            isinstance(sc, list)
            and len(sc) == n
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in sc)
        ):
            out = [min(1.0, max(0.0, float(x))) for x in sc]
            best = d.get("best")
            if isinstance(best, int) and 0 <= best < n:  # the stated pick wins a tie
                rival = max((x for i, x in enumerate(out) if i != best), default=-1.0)
                if rival >= out[best]:
                    out[best] = rival + 1e-6
            return out
        best = d.get("best")
        if isinstance(best, int) and not isinstance(best, bool) and 0 <= best < n:
            return [1.0 if i == best else 0.0 for i in range(n)]
        return None

    def __call__(self, rollouts: Sequence[Rollout]) -> list[float]:
        if not rollouts:
            return []
        if len(rollouts) == 1:  # the seed: a single candidate needs no selector
            return [1.0]
        key = (rollouts[0].task_id, tuple(r.index for r in rollouts))
        if key not in self.cache:
            self.calls += 1
            body = self.client.request_body(self.prompt(rollouts), [])
            data = self.client.complete(body)
            msg = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
            scores = self.parse(str(msg), len(rollouts))
            if scores is None:
                self.failures += 1
                scores = medoid_judge(rollouts)
            self.cache[key] = scores
        return list(self.cache[key])


def llm_judge_selector(spec: str, tasks: Sequence[Task] | dict[str, Task]) -> tuple[Selector, LLMJudge]:
    """A selector backed by an LLM judge; ``spec`` is an ``openai:`` policy spec's parameters,
    e.g. ``model=qwen,base_url=http://localhost:8000/v1,max_tokens=256``. Returns the selector and
    the judge (its ``calls`` and ``failures`` counters)."""
    client = make_policy(spec if spec.startswith("openai:") else f"openai:{spec}")
    if not isinstance(client, OpenAIPolicy):
        raise ValueError(f"llm judge: {spec!r} is not an OpenAI-compatible endpoint spec")
    by = tasks if isinstance(tasks, dict) else {t.id: t for t in tasks}
    judge = LLMJudge(client, by)
    return judge_selector(judge), judge
