"""The ids report contract beside free-form citation, on the same tasks and policies (issue 39 item 1).

    python benchmarks/report_contract.py LABEL FREE_RUN IDS_RUN [LABEL FREE_RUN IDS_RUN ...]

Each run is a ``fasbench eval`` run directory (``--report-contract free`` and ``ids``, everything else
equal). Per pair, on the tasks both ran (failed episodes left out): the share of cited lines never shown
to the searcher (``cited_lines_unseen / cited_lines``, summed over episodes), the citations the renderer
dropped, the file-level score (``file_f2``) of each with the paired difference ids − free and its 95%
interval (``fasbench.evaluation.runs.paired_diff``: exact sign-flip up to 20 differing tasks), ``line_f1``, turns, and
the chat's tokens per episode (every message the policy saw, counted with the offline SmolLM2 tokenizer,
``fasbench.trajectories.tokens``: the IDs' cost). The last line is the ratio of chat tokens, ids / free,
over all pairs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from fasbench.evaluation.runs import paired_diff
from fasbench.records import read_traces
from fasbench.trajectories.tokens import count_tokens_batch


def chat_tokens(run: Path) -> dict[str, int]:
    """task id -> tokens of the chat the policy saw (prompt, replies with their calls, results)."""
    out = {}
    for tr in read_traces(run / "traces.jsonl"):
        parts = []
        for m in tr.to_messages(last_results=False):
            parts.append(str(m.get("content") or ""))
            parts += [c["function"]["arguments"] for c in m.get("tool_calls") or []]
        out[tr.task_id] = sum(count_tokens_batch(parts))
    return out


def frame(run: Path) -> pl.DataFrame:
    df = pl.read_parquet(run / "summary.parquet")
    if "failed" in df.columns:
        df = df.filter(~df["failed"].fill_null(False))
    tok = chat_tokens(run)
    return df.with_columns(pl.col("task_id").replace_strict(tok, default=None).alias("chat_tokens"))


def pair(label: str, free_dir: str, ids_dir: str) -> tuple[dict, float, float]:
    a, b = frame(Path(free_dir)), frame(Path(ids_dir))
    j = a.join(b, on="task_id", suffix="_ids").sort("task_id")
    d = paired_diff(j["file_f2"].to_list(), j["file_f2_ids"].to_list())

    def share(sfx):
        cited = j[f"cited_lines{sfx}"].sum()
        return j[f"cited_lines_unseen{sfx}"].sum() / cited if cited else float("nan")

    row = {
        "policy": label,
        "n": j.height,
        "unseen_free": share(""),
        "unseen_ids": share("_ids"),
        "dropped_ids": int(j["cited_ids_dropped_ids"].fill_null(0).sum()),
        "file_f2_free": j["file_f2"].mean(),
        "file_f2_ids": j["file_f2_ids"].mean(),
        "diff": d["diff"],
        "lo": d["lo"],
        "hi": d["hi"],
        "line_f1_free": j["line_f1"].mean(),
        "line_f1_ids": j["line_f1_ids"].mean(),
        "turns_free": j["turns"].mean(),
        "turns_ids": j["turns_ids"].mean(),
        "tokens_free": j["chat_tokens"].mean(),
        "tokens_ids": j["chat_tokens_ids"].mean(),
    }
    return row, float(j["chat_tokens"].sum()), float(j["chat_tokens_ids"].sum())


def main(argv: list[str]) -> None:
    if len(argv) < 3 or len(argv) % 3:
        raise SystemExit(__doc__.split("\n\n")[1].strip())
    rows, free_t, ids_t = [], 0.0, 0.0
    for i in range(0, len(argv), 3):
        r, f, t = pair(*argv[i : i + 3])
        rows.append(r)
        free_t, ids_t = free_t + f, ids_t + t
    print(
        "| policy | n | unseen cited share free → ids | dropped (ids) | file_f2 free → ids | ids − free [95% CI] "
        "| line_f1 free → ids | turns free → ids | chat tokens free → ids |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['policy']} | {r['n']} | {r['unseen_free']:.3f} → {r['unseen_ids']:.3f} | {r['dropped_ids']} "
            f"| {r['file_f2_free']:.3f} → {r['file_f2_ids']:.3f} | {r['diff']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}] "
            f"| {r['line_f1_free']:.3f} → {r['line_f1_ids']:.3f} | {r['turns_free']:.2f} → {r['turns_ids']:.2f} "
            f"| {r['tokens_free']:.0f} → {r['tokens_ids']:.0f} |"
        )
    print(f"chat tokens ids / free: {ids_t / free_t:.3f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
