"""What a chat template renders of a conversation, for comparing chats from different sources."""

from fasbench.models import to_template_messages


def plain(msgs: list[dict]) -> list[dict]:
    """Messages without the call ids (the harness keeps the model's ids, TRL's tool loop has none;
    the templates render neither), arguments as objects."""
    out = []
    for m in to_template_messages(msgs):
        m = {k: v for k, v in m.items() if k != "tool_call_id"}
        if m.get("tool_calls"):
            m["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in m["tool_calls"]]
        out.append(m)
    return out
