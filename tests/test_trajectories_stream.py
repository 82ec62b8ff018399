"""The streamed analysis (StepSink: rows → polars chunks as files are parsed, trajectory frame per
chunk) gives the same frames as the whole-list path, whatever the chunk size."""

from __future__ import annotations

import polars as pl

from fasbench.base.paths import data_dir
from fasbench.trajectories.analysis import StepSink, parse_paths, steps_frame, trajectory_frame

DEEPSEEK = data_dir() / "trajectories" / "mini-swe-agent-v2_deepseek-chat_swebench-lite-first100"


def test_chunked_frames_equal_whole_frames():
    trajs, _ = parse_paths([DEEPSEEK], progress=False, limit=10)
    whole = steps_frame(trajs)
    assert whole.height > 200
    sink, report = parse_paths([DEEPSEEK], progress=False, limit=10, sink=StepSink(chunk_rows=50))
    steps = sink.frame()
    assert len(sink.chunks) > 3 and report.to_dict()["parsed"] == 10
    assert steps.equals(whole)
    assert sink.trajectories().equals(trajectory_frame(whole))


def test_a_trajectory_id_split_over_chunks_is_computed_whole():
    trajs, _ = parse_paths([DEEPSEEK], progress=False, limit=3)
    sink = StepSink(chunk_rows=1)  # every trajectory its own chunk
    for item in trajs + trajs[:1]:  # the first one again, as a second file with the same id
        sink.append(item)
    t = sink.trajectories()
    assert t.height == 3 and t.equals(trajectory_frame(sink.frame()))
    assert not t.select(pl.struct("dataset", "trajectory_id").is_duplicated().any()).item()
