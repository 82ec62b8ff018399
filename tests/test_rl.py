"""GRPO over the harness (fasbench/rl/): the environment's tools are the harness's tools, the
episode and reward are read as evaluation reads them, and a tiny GRPO run trains and resumes.

Corpus: a real git repository built in a tmp dir (tasks mined from its history with
``fasbench.data.gitmine``; each task's corpus is a real ``git worktree`` at its parent commit)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import textwrap
from pathlib import Path

import polars as pl
import pytest
from chat_view import plain

from fasbench.evaluation.checkpoints import evaluate_checkpoint
from fasbench.evaluation.episodes import COLUMNS
from fasbench.harness import Limits, execute_calls, initial_messages, run_episode
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.records import Reply, Task, ToolCall, turn_messages
from fasbench.rl.config import LOG_FILE, RLConfig, load_config
from fasbench.rl.env import environment_class, harness_schemas
from fasbench.rl.episode_reward import EpisodeReward
from fasbench.rl.plots import before_after
from fasbench.rl.run_analysis import read_rollouts
from fasbench.rl.train import train as rl_train
from fasbench.scoring.reward import score_report
from fasbench.tools import TOOLSETS, ToolLimits, make_toolset, tool_names
from fasbench.training.log import read_log

# ---------------------------------------------------------------- a real small corpus


# fixed commit dates: the commit hashes (in the task ids, hence the order and sampling of the GRPO rollouts)
# are the same in every run; with the clock's dates a run now and then drew groups without reward variance
# (no gradient, "GRPO did not change the weights")
_GIT_DATES = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def _git(root, *a):
    subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True, env={**os.environ, **_GIT_DATES})


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    (root / "calc").mkdir()
    (root / "calc/__init__.py").write_text("from calc.ops import add, sub\n")
    ops = textwrap.dedent('''\
        def add(a, b):
            """Return a plus b."""
            return a + b


        def sub(a, b):
            """Return a minus b."""
            return a + b
        ''')
    (root / "calc/ops.py").write_text(ops)
    (root / "calc/fmt.py").write_text("def show(x):\n    return str(x)\n")
    (root / "README.md").write_text("# calc\nA small calculator.\n" + "filler line\n" * 300)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "initial calculator")
    (root / "calc/ops.py").write_text(ops.replace('minus b."""\n    return a + b', 'minus b."""\n    return a - b'))
    _git(root, "commit", "-qam", "Fix sub: it added instead of subtracting")
    (root / "calc/fmt.py").write_text("def show(x, digits=2):\n    return f'{x:.{digits}f}'\n")
    _git(root, "commit", "-qam", "show() should format numbers with a fixed number of digits")
    return root


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    from fasbench.data.gitmine import mine

    base = tmp_path_factory.mktemp("rlrepo")
    repo = make_repo(base / "calc-repo")
    found, _ = mine(repo)
    assert len(found) == 2
    for t in found:  # the corpus of a task: a worktree at its parent commit
        wt = base / f"wt-{t.base_commit[:8]}"
        _git(repo, "worktree", "add", "-q", "--detach", str(wt), t.base_commit)
        t.root = str(wt)
    return found


# ---------------------------------------------------------------- tools: same schemas, same observations

_VALIDATION_ONLY = {"default", "minItems", "maxItems", "minimum", "maximum"}


def _core(schema):
    """A JSON schema without what Python type hints cannot express (validation keywords, closed
    objects); ``["T", "null"]`` written as transformers writes it (``nullable``)."""
    if isinstance(schema, list):
        return [_core(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in _VALIDATION_ONLY or (k == "additionalProperties" and v is False):
            continue
        if k == "properties":
            out[k] = {p: _core(s) for p, s in v.items() if p.isidentifier()}
        elif k == "required":
            out[k] = [p for p in v if p.isidentifier()]
        else:
            out[k] = _core(v)
    if isinstance(out.get("type"), list) and "null" in out["type"]:
        rest = [t for t in out["type"] if t != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
        out["nullable"] = True
    return out


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_method_schemas_are_the_harness_schemas(toolset):
    from transformers.utils import get_json_schema

    env = environment_class(toolset, Limits())()
    schemas = harness_schemas(toolset, Limits())
    public = sorted(n for n in dir(type(env)) if not n.startswith("_") and n != "reset")
    assert public == sorted(s["function"]["name"] for s in schemas)
    for s in schemas:
        got = get_json_schema(getattr(env, s["function"]["name"]))["function"]
        assert got["name"] == s["function"]["name"]
        assert got["description"] == s["function"]["description"]
        assert got["parameters"] == _core(s["function"]["parameters"])


def _same_calls(toolset, root):
    """Calls that meet each tool's edge cases, in the tool set's own names (the Relace or the FastContext
    tools: the fork has the latter's)."""
    if "view_file" in tool_names(toolset):
        return [
            ("grep_search", {"query": "def sub"}),
            ("grep_search", {"query": "return", "include_pattern": "*.py", "case_sensitive": False}),
            ("view_file", {"path": "/repo/calc/ops.py", "view_range": [5, 8]}),
            ("view_file", {"path": "README.md"}),  # long file: the "more lines below" note
            ("view_file", {"path": "../../etc/passwd"}),  # outside the sandbox
            ("view_file", {"path": "calc/ops.py", "view_range": [9, 3]}),  # bad range
            ("view_directory", {"path": "/repo"}),
            ("bash", {"command": "git log --oneline -3"}),
            ("bash", {"command": "rm -rf calc"}),  # not allowed
            ("grep_search", {"query": "x", "bogus": 1}),  # schema violation
            ("report_back", {"explanation": "sub adds", "files": {"calc/ops.py": [[5, 8]]}}),
        ]
    return [
        ("Grep", {"pattern": "def sub", "output_mode": "content", "-i": True, "-C": 1}),
        ("Grep", {"pattern": "def", "glob": "*.py"}),
        ("Glob", {"pattern": "**/*.py"}),
        ("Read", {"path": "calc/ops.py", "offset": 5, "limit": 4}),
        ("Read", {"path": "README.md"}),  # long: shown whole (FastContext has no output cap, as released)
        ("Grep", {"pattern": "def", "head_limit": 2}),  # cut by the tool's own head_limit, with its note
        ("Read", {"path": "nope.py"}),
        ("Read", {"path": "calc/ops.py", "offset": 0}),  # as released: the last line first, as line 0
        ("Grep", {"path": "calc"}),  # schema violation (pattern is required)
    ]


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_environment_observations_equal_harness(tasks, toolset):
    task = tasks[0]
    lim = Limits(max_turns=3, max_calls_per_turn=20, tool=ToolLimits(max_output_chars=1500))
    ts = make_toolset(toolset, task.root, lim.tool)
    env = environment_class(toolset, lim)()
    env.reset(task=json.dumps(task.to_dict()))
    env._begin_turn()
    calls = _same_calls(toolset, task.root)
    want = execute_calls(ts, [ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)], 20)
    got = [getattr(env, n)(**a) for n, a in calls]
    assert got == [r.output for r in want]
    assert any(r.is_error for r in want) and not all(r.is_error for r in want)
    assert any("truncated" in r.output or "more lines below" in r.output or "continue with" in r.output for r in want)


def test_calls_per_turn_limit_and_calls_after_report(tasks):
    task = tasks[1]
    lim = Limits(max_turns=3, max_calls_per_turn=2)
    ts = make_toolset("relace", task.root, lim.tool)
    env = environment_class("relace", lim)()
    env.reset(task=task.to_dict())
    env._begin_turn()
    calls = [ToolCall(f"c{i}", "grep_search", {"query": q}) for i, q in enumerate(["def", "return", "show"])]
    want = execute_calls(ts, calls, lim.max_calls_per_turn)
    got = [env.grep_search(**c.arguments) for c in calls]
    assert got == [r.output for r in want]
    assert "more than 2 tool calls in one turn" in got[2]
    env._begin_turn()  # a new turn: the count starts again
    assert env.grep_search(query="def show") == ts.call("grep_search", {"query": "def show"})[0]
    env.report_back(explanation="here", files={"calc/fmt.py": [[1, 2]]})
    env._begin_turn()
    assert env.grep_search(query="def").startswith("Error: the search already ended with report_back")


def test_episode_and_reward_read_as_evaluation_reads_them(tasks):
    """The same replies through run_episode and through the environment give the same report,
    turns and reward."""
    task = tasks[0]
    lim = Limits(max_turns=4, max_calls_per_turn=4)
    replies = [
        Reply(
            "Looking.",
            [ToolCall("a", "grep_search", {"query": "def show"}), ToolCall("b", "view_directory", {"path": "/repo"})],
        ),
        Reply("Reading.", [ToolCall("c", "view_file", {"path": "calc/fmt.py"})]),
        Reply(
            "Done.", [ToolCall("d", "report_back", {"explanation": "show formats", "files": {"calc/fmt.py": [[1, 2]]}})]
        ),
    ]
    trace = run_episode(task, ScriptedPolicy(list(replies)), "relace", lim)
    env = environment_class("relace", lim)()
    env.reset(task=json.dumps(task.to_dict()))
    completion = []
    for r in replies:  # what TRL's loop does: generate (new turn), run each call, append tool messages
        env._begin_turn()
        msg = {
            "role": "assistant",
            "content": r.text,
            "tool_calls": [
                {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in r.calls
            ],
        }
        completion.append(msg)
        for c in r.calls:
            completion.append({"role": "tool", "name": c.name, "content": getattr(env, c.name)(**c.arguments)})
    ep = env._episode(completion)
    assert ep.report == trace.report and ep.n_turns == trace.n_turns == 3 and ep.n_calls == trace.n_calls
    assert [r.output for t in ep.turns for r in t.results] == [r.output for t in trace.turns for r in t.results]
    want = score_report("relace", task.gold, trace.report, trace.n_turns, root=task.root)
    reward = EpisodeReward("relace", out=None)
    assert reward([None], [completion], environments=[env]) == [want.value]
    assert reward.batch[0].parts == want.parts and want.value > 0
    # the harness's own messages of those turns are what the completion holds
    assert [m["content"] for m in completion if m["role"] == "tool"] == [
        m["content"] for t in trace.turns for m in turn_messages(t)[1:]
    ]


def test_rl_judge_is_asked_about_the_rollouts_own_query(tasks):
    """A FastContext rollout on a task with a generated query: the judge request carries that query
    (the release judges against the rollout's own <query>), not the task's problem statement."""
    from fasbench.scoring.reward import judge_requests
    from fasbench.tools.fastcontext_query import FC_QUERY

    task = Task.from_dict(tasks[0].to_dict())
    task.meta = {**(task.meta or {}), FC_QUERY: "Where are numbers formatted for display?"}
    lim = Limits(max_turns=3, max_calls_per_turn=4)
    env = environment_class("fastcontext", lim)()
    env.reset(task=json.dumps(task.to_dict()))
    env._begin_turn()
    answer = "<final_answer>\ncalc/fmt.py:1-2 (show formats)\n</final_answer>"
    completion = [{"role": "assistant", "content": answer}]
    ep = env._episode(completion)
    assert ep.meta["query"] == "Where are numbers formatted for display?" and ep.meta["query_source"] == "generated"
    ((message, _contents),) = judge_requests([(ep, task)])
    assert "Where are numbers formatted for display?" in message and task.query not in message


@pytest.mark.slow
@pytest.mark.parametrize(
    "reward,parts",
    [("relace", {"accuracy", "turn_penalty"}), ("fastcontext", {"cited", "score_file", "f0_5", "over_penalty"})],
)
def test_incentive_landscape_has_the_rewards_own_parts(tmp_path, reward, parts):
    """The landscape's rows are episode-table rows (fasbench.evaluation.episodes) with the grid in front: each
    reward's parts get their own reward_NAME__PART columns (none borrowed from another reward, no
    NaN), the reward recomputed from its parts matches, and the figure plots those parts by turns used."""
    from fasbench.evaluation.episodes import part_columns, reward_column
    from fasbench.policies.toy import make_corpus, toy_tasks
    from fasbench.rl.plots import landscape
    from fasbench.rl.run_analysis import incentive_landscape

    tasks = toy_tasks(make_corpus(tmp_path / "toy"))[:3]
    land = incentive_landscape(tasks, "relace", reward, turns=(2, 3), calls=(1, 3), progress=False)
    assert land.height == 2 * 2 * len(tasks)
    assert land.columns[:2] == ["plan_turns", "plan_calls"] and set(COLUMNS) <= set(land.columns)
    pre = reward_column(reward) + "__"
    cols = {c[len(pre) :] for c in part_columns(land.columns, reward)}
    assert parts <= cols
    assert {c for c in land.columns if c.startswith("reward_")} == {reward_column(reward)} | {pre + c for c in cols}
    assert not any(land[pre + c].is_nan().any() for c in cols)
    assert (land["reward"] == land[reward_column(reward)]).all()
    p = {c: land[pre + c] for c in cols}
    if reward == "relace":
        assert (land["reward"] - p["accuracy"] * p["turn_penalty"]).abs().max() < 1e-9
    else:
        want = p["cited"] * (1 + p["score_file"] + 2 * p["quality"])  # as released (no judge here)
        assert (land["reward"] - want).abs().max() < 1e-9
    assert land.filter(pl.col("reward") > 0).height > 0
    # the heuristic plans turns; the episode's own turns never exceed the plan
    assert (land["turns"] <= land["plan_turns"]).all()
    fig = landscape(land)
    assert {t.name for t in fig.data if t.type == "scatter"} == cols | {"reward"}
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert list(heat.y) == ["2", "3"] and list(heat.x) == ["1", "3"]
    want = land.group_by("plan_turns", "plan_calls").agg(pl.col("reward").mean())
    assert heat.z[1][0] == pytest.approx(
        want.filter((pl.col("plan_turns") == 3) & (pl.col("plan_calls") == 1))["reward"].item()
    )
    assert landscape(land, reward).data[-1].name == "reward"


def test_final_turn_note_only_before_the_last_turn(tasks):
    """The environment asks for the harness's last-turn note after the tool results of the turn
    before the last one, not earlier, not after a report; the trainer finds the rollout by the
    identity of its tool messages."""
    from fasbench.rl.train import _rollout_of

    lim = Limits(max_turns=3, max_calls_per_turn=4)
    env = environment_class("relace", lim)()
    env.reset(task=json.dumps(tasks[0].to_dict()))
    notes = []
    for _ in range(3):
        env._begin_turn()
        env.grep_search(query="def add")
        notes.append(env._final_note())
    assert notes == [None, make_toolset("relace", tasks[0].root).final_turn_note(), None]
    env.reset(task=json.dumps(tasks[0].to_dict()))
    env._begin_turn()
    env.report_back(explanation="add is here", files={"calc/ops.py": [[1, 3]]})
    env._begin_turn()
    assert env._final_note() is None  # the search already ended
    a, b = {"role": "tool", "name": "x", "content": "same"}, {"role": "tool", "name": "x", "content": "same"}
    comps = [[{"role": "assistant", "content": ""}, a], [{"role": "assistant", "content": ""}, b]]
    assert _rollout_of(comps, [b]) == 1 and _rollout_of(comps, [a]) == 0 and _rollout_of(comps, [dict(a)]) is None


def test_training_tasks_keep_the_config_fields_meaning(tasks, tmp_path):
    """``tasks`` / ``split`` / ``n_tasks`` / ``task_ids`` / ``corpus_mode`` through the shared task-set
    loader and corpus helper: n_tasks counts usable tasks (a task whose corpus cannot be built is
    skipped, its reason kept in OUT/skipped_tasks.jsonl), task_ids pick exactly those tasks from
    every split, in order, and an unusable or unknown one is an error there; a split in the name wins."""
    import dataclasses

    from fasbench.data.corpus import CorpusError
    from fasbench.data.tasksets import TaskSetError
    from fasbench.records import Gold, Task, append_jsonl, iter_jsonl
    from fasbench.rl.config import SKIPPED_FILE
    from fasbench.rl.tasks import load_rl_tasks

    good0, good1 = (dataclasses.replace(t, split=s) for t, s in zip(tasks, ("train", "dev")))
    bad = Task(
        id="no-corpus",
        query="q",
        repo="no-such/repo",
        gold=Gold(edited={"a.py": [[1, 2]]}),
        split="train",
        root=str(tmp_path / "missing"),
    )
    f = tmp_path / "tasks.jsonl"
    append_jsonl(f, [bad, good0, good1])

    def ids(**kw):
        cfg = RLConfig(**{"tasks": str(f), "corpus_mode": "offline", "output_dir": str(tmp_path / "run"), **kw})
        return [t.id for t in load_rl_tasks(cfg, progress=False)]

    assert ids(split="train", n_tasks=1) == [good0.id]  # the unusable first task is skipped, not counted
    assert [(r["task_id"], r["reason"]) for r in iter_jsonl(tmp_path / "run" / SKIPPED_FILE)] == [
        ("no-corpus", "no-pick")
    ]
    assert ids(split="dev", n_tasks=4) == [good1.id]
    assert ids(split=None, n_tasks=None) == [good0.id, good1.id]
    assert ids(split="train", n_tasks=2, tasks=f"{f}:dev") == [good1.id]  # the name's split wins
    assert ids(split="train", n_tasks=1, task_ids=[good1.id, good0.id]) == [good1.id, good0.id]
    with pytest.raises(CorpusError, match="no-corpus"):
        ids(task_ids=[good0.id, "no-corpus"])
    with pytest.raises(TaskSetError, match="ids not in task set .*: nope"):
        ids(task_ids=["nope"])
    only_bad = tmp_path / "only_bad.jsonl"
    append_jsonl(only_bad, [bad])
    with pytest.raises(ValueError, match="no usable task .*: 1 no-pick"):
        ids(tasks=str(only_bad))


def test_config_errors_and_profiles():
    for p in ("tiny", "cpu", "gpu"):
        cfg = load_config(p)
        assert cfg.beta == 0.0 or p != "gpu"
    gpu = load_config("gpu")
    assert (gpu.num_generations, gpu.max_turns, gpu.learning_rate, gpu.epsilon, gpu.epsilon_high, gpu.beta) == (
        16,
        8,
        1e-6,
        0.2,
        0.28,
        0.0,
    )
    from fasbench.rl.train import grpo_args

    args = grpo_args(gpu, use_cpu=True)  # the GPU profile's TRL config loads here too
    assert args.max_tool_calling_iterations == 7 and args.use_vllm
    with pytest.raises(ValueError, match="unknown field 'nonsense'"):
        load_config("tiny", {"nonsense": 1})
    with pytest.raises(ValueError, match="reward 'nope' unknown"):
        RLConfig(reward="nope")
    with pytest.raises(ValueError, match="split 'final' unknown"):
        RLConfig(split="final")
    with pytest.raises(ValueError, match="corpus_mode 'cloud' unknown"):
        RLConfig(corpus_mode="cloud")
    with pytest.raises(ValueError, match="no shipped profile"):
        load_config("no-such-profile")


# ---------------------------------------------------------------- a tiny GRPO run


def teach(tasks, cfg: RLConfig, steps: int = 120, lr: float = 3e-3) -> Path:
    """Imitation warm-up of the random tiny model on two episodes per task (a grep, then
    report_back, in the harness's messages): one reports the gold file, one a wrong file, so that its
    GRPO rollouts call the harness tools at all and differ in reward (a warm-up that always answers
    right leaves every group with the same reward, hence no gradient). Cached in the model cache
    under a hash of the training text (~2 min to build on a quiet 2-core CPU, then reused)."""
    import hashlib

    import torch

    from fasbench.base.paths import cache_dir
    from fasbench.models import load_model

    torch.manual_seed(0)
    model, tok = load_model("tiny", device="cpu", trainable=True)
    batches, texts = [], []
    answers = []
    for t in tasks:
        path, ranges = next(iter(t.gold.edited.items()))
        wrong = next(p for p in ("calc/ops.py", "calc/fmt.py") if p != path)
        answers += [(t, path, ranges), (t, wrong, [[1, 2]])]
    for t, path, ranges in answers:
        ts = make_toolset(cfg.toolset, t.root, cfg.limits.tool)
        word = t.query.split()[0].strip(":()")
        obs = ts.call("grep_search", {"query": word})[0]
        msgs = initial_messages(ts, t.query, cfg.limits) + [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": "grep_search", "arguments": {"query": word}}}],
            },
            {"role": "tool", "name": "grep_search", "content": obs},
            # the report turn is the last one: the harness (and the RL trainer) tells the model to answer
            *([{"role": "user", "content": ts.final_turn_note()}] if cfg.max_turns == 2 else []),
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {
                            "name": "report_back",
                            "arguments": {"explanation": "found", "files": {path: ranges}},
                        },
                    }
                ],
            },
        ]
        enc = tok.apply_chat_template(msgs, tools=ts.schemas, return_dict=True, return_assistant_tokens_mask=True)
        texts.append(tok.decode(enc["input_ids"]))
        ids = torch.tensor([enc["input_ids"]])
        labels = ids.clone()
        labels[torch.tensor([enc["assistant_masks"]]) == 0] = -100
        batches.append((ids, labels))
    key = hashlib.sha1(json.dumps([texts, steps, lr]).encode()).hexdigest()[:12]
    model_dir = cache_dir("models") / f"tiny-rl-warm-{key}"
    if (model_dir / "config.json").exists():
        return model_dir
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for i in range(steps):
        ids, labels = batches[i % len(batches)]
        model(input_ids=ids, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    tmp = model_dir.with_name(model_dir.name + f".tmp{__import__('os').getpid()}")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(model_dir)
    return model_dir


@pytest.mark.slow
def test_tiny_grpo_run_through_the_harness_and_resume(tasks, tmp_path, monkeypatch):
    import torch

    torch.set_num_threads(1)
    cfg = load_config(
        "tiny",
        {
            "output_dir": str(tmp_path / "run"),
            "max_steps": 2,
            "save_steps": 1,
            "report_to": "none",
            "max_turns": 2,
            "max_completion_length": 192,
            "temperature": 0.6,
        },
    )
    cfg.model = str(teach(tasks, cfg))
    seen = []  # TRL's own messages of every rollout, as its loop built them
    call = EpisodeReward.__call__

    def recording(self, prompts, completions, environments=None, **kw):
        seen.extend(zip(prompts, completions))
        return call(self, prompts, completions, environments=environments, **kw)

    monkeypatch.setattr(EpisodeReward, "__call__", recording)
    summary = rl_train(cfg, tasks)
    assert summary["global_step"] == 2 and summary["resumed_from"] is None
    assert summary["weight_delta_l2"] > 0, "GRPO did not change the weights"
    steps = [r for r in read_log(cfg.out, LOG_FILE) if r["kind"] == "step"]
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:  # every logged step carries the loss, the reward and each of its parts
        assert math.isfinite(r["loss"])
        for k in (
            "episode/reward",
            "reward_parts/accuracy",
            "reward_parts/turn_penalty",
            "reward_parts/recall",
            "episode/turns",
            "episode/calls_per_turn",
            "episode/tokens",
        ):
            assert math.isfinite(r[f"{k}/mean"]) and math.isfinite(r[f"{k}/std"]), k
    assert any(r["loss"] != 0 for r in steps)
    rollouts = read_rollouts(cfg.out)
    assert len(rollouts) == 2 * cfg.per_device_train_batch_size
    executed = [res for tr in rollouts for t in tr.turns for res in t.results]
    assert executed, "no rollout called a harness tool"
    assert any(tr.report is not None for tr in rollouts)
    # the last turn was told to answer, as run_episode tells it (the note rendered into the prompt by the trainer)
    last_turn = [tr for tr in rollouts if tr.n_turns == cfg.max_turns]
    assert last_turn, "no rollout reached the last turn"
    assert all(tr.meta.get("final_note_turn") == cfg.max_turns - 1 for tr in last_turn)
    assert not any("final_note_turn" in tr.meta for tr in rollouts if tr.n_turns < cfg.max_turns)
    # the rebuilt episode's conversation is TRL's chat up to the reply that ended the episode, note included
    assert len(seen) == len(rollouts)
    for (prompt, completion), tr in zip(seen, rollouts):
        asst = [i for i, m in enumerate(completion) if m["role"] == "assistant"]
        assert plain(tr.to_messages()) == plain(prompt + completion[: asst[tr.n_turns - 1] + 1])
    assert any(m["role"] == "user" for tr in last_turn for m in tr.to_messages()[2:])
    for tr in rollouts:  # the logged reward is the evaluation reward of the rebuilt episode
        task = next(t for t in tasks if t.id == tr.task_id)
        s = score_report("relace", task.gold, tr.report, tr.n_turns or None, root=task.root)
        assert tr.meta["score"]["score"] == pytest.approx(s.value)

    # resume: a later call with more steps continues from the last checkpoint
    cfg.max_steps = 3
    again = rl_train(cfg, tasks)
    assert again["resumed_from"] and again["resumed_from"].endswith("checkpoint-2")
    assert again["global_step"] == 3 and again["steps_this_call"] == 1
    assert [r["step"] for r in read_log(cfg.out, LOG_FILE) if r["kind"] == "step"] == [1, 2, 3]

    # before vs after: the one checkpoint evaluator (fasbench.evaluation.checkpoints), its episode tables concatenated
    ev = dict(toolset=cfg.toolset, limits=cfg.limits, reward=cfg.reward, max_new_tokens=32, progress=False)
    dev = tasks[:1]  # one task keeps the suite short; tests/test_checkpoints.py covers the evaluator itself
    ba = pl.concat(
        [
            evaluate_checkpoint(cfg.model, dev, cfg.out / "eval_before", label="before", **ev),
            evaluate_checkpoint(
                str(cfg.out / "final"), dev, cfg.out / f"eval_after_step{again['global_step']}", label="after", **ev
            ),
        ],
        how="diagonal_relaxed",
    )
    assert ba["policy"].to_list() == ["before"] * len(dev) + ["after"] * len(dev)
    assert set(COLUMNS) <= set(ba.columns) and (ba["reward"] == ba["reward_relace"]).all()
    assert (cfg.out / f"eval_after_step{again['global_step']}" / "traces.jsonl").exists()
    fig = before_after(ba, cfg.reward)
    assert [a.text for a in fig.layout.annotations][:3] == ["reward", "accuracy", "turn_penalty"]
    assert list(fig.data[0].x) == ["before", "after"]
    assert list(fig.data[0].y) == pytest.approx(
        ba.group_by("policy", maintain_order=True).agg(pl.col("reward").mean())["reward"].to_list()
    )


@pytest.mark.slow
def test_max_steps_is_a_total_rerun_trains_nothing_and_keeps_final(tasks, tmp_path, capsys):
    import hashlib

    import torch

    torch.set_num_threads(1)
    cfg = load_config(
        "tiny",
        {
            "output_dir": str(tmp_path / "run"),
            "max_steps": 2,
            "save_steps": 4,
            "report_to": "none",
            "max_turns": 2,
            "max_completion_length": 48,
            "num_generations": 2,
            "per_device_train_batch_size": 2,
        },
    )
    first = rl_train(cfg, tasks)  # save_steps (4) does not divide max_steps: a checkpoint is saved at the last step
    assert (first["global_step"], first["steps_this_call"], first["steps_resumed"]) == (2, 2, 0)
    final = cfg.out / "final"
    digest = {p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in final.iterdir()}
    again = rl_train(cfg, tasks)
    assert (again["global_step"], again["steps_this_call"], again["steps_resumed"]) == (2, 0, 2)
    raw = [json.loads(line) for line in (cfg.out / LOG_FILE).read_text().splitlines()]
    assert [r["step"] for r in raw if r["kind"] == "step"] == [1, 2]  # the raw log: no step trained twice
    assert {
        p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in final.iterdir()
    } == digest, "a rerun at max_steps overwrote final/"
    assert "resumed at step 2 of max_steps=2" in capsys.readouterr().out


@pytest.mark.slow
def test_raw_advantages_are_the_rewards(tasks, tmp_path, monkeypatch):
    """advantage: raw (FastContext's slime run, --disable-rewards-normalization): the advantage of
    each rollout is its reward, not reward - group mean (TRL's, which sums to 0 within a group).
    The episodes are scored with fixed, unequal values (a sampled group of the tiny model can score 0
    everywhere, which would make raw and centred advantages agree and the test pass for nothing)."""
    import itertools

    import torch

    import fasbench.rl.episode_reward as rl_reward
    from fasbench.rl.train import make_trainer
    from fasbench.scoring.reward import Score

    values = itertools.cycle([0.9, 0.2, 0.6, 0.35])
    monkeypatch.setattr(rl_reward, "score_episode", lambda *a, **k: Score(next(values), {"accuracy": 1.0}))

    torch.set_num_threads(1)
    cfg = load_config(
        "tiny",
        {
            "output_dir": str(tmp_path / "run"),
            "max_steps": 1,
            "save_steps": 1,
            "report_to": "none",
            "max_turns": 2,
            "max_completion_length": 192,
            "temperature": 0.6,
            "advantage": "raw",
            "track_weights": False,
        },
    )
    cfg.model = str(teach(tasks, cfg))
    trainer, _ = make_trainer(cfg, tasks)
    trainer.train()
    rewards = [r.reward for r in trainer._episode_reward.batch]
    logged = list(trainer._logs["advantages"])[-len(rewards) :]
    assert len(rewards) > 1 and set(rewards) <= {0.9, 0.2, 0.6, 0.35}
    assert logged == pytest.approx(rewards)
    assert abs(sum(logged)) > 1e-6  # TRL's centred advantages of this one group would sum to 0
    with pytest.raises(ValueError, match="advantage 'mean' unknown"):
        load_config("tiny", {"advantage": "mean"})


def test_tool_rounds_follow_the_harness_turn_budget():
    """TRL's tool-calling rounds are the harness's reply budget less the last reply: Relace max_turns - 1,
    FastContext max_turns (its release adds the last-turn message on an extra turn)."""
    from fasbench.rl.config import RLConfig
    from fasbench.rl.train import tool_rounds

    assert tool_rounds(RLConfig(toolset="relace", max_turns=4)) == 3
    assert tool_rounds(RLConfig(toolset="fastcontext", max_turns=4)) == 4
