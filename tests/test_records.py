"""Records: JSON round trip, schema checks, JSONL append / truncation handling, chat messages."""

import json

import pytest

from fasbench.records import (
    Gold,
    RecordError,
    Report,
    Task,
    ToolCall,
    ToolResult,
    Trace,
    Turn,
    append_jsonl,
    iter_jsonl,
    read_tasks,
    read_traces,
    repair_jsonl,
    write_tasks,
)


def make_trace(task_id="t1"):
    t0 = 1000.0
    turn = Turn(
        index=0,
        text="look",
        calls=[ToolCall("c0", "grep_search", {"query": "foo"}), ToolCall("c1", "view_file", '{"path": "a.py"')],
        results=[
            ToolResult("c0", "a.py:1:foo", False, t0, t0 + 0.01),
            ToolResult("c1", "Error: bad JSON", True, t0, t0 + 0.001),
        ],
        prompt_tokens=100,
        completion_tokens=20,
        model_started_at=t0 - 1,
        model_ended_at=t0,
        tools_started_at=t0,
        tools_ended_at=t0 + 0.01,
    )
    turn2 = Turn(
        index=1,
        text="done",
        calls=[ToolCall("c2", "report_back", {"explanation": "e", "files": {"a.py": [[1, 2]]}})],
        results=[ToolResult("c2", "ok", False, t0 + 1, t0 + 1)],
    )
    return Trace(
        task_id=task_id,
        policy="scripted",
        toolset="relace",
        turns=[turn, turn2],
        report=Report({"a.py": [[1, 2]]}, "e"),
        started_at=t0 - 1,
        ended_at=t0 + 1.5,
        prompt=[{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
    )


def test_trace_round_trip(tmp_path):
    tr = make_trace()
    back = Trace.from_dict(json.loads(tr.to_json()))
    assert back == tr
    p = tmp_path / "traces.jsonl"
    append_jsonl(p, [tr])
    append_jsonl(p, [make_trace("t2")])
    got = read_traces(p)
    assert [t.task_id for t in got] == ["t1", "t2"] and got[0] == tr
    assert got[0].turns[0].results[0].duration == pytest.approx(0.01)
    assert got[0].n_calls == 3 and got[0].wall_time == pytest.approx(2.5)


def test_to_messages_openai_style():
    msgs = make_trace().to_messages()  # the chat the policy saw: it ends with its last reply
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert [m["role"] for m in make_trace().to_messages(last_results=True)][-1] == "tool"
    a = msgs[2]
    assert a["tool_calls"][0] == {
        "id": "c0",
        "type": "function",
        "function": {"name": "grep_search", "arguments": '{"query": "foo"}'},
    }
    # malformed arguments are kept verbatim
    assert a["tool_calls"][1]["function"]["arguments"] == '{"path": "a.py"'
    assert msgs[3] == {"role": "tool", "tool_call_id": "c0", "name": "grep_search", "content": "a.py:1:foo"}
    assert make_trace().to_messages(include_prompt=False)[0]["role"] == "assistant"


def test_notes_are_part_of_the_conversation_and_round_trip():
    tr = make_trace()
    note = {"role": "user", "content": "last turn: answer now"}
    tr.turns[1].notes = [note]
    back = Trace.from_dict(json.loads(tr.to_json()))
    assert back == tr and back.schema_version == 2
    assert [m["role"] for m in back.to_messages()] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    assert "notes" not in make_trace().to_dict()["turns"][0]  # empty notes keep the JSON as before
    tr.stop_reason, tr.tail_notes = "policy_error", [note]  # a failed later call saw the results and the note
    assert [m["role"] for m in tr.to_messages()][-3:] == ["assistant", "tool", "user"]


def test_schema_1_trace_with_unrecorded_notes_is_refused_until_restored():
    from fasbench.harness import NO_CALL_NOTE, restore_notes
    from fasbench.tools import make_toolset

    d = make_trace().to_dict()
    d["schema_version"] = 1
    d["turns"].insert(1, {"index": 1, "text": "hmm", "calls": [], "results": []})  # a no-call turn
    d["meta"] = {"final_note_turn": 2}
    tr = Trace.from_dict(d)
    assert tr.schema_version == 1 and tr.notes_unrecorded()
    with pytest.raises(RecordError, match="restore_notes"):
        tr.to_messages()
    msgs = restore_notes(tr).to_messages()
    users = [m["content"] for m in msgs if m["role"] == "user"]
    assert users[1:] == [NO_CALL_NOTE, make_toolset("relace", ".").final_turn_note()]
    assert Trace.from_dict({**make_trace().to_dict(), "schema_version": 1}).to_messages()  # nothing to restore


def test_truncated_last_line_is_skipped_and_repaired(tmp_path):
    p = tmp_path / "t.jsonl"
    append_jsonl(p, [make_trace("a"), make_trace("b")])
    with open(p, "a") as f:
        f.write(make_trace("c").to_json()[:50])  # a run killed mid-write
    with pytest.warns(UserWarning, match="truncated"):
        assert [t.task_id for t in read_traces(p)] == ["a", "b"]
    assert repair_jsonl(p) == 50
    append_jsonl(p, [make_trace("c")])
    assert [t.task_id for t in read_traces(p)] == ["a", "b", "c"]
    # a corrupt line in the middle is an error, not silently dropped
    lines = p.read_text().splitlines(keepends=True)
    p.write_text(lines[0] + "{oops\n" + "".join(lines[1:]))
    with pytest.raises(RecordError, match="line 2"):
        list(iter_jsonl(p))


def test_task_and_gold(tmp_path):
    g = Gold(
        edited={"a.py": [[1, 3]], "new.py": []},
        viewed={"b.py"},
        source="agent-trace",
        variants={"changed": {"a.py": [[2, 2]]}},
    )
    t = Task(id="x", query="q", repo="o/r", gold=g, base_commit="abc1234", version="1.0", split="test")
    write_tasks(tmp_path / "t.jsonl", [t])
    (back,) = read_tasks(tmp_path / "t.jsonl")
    assert back == t and back.gold.viewed == {"b.py"}
    assert g.with_variant("changed").edited == {"a.py": [[2, 2]], "new.py": []}
    with pytest.raises(RecordError, match="variant"):
        g.with_variant("nope")
    # the GOLD JSON of the CLI: bare path list = files without line gold
    assert Gold.from_dict({"edited": ["a.py"], "viewed": None}).edited == {"a.py": []}


@pytest.mark.parametrize(
    "bad,msg",
    [
        ({"viewed": []}, "edited"),
        ({"edited": {"a.py": [[1]]}}, "start, end"),
        ({"edited": {"a.py": [["1", 2]]}}, "integers"),
        ({"edited": "a.py"}, "expected"),
        ({"edited": {}, "viewed": "a.py"}, "viewed"),
    ],
)
def test_bad_gold_names_the_field(bad, msg):
    with pytest.raises(RecordError, match=msg):
        Gold.from_dict(bad)


def test_bad_task_and_newer_schema():
    with pytest.raises(RecordError, match="query"):
        Task.from_dict({"id": "x", "repo": "r", "gold": {"edited": {}}})
    with pytest.raises(RecordError, match="newer"):
        Trace.from_dict({"task_id": "x", "policy": "p", "toolset": "relace", "schema_version": 99})


def test_read_records_json_list_jsonl_gzip_and_bounds(tmp_path):
    """The one JSON-or-JSONL reader of the importers: a list, JSONL (one line too), gzip; a truncated
    last line skipped with a warning; a FIFO, an oversize file and a non-list refused with the path."""
    import gzip
    import os
    import warnings

    from fasbench.records import RecordError, read_records

    (tmp_path / "a.json").write_text('[{"a": 1}, {"a": 2}]')
    (tmp_path / "b.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3')
    (tmp_path / "c.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n'))
    (tmp_path / "e.json").write_text('"text"')
    (tmp_path / "f.jsonl").write_text('{"a": 1}\n{"a"\n{"a": 3}\n')
    assert read_records(tmp_path / "a.json") == [{"a": 1}, {"a": 2}]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert read_records(tmp_path / "b.jsonl") == [{"a": 1}, {"a": 2}]
    assert any("truncated last line 4" in str(x.message) for x in w)
    assert read_records(tmp_path / "c.jsonl") == [{"a": 1}]
    assert read_records(tmp_path / "d.jsonl.gz") == [{"a": 1}, {"a": 2}]
    for name, why in (("e.json", "expected a JSON list"), ("f.jsonl", "invalid JSONL line 2")):
        with pytest.raises(RecordError, match=why) as e:
            read_records(tmp_path / name)
        assert str(tmp_path / name) in str(e.value)
    with pytest.raises(RecordError, match="larger than 10 bytes"):
        read_records(tmp_path / "a.json", max_bytes=10)
    with pytest.raises(FileNotFoundError):
        read_records(tmp_path / "missing.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")
    with pytest.raises(RecordError):
        read_records(tmp_path / "fifo.jsonl")
