"""One rollout's episode, a turn at a time: :func:`fasbench.harness.run_episode`'s loop split at the
model call, so that a batch of episodes can share one generation step (:mod:`fasbench.rl.rollout`).

Each step is the harness's own: the prompt (``harness.initial_messages`` under the limits' protocol), the
last-turn note before turn ``turn_budget - 1``, the parsed reply (:func:`fasbench.models.parse_tool_calls`),
the calls run by ``harness.execute_calls``, the report parsed by the tool set, the no-call reminder, the
FastContext loop's silent-reply end. Between turns it renders the text the chat template puts after a
reply (its tool results and the harness's notes) as token ids, for the decoder to append to the cache.
"""

from __future__ import annotations

import time

from fasbench.harness import NO_CALL_NOTE, Limits, execute_calls, initial_messages, parsable_calls, turn_budget
from fasbench.models import parse_tool_calls, to_template_messages
from fasbench.records import Task, Trace, Turn, turn_messages
from fasbench.tools import make_toolset

_MARK = "\u2063ROLLOUT-REPLY\u2063"  # a reply text no template rewrites: the harness text starts after it


class EpisodeState:
    """The state of one rollout: its trace, its token ids, the generated-token mask and log-probs."""

    def __init__(self, task: Task, toolset: str, limits: Limits, tokenizer, label: str, sample: int = 0, seed: int = 0):
        # local import: torch is heavy to import; only generation needs it
        import torch

        if not task.root:
            raise ValueError(f"task {task.id} has no corpus root; materialise it first")
        self.task, self.limits, self.tok, self.sample = task, limits, tokenizer, sample
        self.ts = make_toolset(toolset, task.root, limits.tool)
        self.schemas = self.ts.schemas
        query, source = self.ts.episode_query(task)
        self.trace = Trace(
            task_id=task.id,
            policy=label,
            toolset=self.ts.name,
            stop_reason="max_turns",
            prompt=initial_messages(self.ts, query, limits),
            started_at=time.time(),
        )
        self.trace.meta["query_source"] = source
        if query != task.query:
            self.trace.meta["query"] = query
        if self.ts.limits.prompt != "published":
            self.trace.meta["prompt"] = self.ts.limits.prompt
        self.budget = turn_budget(self.ts, limits)
        self.generator = torch.Generator().manual_seed(seed)
        self.ids: list[int] = []
        self.gen_mask: list[int] = []
        self.logprobs: list[float] = []
        self.notes: list[dict] = []  # the harness's messages before the next reply
        self.pending: list[int] = []  # token ids to append before the next reply
        self.prompt_len = 0
        self.new_tokens = 0
        self.capped = False
        self.capped_turns: list[int] = []  # turns cut at the per-turn token cap
        self.done = False
        self.wall_s = 0.0
        self._t0 = 0.0
        self._ended_eos = False

    @property
    def turn(self) -> int:
        return len(self.trace.turns)

    # -- the text between replies
    def _render(self, messages: list[dict], generation: bool = True) -> str:
        return self.tok.apply_chat_template(
            to_template_messages(messages), tools=self.schemas or None, add_generation_prompt=generation, tokenize=False
        )

    def _encode(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def begin_turn(self) -> None:
        """Before a reply: the last-turn note on the last turn, and the token ids the model reads before
        it (the whole prompt on the first turn; after that, the text that follows the previous reply)."""
        i = self.turn
        if i == self.budget - 1:
            self.notes.append({"role": "user", "content": self.ts.final_turn_note()})
            self.trace.meta["final_note_turn"] = i
        if i == 0:
            self.pending = self._encode(self._render(self.trace.prompt + self.notes))
            self.prompt_len = len(self.pending)
            return
        new = turn_messages(self.trace.turns[-1])[1:] + self.notes
        base = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _MARK}]
        text = self._render(base + new)
        text = text[text.index(_MARK) + len(_MARK) :]
        eos = self.tok.eos_token
        if self._ended_eos and text.startswith(eos):  # the reply's own end-of-turn token is in the cache
            text = text[len(eos) :]
        self.pending = self._encode(text)

    def consume_pending(self) -> None:
        self.ids += self.pending
        self.gen_mask += [0] * len(self.pending)
        self.logprobs += [0.0] * len(self.pending)
        self.pending = []
        self._t0 = time.time()

    def end_turn(self, tokens: list[int], logprobs: list[float], capped: bool, max_new_tokens: int) -> None:
        """After a reply: parse it, run its calls, and decide as ``run_episode`` does whether the episode ends."""
        t1 = time.time()
        eos = self.tok.eos_token_id
        self._ended_eos = bool(tokens) and tokens[-1] == eos
        self.ids += tokens
        self.gen_mask += [1] * len(tokens)
        self.logprobs += list(logprobs)
        self.new_tokens += len(tokens)
        self.capped |= capped
        i = self.turn
        final = i == self.budget - 1
        text = self.tok.decode(tokens, skip_special_tokens=True)
        rest, calls, _ = parse_tool_calls(text, self.schemas, id_prefix=f"call_{i}")
        turn = Turn(
            index=i,
            text=rest,
            calls=list(calls),
            notes=self.notes,
            prompt_tokens=len(self.ids) - len(tokens),
            completion_tokens=len(tokens),
            model_started_at=self._t0,
            model_ended_at=t1,
        )
        if capped:
            self.capped_turns.append(i)
        self.notes = []
        turn.tools_started_at = time.time()
        turn.results = execute_calls(self.ts, turn.calls, self.limits.max_calls_per_turn)
        turn.tools_ended_at = time.time()
        self.trace.turns.append(turn)
        report = self.ts.parse_report(turn.text, turn.calls[: self.limits.max_calls_per_turn])
        if report is not None:
            self.trace.report, self.trace.stop_reason = report, "reported"
            self.done = True
        elif not turn.calls and self.ts.silent_reply_ends:
            self.trace.stop_reason, self.done = "no_answer", True
        else:
            if not turn.calls and not final:
                self.notes.append({"role": "user", "content": NO_CALL_NOTE})
            self.done = final

    def stop_context(self, limit: int) -> None:
        """The next turn would not fit ``limit`` tokens: end as the ``hf:`` policy's context error does."""
        self.trace.stop_reason = "policy_error"
        self.trace.error = (
            f"ValueError: the conversation ({len(self.ids) + len(self.pending)} tokens) and a reply "
            f"do not fit the context budget of {limit} tokens"
        )
        self.trace.tail_notes, self.notes, self.pending, self.done = self.notes, [], [], True

    def finish(self) -> Trace:
        tr = self.trace
        if tr.turns and not parsable_calls(tr):
            tr.meta["no_tool_call"] = True
        tr.meta["rollout"] = {
            "sample": self.sample,
            "new_tokens": self.new_tokens,
            "capped": self.capped,
            "capped_turns": list(self.capped_turns),
        }
        tr.ended_at = time.time()
        return tr
