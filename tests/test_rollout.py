"""The batched rollout engine (fasbench/rl/rollout.py): batched = one at a time, the cache across turns
= a fresh forward of the whole conversation, the per-turn cap, masks and log-probs aligned with the
tokens, and the conversation the model reads = the chat template's rendering of the harness's chat."""

from __future__ import annotations

import polars as pl
import pytest
import torch
from tools_fixture import make_repo

from fasbench.harness import Limits
from fasbench.models import load_model, load_tokenizer, to_template_messages
from fasbench.records import Gold, Task
from fasbench.rl.decode import BatchDecoder
from fasbench.rl.episode_state import EpisodeState
from fasbench.rl.rollout import rollout_group
from fasbench.tools import ToolLimits

LIMITS = Limits(max_turns=3, max_calls_per_turn=4, tool=ToolLimits(max_output_chars=300, prompt="compact"))


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model, tok = load_model("tiny")
    model.eval()
    return model, tok


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    root = make_repo(tmp_path_factory.mktemp("roll"))
    gold = Gold(edited={"src/pkg/auth.py": [[4, 6]]})
    return [
        Task(id=f"t{i}", query=q, repo="demo", gold=gold, root=str(root))
        for i, q in enumerate(["where is Login defined", "find the check function", "what is TOKEN_TTL"])
    ]


def _key(r):
    return r.task_id, r.sample, r.ids, r.gen_mask, [t.text for t in r.trace.turns]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_batched_equals_one_at_a_time(tiny, tasks, temperature):
    model, tok = tiny
    kw = dict(limits=LIMITS, reward="relace-mini", max_new_tokens=12, temperature=temperature, seed=3)
    batched = rollout_group(model, tok, tasks, k=2, **kw)
    single = [r for t in tasks for r in rollout_group(model, tok, [t], k=2, **kw)]
    assert [_key(r) for r in batched] == [_key(r) for r in single]
    for a, b in zip(batched, single):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    if temperature:  # samples of one task differ (their own generators), and a rerun repeats them
        assert batched[0].ids != batched[1].ids
        assert [_key(r) for r in rollout_group(model, tok, tasks, k=2, **kw)] == [_key(r) for r in batched]


def test_cache_across_turns_equals_reencoding_and_logprobs_line_up(tiny, tasks):
    model, tok = tiny
    rs = rollout_group(
        model, tok, tasks, k=2, limits=LIMITS, reward="relace-mini", max_new_tokens=10, temperature=1.0, seed=1
    )
    for r in rs:
        assert len(r.ids) == len(r.gen_mask) == len(r.logprobs)
        assert sum(r.gen_mask) == r.new_tokens == sum(t.completion_tokens for t in r.trace.turns)
        assert r.trace.n_turns >= 2  # the cache was extended at least once
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([r.ids])).logits[0].float()
        lp = torch.log_softmax(logits / 1.0, dim=-1)
        want = [float(lp[p - 1, r.ids[p]]) for p, g in enumerate(r.gen_mask) if g]
        got = [x for x, g in zip(r.logprobs, r.gen_mask) if g]
        assert got == pytest.approx(want, abs=1e-4)
        assert all(x == 0.0 for x, g in zip(r.logprobs, r.gen_mask) if not g)


def test_cap_holds(tiny, tasks):
    model, tok = tiny
    rs = rollout_group(
        model, tok, tasks[:2], k=2, limits=LIMITS, reward="relace-mini", max_new_tokens=5, temperature=1.0, seed=2
    )
    for r in rs:
        assert all(t.completion_tokens <= 5 for t in r.trace.turns)
        cut = r.trace.meta["rollout"]["capped_turns"]
        assert r.capped == bool(cut)
        assert all(r.trace.turns[i].completion_tokens == 5 for i in cut)
        assert r.trace.n_turns <= LIMITS.max_turns and r.score is not None


def _reply_text(tok, chat, message, schemas):
    """The text the chat template renders for ``message`` after ``chat`` (what a perfect model writes)."""
    a = tok.apply_chat_template(to_template_messages(chat), tools=schemas, add_generation_prompt=True, tokenize=False)
    b = tok.apply_chat_template(to_template_messages(chat + [message]), tools=schemas, tokenize=False)
    assert b.startswith(a)
    return b[len(a) :].rstrip("\n")


def test_conversation_is_the_templates_rendering_of_the_harness_chat(tasks):
    tok = load_tokenizer("tiny")
    st = EpisodeState(tasks[0], "relace", LIMITS, tok, "test")
    replies = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "grep_search", "arguments": '{"query": "def Login"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "view_directory", "arguments": '{"path": "/repo/src"}'},
                },
            ],
        },
        {"role": "assistant", "content": "nothing to call"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {
                        "name": "report_back",
                        "arguments": '{"explanation": "x", "files": {"src/pkg/auth.py": [[4, 6]]}}',
                    },
                }
            ],
        },
    ]
    for msg in replies:
        st.begin_turn()
        st.consume_pending()
        seen = tok.decode(st.ids)
        # what the harness gives a policy now: the trace's chat with the last results, and the pending notes
        text = _reply_text(tok, st.trace.to_messages(last_results=True) + st.notes, msg, st.schemas)
        assert seen.endswith("<|im_start|>assistant\n")
        ids = tok(text, add_special_tokens=False)["input_ids"]
        st.end_turn(ids, [0.0] * len(ids), False, 100)
    tr = st.finish()
    assert tr.stop_reason == "reported" and [len(t.calls) for t in tr.turns] == [2, 0, 1]
    assert "def Login" in tr.turns[0].results[0].output  # the real tool ran
    assert tr.turns[1].notes == [] and tr.turns[2].notes[0]["content"].startswith("Your reply had no tool call")
    assert tr.meta["final_note_turn"] == 2 and "last turn" in tr.turns[2].notes[-1]["content"]
    whole = tok.apply_chat_template(to_template_messages(tr.to_messages()), tools=st.schemas, tokenize=False)
    assert st.ids == tok(whole.rstrip("\n"), add_special_tokens=False)["input_ids"]
    assert st.gen_mask.count(1) == sum(t.completion_tokens for t in tr.turns)


def test_decoder_rows_leave_and_holes_are_dropped(tiny):
    model, tok = tiny
    dec = BatchDecoder(model, tok.eos_token_id, tok.pad_token_id, temperature=0.0)
    seqs = [
        tok("hello world", add_special_tokens=False)["input_ids"],
        tok("hello there, a longer one", add_special_tokens=False)["input_ids"],
    ]
    dec.prefill(seqs, [torch.Generator().manual_seed(0)] * 2)
    dec.decode_turn(3)
    dec.keep_rows([0])
    assert dec.mask.shape[0] == 1 and bool(dec.mask.all())  # row 1's pads went with it
    assert dec.cache.layers[0].get_seq_length() == dec.mask.shape[1]


@pytest.mark.parametrize("given, want", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_at_barriers_unless_the_user_says(given, want):
    """fasbench sets OMP_WAIT_POLICY=PASSIVE before torch loads (spinning threads cost 4-6x the CPU of a
    decode step on a busy machine; fasbench/__init__.py), and keeps a user's own setting."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run(
        [sys.executable, "-c", "import fasbench, os; print(os.environ['OMP_WAIT_POLICY'])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == want


def test_sampled_and_greedy_evaluation_feeds_the_before_after_table(tiny, tasks, tmp_path):
    from fasbench.rl.mini import before_after_table
    from fasbench.rl.sampled_eval import EVAL_MEASURES, evaluate_sampled, task_means

    model, tok = tiny
    kw = dict(k=3, limits=LIMITS, reward="relace-mini", max_new_tokens=6, max_batch=4)
    rows = evaluate_sampled(model, tok, tasks, out=tmp_path / "t.jsonl", seed=0, **kw)
    assert rows.height == 3 * 3 + 3 and rows.filter(pl.col("mode") == "greedy").height == 3
    assert set(EVAL_MEASURES) <= set(rows.columns) and {"first_calls", "capped", "new_tokens"} <= set(rows.columns)
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == rows.height
    # samples of a task differ, greedy is one rollout a task
    s = rows.filter((pl.col("mode") == "sampled") & (pl.col("task_id") == "t0"))
    assert s["sample"].to_list() == [0, 1, 2]
    before, after = task_means(rows), task_means(evaluate_sampled(model, tok, tasks, seed=1, **kw))
    assert before["n"].to_list() == [3, 3, 3] and task_means(rows, "greedy")["n"].to_list() == [1, 1, 1]
    t = before_after_table(before, after, EVAL_MEASURES)
    assert t["measure"].to_list() == list(EVAL_MEASURES) and t["n"].to_list() == [3] * len(EVAL_MEASURES)
    with pytest.raises(ValueError, match="mode 'both' unknown"):
        task_means(rows, "both")


def test_a_conversation_past_the_context_budget_ends_as_a_policy_error(tiny, tasks):
    model, tok = tiny
    first = rollout_group(
        model, tok, tasks[:1], k=1, limits=LIMITS, reward="relace-mini", max_new_tokens=8, temperature=0.0
    )[0]
    budget = first.prompt_len + 8 + 4  # the first turn fits, the second does not
    r = rollout_group(
        model,
        tok,
        tasks[:1],
        k=1,
        limits=LIMITS,
        reward="relace-mini",
        max_new_tokens=8,
        temperature=0.0,
        max_context=budget,
    )[0]
    assert r.trace.n_turns == 1 and r.trace.stop_reason == "policy_error"
    assert f"context budget of {budget} tokens" in r.trace.error and r.reward == 0.0


def test_narrowing_a_turn_to_the_rows_still_decoding_changes_nothing(tiny):
    """Once half the rows have ended their reply the rest decode in a copy of their own rows; the turn's
    tokens and log-probs, and the following turns, are those of the full batch."""
    model, tok = tiny
    prompts = [
        tok(t, add_special_tokens=False)["input_ids"] for t in ("a b c", "hello there world", "x", "def f(): pass")
    ]

    def run(narrow, stops):
        dec = BatchDecoder(model, stops, tok.pad_token_id, temperature=1.0)
        dec.prefill(prompts, [torch.Generator().manual_seed(i) for i in range(4)])
        out = []
        for turn in range(3):
            got = dec.decode_turn(30, narrow=narrow)
            out.append(got)
            dec.extend([[11 + turn, 12] for _ in prompts])
        return out, dec

    # the stop tokens: what rows 0 and 1 sample at steps 2 and 4 (each row samples from its own generator)
    dry, _ = run(False, [-1])
    stops = [dry[0][0][0][2], dry[0][1][0][4]]
    (a, da), (b, db) = run(True, stops), run(False, stops)
    assert da.narrowed > 0 and db.narrowed == 0
    assert [[t for t, _, _ in turn] for turn in a] == [[t for t, _, _ in turn] for turn in b]
    for ta, tb in zip(a, b):
        for (_, la, ca), (_, lb, cb) in zip(ta, tb):
            assert la == pytest.approx(lb, abs=1e-4) and ca == cb
    # the columns differ (a narrowed-out row reads its end token with the next segment), the sequences do not
    assert torch.equal(da.mask.sum(1), db.mask.sum(1)) and torch.equal(da.npos, db.npos)
