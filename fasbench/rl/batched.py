"""Many harness episodes driven by one local model, their model turns generated together, with the
token-exact record of each conversation that GRPO and SFT train on (notebook 06's miniature).

Every episode runs through :func:`fasbench.harness.run_episode` unchanged (the tool set, its prompts
and notes, the tools in the sandbox, the one tool-call parser, the last-turn note, the trace), each in
a thread of its own. Its policy, :class:`TokenPolicy`, does not generate by itself: it hands its
conversation's token ids to a shared :class:`Batcher`, which waits until every episode still running
has asked, then generates all their replies in one padded ``generate`` call (KV cache within the turn,
a per-turn new-token cap so one runaway reply cannot hold the batch) and wakes them. The conversation
is kept as token ids with a mask of model-sampled tokens: a reply's sampled ids exactly (not re-encoded),
the harness's messages between replies as the chat template renders them (the template's rendering of
the conversation so far, with each reply as its raw text, is a prefix of the next rendering; the new
part is encoded and appended). SFT traces of the scripted searchers go through the same record
(:class:`ScriptedTokens`), so SFT and RL train on one format.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from fasbench.harness import Limits, Policy, run_episode
from fasbench.models import parse_tool_calls, to_template_messages
from fasbench.records import Reply, Task, Trace
from fasbench.tools import make_toolset

END = "<|im_end|>"  # the end of a turn in the ChatML templates of SmolLM2 / Qwen


@dataclass
class Convo:
    """One conversation as tokens: ``ids``, ``mask`` (1 = sampled by the model, trained on), the
    rendered text the ids stand for, and the chat messages (replies as raw text) behind it."""

    tok: object
    tools: list[dict]
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)  # sampling log-probability of each token (0 off the mask)
    msgs: list[dict] = field(default_factory=list)
    text: str = ""

    def render(self, msgs: list[dict], gen: bool) -> str:
        return self.tok.apply_chat_template(
            to_template_messages(msgs), tools=self.tools or None, add_generation_prompt=gen, tokenize=False
        )

    def add_env(self, new: list[dict]) -> None:
        """Append harness messages (system/user/tool) and the next reply's generation prompt."""
        full = self.render(self.msgs + new, True)
        if not full.startswith(self.text):
            raise ValueError("chat template: the conversation's rendering is not a prefix of the next one")
        delta = full[len(self.text) :]
        ids = self.tok(delta, add_special_tokens=False)["input_ids"]
        self.ids += ids
        self.mask += [0] * len(ids)
        self.logps += [0.0] * len(ids)
        self.msgs += new
        self.text = full

    def add_reply(self, ids: list[int], ended: bool, logps: list[float] | None = None) -> str:
        """Append a reply's sampled ids (ending with the end-of-turn token when ``ended``; else the
        token is appended unmasked: a reply cut at the cap). Returns its raw text."""
        end = self.tok.convert_tokens_to_ids(END)
        body = ids[:-1] if ended and ids and ids[-1] == end else list(ids)
        raw = self.tok.decode(body, skip_special_tokens=False)
        self.ids += body + [end]
        self.mask += [1] * len(body) + [1 if ended else 0]
        lp = list(logps) if logps is not None else [0.0] * len(ids)
        self.logps += lp[: len(body)] + ([lp[len(body)]] if ended and len(lp) > len(body) else [0.0])
        self.msgs.append({"role": "assistant", "content": raw})
        self.text += raw + END
        return raw


class Batcher:
    """Generates the replies of all running episodes in one batch (see the module doc)."""

    def __init__(self, model, tok, *, temperature: float, max_new_tokens: int, seed: int = 0):
        self.model, self.tok = model, tok
        self.temperature, self.max_new_tokens, self.seed = temperature, max_new_tokens, seed
        self.cv = threading.Condition()
        self.active = 0
        self.pending: dict[int, list[int]] = {}
        self.done: dict[int, tuple[list[int], bool, list[float]]] = {}
        self.round = 0
        self.stats = {"rounds": 0, "new_tokens": 0, "capped": 0, "gen_s": 0.0}
        self.error: BaseException | None = None

    def join(self) -> None:
        with self.cv:
            self.active += 1

    def leave(self) -> None:
        with self.cv:
            self.active -= 1
            self._maybe_run()

    def ask(self, key: int, ids: list[int]) -> tuple[list[int], bool, list[float]]:
        with self.cv:
            self.pending[key] = ids
            self._maybe_run()
            while key not in self.done and self.error is None:
                self.cv.wait()
            if self.error is not None:
                raise RuntimeError(f"batched generation failed: {self.error}")
            return self.done.pop(key)

    def _maybe_run(self) -> None:  # under the lock: run when every running episode waits
        if self.pending and len(self.pending) >= self.active:
            batch, self.pending = self.pending, {}
            try:
                self.done.update(self.generate(batch))
            except BaseException as e:  # every waiting episode fails with it, none hangs
                self.error = e
            self.cv.notify_all()

    def generate(self, batch: dict[int, list[int]]) -> dict[int, tuple[list[int], bool, list[float]]]:
        import torch  # local import: torch is heavy, only where a model runs

        keys = sorted(batch)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        end = self.tok.convert_tokens_to_ids(END)
        n = max(len(batch[k]) for k in keys)
        ids = torch.full((len(keys), n), pad, dtype=torch.long)
        att = torch.zeros((len(keys), n), dtype=torch.long)
        for i, k in enumerate(keys):  # left padding
            ids[i, n - len(batch[k]) :] = torch.tensor(batch[k])
            att[i, n - len(batch[k]) :] = 1
        sample = self.temperature > 0
        kw = dict(do_sample=True, temperature=self.temperature, top_k=0, top_p=1.0) if sample else dict(do_sample=False)
        torch.manual_seed(self.seed * 100_003 + self.round)
        self.round += 1
        t0 = time.time()
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=att,
                max_new_tokens=self.max_new_tokens,
                eos_token_id=end,
                pad_token_id=pad,
                use_cache=True,
                output_scores=True,
                return_dict_in_generate=True,
                **kw,
            )
            # the sampled tokens' log-probabilities under the sampling distribution (temperature applied)
            steps = torch.stack(out.scores, 1).float()  # batch x new x vocab
            seq = out.sequences[:, n:]
            lps = torch.log_softmax(steps, -1).gather(-1, seq[:, : steps.shape[1], None]).squeeze(-1)
        self.stats["gen_s"] += time.time() - t0
        self.stats["rounds"] += 1
        res = {}
        for i, k in enumerate(keys):
            new = seq[i].tolist()
            ended = end in new
            cut = new.index(end) + 1 if ended else len(new)
            self.stats["new_tokens"] += cut
            self.stats["capped"] += int(not ended)
            res[k] = (new[:cut], ended, [float(x) for x in lps[i, :cut].tolist()])
        return res


class TokenPolicy(Policy):
    """One episode's policy: its conversation as a :class:`Convo`; each reply from the :class:`Batcher`."""

    name = "hf-batched"
    backend = "serial"

    def __init__(self, batcher: Batcher, key: int, tools: list[dict]):
        self.batcher, self.key = batcher, key
        self.convo = Convo(batcher.tok, tools)
        self.seen = 0

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        new = [m for m in messages[self.seen :] if m.get("role") != "assistant"]  # our reply is in convo
        self.seen = len(messages) + 1  # the reply below comes next
        self.convo.add_env(new)
        n_prompt = len(self.convo.ids)
        ids, ended, logps = self.batcher.ask(self.key, list(self.convo.ids))
        raw = self.convo.add_reply(ids, ended, logps)
        text, calls, _ = parse_tool_calls(raw, tools, id_prefix=f"t{self.key}")
        return Reply(text=text, calls=calls, prompt_tokens=n_prompt, completion_tokens=len(ids))


@dataclass
class EpisodeTokens:
    """One episode and its token record (``ids``, ``mask``: 1 on tokens the model sampled)."""

    task: Task
    trace: Trace
    ids: list[int]
    mask: list[int]
    logps: list[float]
    prompt_len: int  # tokens before the first reply (system, user, generation prompt)
    reward: float = 0.0
    parts: dict = field(default_factory=dict)

    @property
    def first_calls(self) -> int:
        return len(self.trace.turns[0].calls) if self.trace.turns else 0


def run_batched(
    model,
    tok,
    tasks: list[Task],
    *,
    toolset: str,
    limits: Limits,
    temperature: float,
    max_new_tokens: int,
    seed: int = 0,
) -> tuple[list[EpisodeTokens], dict]:
    """One episode per task in ``tasks`` (repeat a task for k samples), all replies batched; returns
    the rollouts in task order and the batcher's statistics (rounds, new tokens, capped replies)."""
    batcher = Batcher(model, tok, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    out: list[EpisodeTokens | None] = [None] * len(tasks)
    errors: list[str] = []

    def one(i: int, task: Task) -> None:
        try:
            ts = make_toolset(toolset, task.root, limits.tool)
            pol = TokenPolicy(batcher, i, ts.schemas)
            tr = run_episode(task, pol, ts, limits)
            c = pol.convo
            out[i] = EpisodeTokens(task, tr, c.ids, c.mask, c.logps, c.mask.index(1) if 1 in c.mask else len(c.ids))
        except Exception as e:  # one bad episode never stops the batch
            errors.append(f"{task.id}: {type(e).__name__}: {e}")
        finally:
            batcher.leave()

    threads = [threading.Thread(target=one, args=(i, t), daemon=True) for i, t in enumerate(tasks)]
    for _ in threads:
        batcher.join()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stats = {**batcher.stats, "errors": errors}
    return [r for r in out if r is not None], stats


class ScriptedTokens(Policy):
    """A scripted policy (e.g. ``sequential:inner=definitions,per_turn=1``) whose replies are written
    into a :class:`Convo` as the chat template renders its tool calls (``<tool_call>`` JSON blocks), as
    the SFT examples of these traces (``fasbench sft build``, profile ``sft_par``) show them: the token
    record of a scripted episode in the format RL samples (tests check the two agree)."""

    backend = "serial"

    def __init__(self, inner: Policy, tok, tools: list[dict]):
        self.inner, self.name = inner, inner.name
        self.convo = Convo(tok, tools)
        self.seen = 0

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        reply = self.inner.act(messages, tools, final=final)
        new = [m for m in messages[self.seen :] if m.get("role") != "assistant"]
        self.seen = len(messages) + 1
        self.convo.add_env(new)
        msg = {
            "role": "assistant",
            "content": reply.text or "",
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in reply.calls
            ],
        }
        full = self.convo.render(self.convo.msgs + [msg], False)
        head = self.convo.text
        raw = full[len(head) :].rstrip("\n")
        raw = raw[: -len(END)] if raw.endswith(END) else raw
        ids = self.convo.tok(raw, add_special_tokens=False)["input_ids"] + [self.convo.tok.convert_tokens_to_ids(END)]
        self.convo.add_reply(ids, True)
        return reply
