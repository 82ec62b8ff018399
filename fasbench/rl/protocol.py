"""The first turn of an episode as the model sees it, and its length in tokens: what the ``prompt``
profile key (``published`` | ``compact``, :mod:`fasbench.tools.compact`) changes.

:func:`first_turn` builds the chat exactly as :func:`fasbench.harness.run_episode` starts it (the tool
set's system and user prompts under the limits' protocol, and its schemas); :func:`first_turn_tokens`
renders it with a tokenizer's chat template (tools included, generation prompt added) and counts the
tokens. ``fasbench rl config PROFILE`` prints the count for the profile's model.
"""

from __future__ import annotations

import tempfile

from fasbench.data.symbols import QUERY, K
from fasbench.harness import Limits, initial_messages
from fasbench.models import to_template_messages
from fasbench.tools import make_toolset

#: The query the count is made with when none is given: a ``symbols`` task's query with six names of
#: typical length (the miniature's task family; fasbench.data.symbols).
SAMPLE_QUERY = QUERY.format(
    k=K,
    names=", ".join(["parse_header", "RequestContext", "build_response", "iter_chunks", "HTTPAdapter", "get_encoding"]),
)


def first_turn(
    toolset: str = "relace", limits: Limits | None = None, query: str | None = None
) -> tuple[list[dict], list[dict]]:
    """(messages, tool schemas) of the first turn under ``limits`` (its ``tool.prompt`` picks the protocol)."""
    limits = limits or Limits()
    with tempfile.TemporaryDirectory() as d:
        ts = make_toolset(toolset, d, limits.tool)
        return initial_messages(ts, query or SAMPLE_QUERY, limits), ts.schemas


def first_turn_tokens(
    tokenizer, toolset: str = "relace", limits: Limits | None = None, query: str | None = None
) -> int:
    """Tokens of the first turn's rendered prompt (chat template with the tools, generation prompt added)."""
    messages, tools = first_turn(toolset, limits, query)
    ids = tokenizer.apply_chat_template(
        to_template_messages(messages), tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    return len(ids)
