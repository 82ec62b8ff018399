"""The batched decoder under :mod:`fasbench.rl.rollout`: several token sequences in one KV cache,
extended turn by turn, sampled with one generator per row.

Layout: the rows share the cache's columns. A segment appended to every row (the prompts' remainders,
the harness's text after a reply) is left-padded to the longest one; a row that ended its turn early is
fed a pad. Pads are masked in the 2-D attention mask (holes), and each row's position ids count its real
tokens only, so every row computes what its own sequence alone would (up to floating-point sums). The
cache is :class:`GrowCache`: preallocated buffers that double when full, so a decode step writes one
column instead of copying the whole cache (transformers' ``DynamicLayer`` concatenates every step).
Within a turn, once half of the rows still decoding have ended their reply, the others go on in a
decoder of their own rows (:meth:`BatchDecoder._subset`, one copy) and their new columns are merged back
at the turn's end (:meth:`BatchDecoder._merge`): a few long replies stop costing full-batch steps.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicLayer


class GrowLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values live in buffers with spare columns (doubled when full):
    ``update`` writes the new columns in place and returns views of the filled part."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._k = self._v = None
        self.n = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        q = key_states.shape[-2]
        if self._k is None or self.n + q > self._k.shape[-2]:
            cap = max(256, 2 * (self.n + q))
            k = key_states.new_empty((*key_states.shape[:-2], cap, key_states.shape[-1]))
            v = value_states.new_empty((*value_states.shape[:-2], cap, value_states.shape[-1]))
            if self.n:
                k[..., : self.n, :] = self._k[..., : self.n, :]
                v[..., : self.n, :] = self._v[..., : self.n, :]
            self._k, self._v = k, v
        self._k[..., self.n : self.n + q, :] = key_states
        self._v[..., self.n : self.n + q, :] = value_states
        self.n += q
        self.keys, self.values = self._k[..., : self.n, :], self._v[..., : self.n, :]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.n if self.is_initialized else 0

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.get_seq_length() > 0:
            self._k, self._v = self._k.repeat_interleave(repeats, dim=0), self._v.repeat_interleave(repeats, dim=0)
            self.keys, self.values = self._k[..., : self.n, :], self._v[..., : self.n, :]

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.get_seq_length() > 0:
            self._k, self._v = self._k[indices], self._v[indices]
            self.keys, self.values = self._k[..., : self.n, :], self._v[..., : self.n, :]


def grow_cache() -> Cache:
    return Cache(layer_class_to_replicate=GrowLayer)


class BatchDecoder:
    """Rows of token sequences decoded together. ``prefill`` starts them, ``decode_turn`` generates one
    reply per row (until its end-of-turn token or the cap), ``keep_rows`` drops finished rows, ``extend``
    appends each row's next segment."""

    def __init__(
        self,
        model,
        eos_id: int | list[int],
        pad_id: int | None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
    ):
        stops = [int(eos_id)] if isinstance(eos_id, int) else [int(x) for x in eos_id]  # tokens that end a reply
        self.model, self.stops = model, set(stops)
        self.pad = int(pad_id if pad_id is not None else stops[0])
        self.temperature, self.top_p, self.top_k = float(temperature), float(top_p), int(top_k)
        self.device = next(model.parameters()).device
        self.cache = grow_cache()
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)
        self.npos = torch.zeros(0, dtype=torch.long, device=self.device)
        self.next_logits = None
        self.gens: list[torch.Generator] = []
        self.unfed: list[list[int]] = []  # tokens sampled at a turn's last step, not yet in the cache
        self.steps = 0  # forward passes (prefill segments and decode steps)
        self.narrowed = 0  # times a turn went on with only the rows still decoding

    @torch.no_grad()
    def _forward(self, ids: torch.Tensor, seg_mask: torch.Tensor) -> None:
        pos = (self.npos[:, None] + torch.cumsum(seg_mask, dim=1) - 1).clamp(min=0)
        self.mask = torch.cat([self.mask, seg_mask], dim=1) if self.mask.numel() else seg_mask
        out = self.model(
            input_ids=ids,
            attention_mask=self.mask,
            position_ids=pos,
            cache=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.npos = self.npos + seg_mask.sum(dim=1)
        self.next_logits = out.logits[:, -1, :].float()
        self.steps += 1

    def _append(self, seqs: list[list[int]]) -> None:
        seqs = [u + s for u, s in zip(self.unfed, seqs)]
        self.unfed = [[] for _ in seqs]
        t = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), t), self.pad, dtype=torch.long)
        seg = torch.zeros((len(seqs), t), dtype=torch.long)
        for b, s in enumerate(seqs):
            if not s:
                raise ValueError("rollouts: a row has nothing to read before its next reply")
            ids[b, t - len(s) :] = torch.tensor(s, dtype=torch.long)
            seg[b, t - len(s) :] = 1
        self._forward(ids.to(self.device), seg.to(self.device))

    def prefill(self, seqs: list[list[int]], gens: list[torch.Generator]) -> None:
        """Start the rows with their prompts; their common prefix (system prompt and tools) is encoded once."""
        self.gens, self.unfed = list(gens), [[] for _ in seqs]
        n = min(len(s) for s in seqs) - 1  # each row keeps >= 1 token of its own (its first reply's logits)
        lcp = 0
        while lcp < n and all(s[lcp] == seqs[0][lcp] for s in seqs):
            lcp += 1
        if lcp:
            self.npos = torch.zeros(1, dtype=torch.long, device=self.device)
            self.unfed = [[]]
            self._forward(
                torch.tensor([seqs[0][:lcp]], device=self.device),
                torch.ones((1, lcp), dtype=torch.long, device=self.device),
            )
            self.cache.batch_repeat_interleave(len(seqs))
            self.mask = self.mask.repeat(len(seqs), 1)
            self.npos = self.npos.repeat(len(seqs))
            self.unfed = [[] for _ in seqs]
        else:
            self.npos = torch.zeros(len(seqs), dtype=torch.long, device=self.device)
        self._append([s[lcp:] for s in seqs])

    def extend(self, seqs: list[list[int]]) -> None:
        self._append(seqs)

    def keep_rows(self, keep: list[int]) -> None:
        idx = torch.tensor(keep, dtype=torch.long, device=self.device)
        self.cache.batch_select_indices(idx)
        self.mask, self.npos = self.mask[idx], self.npos[idx]
        self.next_logits = self.next_logits[idx] if self.next_logits is not None else None
        self.gens, self.unfed = [self.gens[i] for i in keep], [self.unfed[i] for i in keep]
        cols = self.mask.any(dim=0)  # columns every remaining row holds as a hole: drop them
        if not bool(cols.all()):
            c = torch.nonzero(cols).flatten()
            for layer in self.cache.layers:
                if layer.get_seq_length() > 0:
                    layer._k, layer._v = layer._k[..., c, :], layer._v[..., c, :]
                    layer.n = int(c.numel())
                    layer.keys, layer.values = layer._k, layer._v
            self.mask = self.mask[:, c]

    def _sample(self, rows: list[int]) -> tuple[list[int], list[float]]:
        logits = self.next_logits[rows]
        if self.temperature == 0:
            lp = torch.log_softmax(logits, dim=-1)
            tok = lp.argmax(dim=-1)
            return tok.tolist(), lp.gather(1, tok[:, None]).squeeze(1).tolist()
        z = logits / self.temperature
        lp = torch.log_softmax(z, dim=-1)
        probs = lp.exp()
        if self.top_k > 0:
            kth = torch.topk(z, min(self.top_k, z.shape[-1]), dim=-1).values[:, -1:]
            probs = probs.masked_fill(z < kth, 0.0)
        if self.top_p < 1.0:
            sp, si = torch.sort(probs, dim=-1, descending=True)
            drop = torch.cumsum(sp, dim=-1) - sp > self.top_p * sp.sum(dim=-1, keepdim=True)
            probs = probs.scatter(1, si, sp.masked_fill(drop, 0.0))
        toks = [int(torch.multinomial(probs[i], 1, generator=self.gens[r]).item()) for i, r in enumerate(rows)]
        lps = lp.gather(1, torch.tensor(toks, device=lp.device)[:, None]).squeeze(1).tolist()
        return toks, lps

    def _subset(self, rows: list[int]) -> BatchDecoder:
        """A decoder of some rows only: their cache, mask, positions and generators copied (the narrowing of
        a turn in which most rows have ended their reply: the others stop costing compute)."""
        child = BatchDecoder.__new__(BatchDecoder)
        child.__dict__.update(self.__dict__)
        idx = torch.tensor(rows, dtype=torch.long, device=self.device)
        child.cache = grow_cache()
        for layer in self.cache.layers:
            new = GrowLayer()
            if layer.get_seq_length() > 0:
                new.update(layer._k[idx, :, : layer.n], layer._v[idx, :, : layer.n])
            child.cache.layers.append(new)
        child.mask, child.npos, child.next_logits = self.mask[idx], self.npos[idx], self.next_logits[idx]
        child.gens, child.unfed, child.steps = [self.gens[i] for i in rows], [self.unfed[i] for i in rows], 0
        return child

    def _merge(self, child: BatchDecoder, rows: list[int], old: int) -> None:
        """Take back the columns ``child`` (of ``rows``) added after column ``old``; the other rows get holes."""
        idx = torch.tensor(rows, dtype=torch.long, device=self.device)
        n = self.mask.shape[0]
        for layer, c in zip(self.cache.layers, child.cache.layers):
            if c.get_seq_length() > old:
                k, v = c._k[:, :, old : c.n], c._v[:, :, old : c.n]
                nk = k.new_zeros((n, *k.shape[1:]))
                nv = v.new_zeros((n, *v.shape[1:]))
                nk[idx], nv[idx] = k, v
                layer.update(nk, nv)
        m = child.mask.shape[1] - old
        nm = self.mask.new_zeros((n, m))
        nm[idx] = child.mask[:, old:]
        self.mask = torch.cat([self.mask, nm], dim=1)
        self.npos = self.npos.clone()
        self.npos[idx] = child.npos
        self.next_logits = self.next_logits.clone()
        self.next_logits[idx] = child.next_logits
        for i, r in enumerate(rows):
            self.unfed[r] = child.unfed[i]
        self.steps += child.steps

    def decode_turn(self, max_new_tokens: int, narrow: bool = True) -> list[tuple[list[int], list[float], bool]]:
        """One reply per row: (tokens, their log-probs, whether the cap cut it). With ``narrow``, once half of
        the rows still decoding have ended their reply, the rest continue in a decoder of their own rows
        (copied once), whose new columns are merged back at the end of the turn."""
        n = self.mask.shape[0]
        toks: list[list[int]] = [[] for _ in range(n)]
        lps: list[list[float]] = [[] for _ in range(n)]
        active = list(range(n))
        cur, rows = self, list(range(n))  # the decoder in use and the rows (of self) it holds, in its order
        stack: list[tuple[BatchDecoder, list[int], int]] = []
        for step in range(max_new_tokens):
            where = {r: i for i, r in enumerate(rows)}
            got, lp = cur._sample([where[r] for r in active])
            for r, t, logp in zip(active, got, lp):
                toks[r].append(t)
                lps[r].append(logp)
            fed = dict(zip(active, got))
            active = [r for r in active if fed[r] not in self.stops]
            if not active or step == max_new_tokens - 1:
                for r, t in fed.items():  # read at the start of the next segment
                    cur.unfed[where[r]] = [t]
                break
            if narrow and len(rows) > 1 and 2 * len(active) <= len(rows) and max_new_tokens - step > 8:
                for r, t in fed.items():
                    if t in self.stops:  # its end-of-turn token is read with the next segment
                        cur.unfed[where[r]] = [t]
                keep = [where[r] for r in active]
                stack.append((cur, keep, cur.mask.shape[1]))
                self.narrowed += 1
                cur, rows = cur._subset(keep), list(active)
            ids = torch.tensor([[fed.get(r, self.pad)] for r in rows], dtype=torch.long, device=self.device)
            seg = torch.tensor([[1 if r in fed else 0] for r in rows], dtype=torch.long, device=self.device)
            cur._forward(ids, seg)
        while stack:
            parent, keep, old = stack.pop()
            parent._merge(cur, keep, old)
            cur = parent
        return [
            (toks[r], lps[r], bool(toks[r]) and toks[r][-1] not in self.stops and len(toks[r]) >= max_new_tokens)
            for r in range(n)
        ]
