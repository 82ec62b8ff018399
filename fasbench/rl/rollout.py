"""Batched multi-turn rollouts on a local model: a group of episodes (tasks × k samples) generated
together, turn by turn, through the harness's tools, for GRPO and for sampled evaluation.

One :class:`RolloutEngine` call (:func:`rollout_group`) runs every episode of a group in one batch:

- **The episode is the harness's.** Each rollout runs :func:`fasbench.harness.run_episode`'s loop
  (:class:`fasbench.rl.episode_state.EpisodeState`): the tool set's prompts under the limits' protocol
  (``ToolLimits.prompt``: published or compact), its schemas, the last-turn note before the last turn,
  the no-call reminder, the calls of a turn run concurrently by ``harness.execute_calls`` (same sandbox,
  validation, caps), the report parsed by the tool set; the reply's tool calls are parsed by
  :func:`fasbench.models.parse_tool_calls`. Each rollout returns a :class:`fasbench.records.Trace`
  scored by :func:`fasbench.scoring.reward.score_episode`, as evaluation scores one.
- **One cache for the whole conversation.** The group's prompts are prefilled once (their common prefix,
  system prompt and tools, once for the group), then each turn's new tokens are decoded with the KV
  cache, and the next turn's harness text (the tool results and notes, rendered by the chat template) is
  appended to the same cache: nothing is re-encoded. The sequences share the cache's columns; a row
  that has ended its turn, or whose harness text is shorter, holds masked columns (holes) there, and
  position ids count each row's real tokens, so a row's logits are those of its own sequence alone
  (``tests/test_rollout.py`` checks them against a fresh forward of the whole conversation).
- **Finished rollouts leave the batch** (their rows are dropped from the cache at the end of a turn),
  and **a per-turn token cap** (``max_new_tokens``) ends a turn that runs away: the reply is cut there
  (an end-of-turn token is appended to the conversation, not counted as generated) and ``capped`` set.
- **Seeded per rollout.** Each rollout samples from its own ``torch.Generator`` (seeded from ``seed``,
  the task and the sample index), so a rollout's tokens do not depend on which others share its batch:
  batch 1 and batch 8 give the same tokens in fp32 (``tests/test_rollout.py``); in bf16 a different batch
  shape rounds differently, so a sampled token can flip (benchmarks/README.md, "Rollouts").

What GRPO needs comes with each :class:`GroupRollout`: the token ids of the whole conversation, the mask of
model-generated tokens, each generated token's log-probability under the sampling distribution
(``log_softmax(logits / temperature)``, before top-k/top-p filtering, as TRL's GRPO computes it; the
greedy distribution at temperature 0), and per-rollout turns, calls per turn, new tokens and the cap flag.

Where it differs from ``run_episode`` with an ``hf:`` policy: that path re-renders the whole chat every
turn, so a turn's earlier replies are seen as the template renders the *parsed* calls; here the model
sees its own generated tokens (as TRL's multi-turn GRPO does). The trace records the parsed turn either way.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fasbench.harness import Limits
from fasbench.records import Task, Trace
from fasbench.rl.episode_state import EpisodeState
from fasbench.scoring.reward import Score, score_episode


@dataclass
class GroupRollout:
    """One episode of a group, with what a policy-gradient step needs."""

    task_id: str
    sample: int  # index within the task's k samples
    trace: Trace  # the harness episode (scored below)
    ids: list[int]  # the whole conversation's token ids: prompt, each turn's reply, the harness's text between
    gen_mask: list[int]  # 1 where the model generated the token (its replies), 0 for prompt and harness text
    logprobs: list[float]  # the generated token's log-prob under the sampling distribution; 0.0 where gen_mask is 0
    prompt_len: int  # tokens of the first prompt (before the first reply)
    calls_per_turn: list[int]  # calls of each turn
    new_tokens: int  # tokens generated over the episode
    capped: bool  # some turn hit the per-turn token cap
    score: Score | None = None  # the reward's score of the trace
    wall_s: float = 0.0  # seconds from the group's start to this rollout's end (its latency in the batch)

    @property
    def turns(self) -> int:
        return self.trace.n_turns

    @property
    def reward(self) -> float:
        return float(self.score.value) if self.score is not None else 0.0


def rollout_seed(seed: int, task_id: str, sample: int) -> int:
    """The seed of one rollout's generator: fixed by the run's seed, the task and the sample index."""
    h = hashlib.sha256(f"{seed}\x00{task_id}\x00{sample}".encode()).hexdigest()
    return int(h[:15], 16)


@dataclass
class RolloutEngine:
    """Generates groups of episodes with ``model`` (a loaded causal LM and its ``tokenizer``) through the
    harness (``toolset``, ``limits``), scored with ``reward``. ``max_new_tokens``: the per-turn cap;
    ``temperature`` 0 is greedy; ``top_p``/``top_k`` filter sampling (1.0 / 0: none, GRPO's default);
    ``max_context``: tokens a conversation may reach (default: the model's position limit), beyond which
    the episode ends as a policy error, as the ``hf:`` policy's does."""

    model: Any
    tokenizer: Any
    toolset: str = "relace"
    limits: Limits = field(default_factory=Limits)
    reward: str = "relace"
    max_new_tokens: int = 160
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    max_context: int | None = None
    label: str = "rollout"  # the traces' policy name

    def __post_init__(self):
        if self.max_new_tokens < 1:
            raise ValueError(f"rollouts: max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"rollouts: temperature must be >= 0, got {self.temperature}")
        if self.tokenizer.eos_token_id is None:
            raise ValueError("rollouts: the tokenizer has no end-of-turn (eos) token")

    def run(self, tasks: Sequence[Task], k: int = 1) -> list[GroupRollout]:
        """Rollouts of every task, ``k`` samples each, generated as one batch; in task order, then sample."""
        # local import: torch is heavy to import; only generation needs it
        from fasbench.rl.decode import BatchDecoder

        if k < 1:
            raise ValueError(f"rollouts: k must be >= 1, got {k}")
        t0 = time.time()
        states = [
            EpisodeState(
                task,
                self.toolset,
                self.limits,
                self.tokenizer,
                self.label,
                sample=j,
                seed=rollout_seed(self.seed, task.id, j),
            )
            for task in tasks
            for j in range(k)
        ]
        limit = self.max_context or int(getattr(self.model.config, "max_position_embeddings", 8192))
        dec = BatchDecoder(
            self.model,
            self.tokenizer.eos_token_id,
            self.tokenizer.pad_token_id,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
        )
        live = [s for s in states if not s.done]
        if not live:
            return []
        for s in live:
            s.begin_turn()
        dec.prefill([s.pending for s in live], [s.generator for s in live])
        for s in live:
            s.consume_pending()
        while live:
            out = dec.decode_turn(self.max_new_tokens)  # one turn of every live row
            for s, (toks, lps, capped) in zip(live, out):
                s.end_turn(toks, lps, capped, self.max_new_tokens)
            for s in live:
                if not s.done:
                    s.begin_turn()
                    if len(s.ids) + len(s.pending) + self.max_new_tokens > limit:
                        s.stop_context(limit)
                if s.done:
                    s.wall_s = time.time() - t0
            keep = [i for i, s in enumerate(live) if not s.done]
            if len(keep) < len(live):
                dec.keep_rows(keep)
            live = [live[i] for i in keep]
            if live:
                dec.extend([s.pending for s in live])
                for s in live:
                    s.consume_pending()
        out = []
        for s in states:
            tr = s.finish()
            score = score_episode(self.reward, tr, s.task)
            tr.meta["reward"], tr.meta["score"] = self.reward, {"score": float(score.value), "parts": dict(score.parts)}
            out.append(
                GroupRollout(
                    task_id=s.task.id,
                    sample=s.sample,
                    trace=tr,
                    ids=s.ids,
                    gen_mask=s.gen_mask,
                    logprobs=s.logprobs,
                    prompt_len=s.prompt_len,
                    calls_per_turn=[len(t.calls) for t in tr.turns],
                    new_tokens=s.new_tokens,
                    capped=s.capped,
                    score=score,
                    wall_s=s.wall_s or time.time() - t0,
                )
            )
        return out


def rollout_group(
    model,
    tokenizer,
    tasks: Sequence[Task],
    k: int = 8,
    *,
    toolset: str = "relace",
    limits: Limits | None = None,
    reward: str = "relace",
    max_new_tokens: int = 160,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    seed: int = 0,
    max_context: int | None = None,
    label: str = "rollout",
) -> list[GroupRollout]:
    """``k`` rollouts of each task, generated together (:class:`RolloutEngine`)."""
    return RolloutEngine(
        model,
        tokenizer,
        toolset,
        limits or Limits(),
        reward,
        max_new_tokens,
        temperature,
        top_p,
        top_k,
        seed,
        max_context,
        label,
    ).run(tasks, k)
