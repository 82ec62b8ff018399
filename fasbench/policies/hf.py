"""A local transformers model as a search policy: the chat so far is rendered with the tool chat
template, the model generates one reply, and tool calls are parsed out of it (Qwen JSON or
Qwen3-Coder XML ``<tool_call>`` blocks; see ``fasbench.models.parse_tool_calls``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fasbench.harness import Policy
from fasbench.models import load_model, parse_tool_calls, to_template_messages
from fasbench.policies.sampling import sampling_for
from fasbench.records import Reply


@dataclass
class HFPolicy(Policy):
    """``hf:model=NAME`` in ``make_policy`` specs. Greedy (``temperature=0``) or sampled generation from ``model``/``tokenizer``.

    ``max_context`` bounds prompt + completion tokens (default: the model's
    ``max_position_embeddings``); when the chat is longer, the oldest tool observations are cut
    first (the system prompt, the query and the latest observations are kept). ``stats`` counts
    turns, calls and malformed tool-call blocks over the policy's life."""

    model: Any = "smollm2-offline"  # a loaded model, or a name/path for fasbench.models.load_model
    tokenizer: Any = None  # the model's tokenizer (loaded with the model when ``model`` is a name)
    max_new_tokens: int = 512  # tokens generated per turn
    temperature: float | None = None  # 0 = greedy; > 0 samples (seeded, reproducible); None: the tool set's
    # documented sampling (fasbench.policies.sampling: Relace's 1.0 / top_k 100 / top_p 0.95), else greedy
    seed: int = 0  # base seed of sampling; each turn uses seed + turn counter
    top_p: float | None = None  # nucleus sampling when sampling (None: the tool set's, else 1.0)
    top_k: int | None = None  # top-k when sampling (None: the tool set's, else none; 0 = none)
    max_context: int | None = None  # prompt + completion token budget; None = model limit
    name: str = "hf"
    stats: dict = field(default_factory=lambda: {"turns": 0, "calls": 0, "malformed": 0})
    backend = "serial"  # one local model in this process: episodes one after another

    def __post_init__(self):
        if isinstance(self.model, str):
            model, tok = load_model(self.model)
            self.model, self.tokenizer = model, self.tokenizer or tok
        if self.tokenizer is None:
            raise ValueError("HFPolicy: a loaded model needs its tokenizer (tokenizer=...)")

    def _encode(self, messages: list[dict], tools: list[dict]):
        return self.tokenizer.apply_chat_template(
            to_template_messages(messages),
            tools=tools or None,
            add_generation_prompt=True,
            return_dict=True,
            return_tensors="pt",
        )

    def _fit(self, messages: list[dict], tools: list[dict]):
        limit = self.max_context or getattr(self.model.config, "max_position_embeddings", 8192)
        budget = max(16, limit - self.max_new_tokens)
        enc = self._encode(messages, tools)
        msgs = [dict(m) for m in messages]
        cut_to = 4000
        while enc["input_ids"].shape[1] > budget:
            # Cut the oldest long tool observation, then cut harder once all are short.
            idx = [i for i, m in enumerate(msgs) if m.get("role") == "tool" and len(m.get("content") or "") > cut_to]
            if not idx:
                if cut_to <= 200:
                    raise ValueError(
                        f"prompt of {enc['input_ids'].shape[1]} tokens does not fit the context "
                        f"budget of {budget} even with every tool observation cut"
                    )
                cut_to //= 4
                continue
            m = msgs[idx[0]]
            note = "\n[observation cut to fit the context window]"
            m["content"] = m["content"][: max(0, cut_to - len(note))] + note  # now exactly cut_to long
            enc = self._encode(msgs, tools)
        return enc

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        # local import: torch is heavy to import, needed only when a model runs
        import torch

        enc = self._fit(messages, tools)
        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        n_prompt = enc["input_ids"].shape[1]
        temperature, top_p, top_k = sampling_for(tools, self.temperature, self.top_p, self.top_k)
        sample = temperature > 0
        gen_kw: dict[str, Any] = dict(
            max_new_tokens=self.max_new_tokens,
            do_sample=sample,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.tokenizer.eos_token_id,
        )
        if sample:
            gen_kw.update(temperature=temperature, top_p=1.0 if top_p is None else top_p, top_k=top_k or 0)
        else:
            gen_kw.update(temperature=None, top_p=None, top_k=None)
        was_training = self.model.training
        self.model.eval()
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(self.seed * 100_003 + self.stats["turns"])
            out = self.model.generate(**enc, **gen_kw)
        self.model.train(was_training)
        new = out[0, n_prompt:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        turn = self.stats["turns"]
        rest, calls, errors = parse_tool_calls(text, tools, id_prefix=f"call_{turn}")
        self.stats["turns"] += 1
        self.stats["calls"] += len(calls)
        self.stats["malformed"] += len(errors)
        return Reply(text=rest, calls=calls, prompt_tokens=int(n_prompt), completion_tokens=int(new.shape[0]))
