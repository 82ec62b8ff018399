"""The sampling a tool set's model is documented to use, for model policies whose spec leaves it unset.

Relace documents the sampling of its Fast Agentic Search model (docs.relace.ai, Fast Agentic Search):
temperature 1.0, top_k 100, top_p 0.95; a model policy given Relace's tool set samples so unless its
spec sets a value (``openai:…,temperature=0`` keeps greedy decoding). The ``hf`` policy applies all
three; the ``openai`` policy sends temperature and top_p, and top_k only when its spec sets it
(``openai:…,top_k=100``): top_k is no field of the OpenAI chat API and strict servers refuse the
request (``transformers serve``: HTTP 422 "Unexpected fields in the request: {'top_k'}"), while
vLLM and SGLang take it.
FastContext's explorer has its own (0.7 and top_p 0.95 at 913afd3, ``agent_factory.py`` /
``llm.py``), which the ``fastcontext`` profiles set explicitly; other tool sets (and a judge, which
passes no tools) keep greedy decoding (temperature 0, nothing else sent).
"""

from __future__ import annotations

from collections.abc import Iterable

from fasbench.tools import toolset_of

#: Relace's documented sampling for its Fast Agentic Search model.
RELACE_SAMPLING = {"temperature": 1.0, "top_k": 100, "top_p": 0.95}
DEFAULTS = {"relace": RELACE_SAMPLING}


def sampling_for(
    tools: Iterable | None, temperature: float | None, top_p: float | None, top_k: int | None
) -> tuple[float, float | None, int | None]:
    """(temperature, top_p, top_k) for a request offering ``tools``: the values given, else the tool
    set's documented ones, else greedy (0.0, None, None). A top_k of 0 means none."""
    d = DEFAULTS.get(toolset_of(list(tools or [])) or "", {})
    t = float(temperature) if temperature is not None else float(d.get("temperature", 0.0))
    p = top_p if top_p is not None else d.get("top_p")
    k = top_k if top_k is not None else d.get("top_k")
    return t, p, (int(k) if k else None)
