"""SFT examples in TRL's conversational format (``messages`` + ``tools``) from harness episodes.

Four sources (FastContext's three plus real reference traces):

- ``multiturn_traj``: whole episodes of a reference policy (``heuristic`` by default, any
  ``make_policy`` spec; ``extra_policy`` on a share ``extra_share`` of the tasks), kept when their
  reward reaches ``min_reward``. With ``multiturn_release`` the release's rows (``gen_multiturn_traj.py``
  @716fe4b): no tool schemas, and every episode whose chat ends with an assistant reply is kept, with
  or without an answer (:func:`released_keeps`; no reward). Still fasbench's: the messages keep the
  tool messages' ``tool_call_id`` (the release keeps ``role``, ``content`` and ``tool_calls`` only);
- ``reference_traj``: the exploration prefix of real mini-swe-agent trajectories, converted and
  re-executed in the harness (``fasbench.sft.reference``), reporting the files the agent edited;
- ``parallel_toolcalls``: first turns only (prompt → one assistant turn of parallel calls, no tool
  results). With ``parallel_teacher`` set (a policy spec, e.g. ``openai:model=…,base_url=…``) the
  release's way: the teacher is given FastContext's synthesis prompt verbatim
  (:func:`fasbench.sft.release_formats.synthesis_messages`) and the tool schemas, and its first reply's
  calls (at least one) become the example, after the explorer's own prompt, with the content emptied
  (``gen_parallel_toolcalls_1turn.py`` @0dc077f). Without it, fasbench's stand-in: the first turns
  (1–``max_calls_per_turn`` distinct calls) of the episodes of the two sources above;
- ``linerange``: for the ``fastcontext`` tool set the release's tool-free task (``gen_linerange.py``
  @0dc077f): its own system prompt, one user message of ``<files>`` blocks (the gold files around the
  gold ranges, numbered as the released Read shows them) and the ``<final_answer>`` with the tight gold
  ranges; no tools. For ``relace`` (no such release) fasbench's adaptation: one parallel turn viewing
  the same ranges through the harness, then the report.

Every conversation is exactly what the harness showed the policy (same prompts, tool schemas,
truncation, and the harness's own reminder/last-turn notes): it is read from the episode's Trace
(``Trace.to_messages``), the record the harness itself builds each turn's chat from. Splits follow the task splits: the
``train`` and ``dev`` datasets are built from train and dev tasks only; test tasks are refused.
Episodes are appended to ``<out>/episodes.jsonl`` as they finish, so an interrupted build resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from fasbench.base import contain
from fasbench.data.corpora import with_corpora
from fasbench.data.tasksets import load_task_set
from fasbench.harness import Limits, initial_messages, restore_notes, run_episode
from fasbench.models import to_template_messages
from fasbench.policies import make_policy
from fasbench.policies.dialect import Dialect, dialect_for
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.records import Reply, Task, Trace, Turn, append_jsonl, iter_jsonl, repair_jsonl
from fasbench.scoring.reward import score_report
from fasbench.sft.reference import convert_actions, trajectory_actions
from fasbench.sft.release_formats import linerange_messages, numbered_lines, synthesis_messages
from fasbench.tools import ToolLimits, calls_for, make_toolset
from fasbench.tools.base import PROMPTS
from fasbench.tools.contract import check_contract, contract_of
from fasbench.tools.fastcontext_published import WORK_DIR


def episode_query(toolset, task: Task) -> str:
    """The query the tool set gives the policy for ``task`` (``Toolset.episode_query``: FastContext's
    generated query where the task has one), else ``task.query``."""
    pick = getattr(toolset, "episode_query", None)
    return pick(task)[0] if callable(pick) else task.query


def workspace_ls(root: str | Path) -> str:
    """``cd WORKSPACE && ls`` as the release records it (``get_workspace_ls.py`` @0dc077f): the names
    of the root, hidden ones left out, one a line, sorted byte-wise (the C locale)."""
    return "\n".join(
        sorted(
            (n for n in os.listdir(root) if not n.startswith(".")), key=lambda n: n.encode("utf-8", "surrogateescape")
        )
    )


SOURCES = ("multiturn_traj", "reference_traj", "parallel_toolcalls", "linerange")


@dataclass
class BuildConfig:
    """How to build an SFT data set (the flat ``build:`` section of a profile; fasbench.training.profiles)."""

    out: str = ""  # output folder; "" = cache_dir("sft", <profile name>)
    toolset: str = "relace"  # the tool set the student will use (a name of fasbench.tools.TOOLSETS)
    prompt: str = "published"  # published | compact: the protocol of the traces (fasbench.tools.compact; relace only)
    task_source: str = (
        "swebench-verified"  # tasks for multiturn_traj / linerange (a task-set name: fasbench.data.tasksets)
    )
    reference_runs: list[str] = field(default_factory=lambda: ["gemini-3-pro", "deepseek-chat"])  # agent runs
    policy: str = "heuristic"  # reference policy spec for multiturn_traj (fasbench.policies.make_policy)
    extra_policy: str = ""  # another reference policy, run instead of `policy` on a share of the tasks
    extra_share: float = 0.0  # that share (by a hash of the task id), e.g. a few multi-call traces to explore from
    reward: str = "relace"  # reward used to filter episodes (fasbench.scoring.reward.REWARDS)
    min_reward: float = 0.3  # episodes below this reward are not used
    # multiturn_traj rows as FastContext's gen_multiturn_traj.py @716fe4b writes them: no tool schemas, no
    # reward filter (kept: every episode whose chat ends with an assistant reply, at least 3 messages)
    multiturn_release: bool = False
    max_tasks: dict[str, int] = field(default_factory=lambda: {"train": 40, "dev": 10})  # per split, per source
    task_ids: list[str] = field(default_factory=list)  # restrict to these task ids (tests, debugging)
    mix: dict[str, float] = field(default_factory=lambda: {s: 1.0 for s in SOURCES})  # share kept of each source
    max_turns: int = 4  # harness turns of policy episodes (the prompt says so)
    reference_max_turns: int = 8  # harness turns for re-executed reference traces
    max_calls_per_turn: int = 6  # parallel calls per turn (and the parallel_toolcalls cap)
    max_output_chars: int = 4000  # observation cap (evaluation must use the same)
    linerange_context: int = 15  # lines viewed around each gold range in linerange examples
    parallel_teacher: str = (
        ""  # parallel_toolcalls: a policy spec given the release's synthesis prompt; "" = first turns
    )
    seed: int = 0  # sampling of the mix
    report_contract: str = "free"  # free (published) | ids: the episodes' shown ranges carry IDs and their answers
    # cite IDs (fasbench.tools.contract, fasbench's extension); each example records it

    def __post_init__(self):
        check_contract(self.report_contract)
        if self.prompt not in PROMPTS:
            raise ValueError(f"sft build: prompt {self.prompt!r} unknown; choose one of {', '.join(PROMPTS)}")


def limits(cfg: BuildConfig, max_turns: int | None = None):
    """The harness limits of the build's episodes (``max_turns`` overrides ``cfg.max_turns``)."""
    return Limits(
        max_turns=max_turns or cfg.max_turns,
        max_calls_per_turn=cfg.max_calls_per_turn,
        report_contract=cfg.report_contract,
        tool=ToolLimits(
            max_output_chars=cfg.max_output_chars, max_calls_per_turn=cfg.max_calls_per_turn, prompt=cfg.prompt
        ),
    )


# ---------------------------------------------------------------- traces → messages


def _example(msgs: list[dict], tools: list[dict], source: str, task: Task, trace: Trace | None) -> dict:
    msgs = to_template_messages(msgs)
    n_asst = [m for m in msgs if m["role"] == "assistant"]
    return {
        "messages": msgs,
        "tools": tools,
        "source": source,
        "task_id": task.id,
        "split": task.split or "",
        "n_turns": len(n_asst),
        "n_calls": sum(len(m.get("tool_calls") or []) for m in n_asst),
        "trace_id": trace.trace_id if trace else "",
        "report_contract": contract_of(msgs),
    }  # ids when the prompt carries the ids contract


def trace_example(trace: Trace, tools: list[dict], task: Task, source: str = "multiturn_traj") -> dict:
    """The SFT example of a whole episode: the chat the policy saw, ending with its last reply, read
    from the trace (schema-1 traces of an older build get their notes back first)."""
    return _example(restore_notes(trace).to_messages(), tools, source, task, trace)


def first_turn_example(trace: Trace, tools: list[dict], task: Task, max_calls: int = 6) -> dict | None:
    """``parallel_toolcalls``: the prompt and the first assistant turn, with 1–``max_calls``
    distinct calls (duplicates removed); None when the first turn has no call or too many."""
    if not trace.turns:
        return None
    t0 = trace.turns[0]
    seen, calls = set(), []
    for c in t0.calls:
        key = (c.name, c.arguments_json())
        if key not in seen and isinstance(c.arguments, dict):
            seen.add(key)
            calls.append(c)
    if not 1 <= len(calls) <= max_calls:
        return None
    first = Trace(
        task_id=trace.task_id,
        policy=trace.policy,
        toolset=trace.toolset,
        prompt=trace.prompt,
        turns=[Turn(index=0, text=t0.text, calls=calls, notes=t0.notes)],
    )
    return _example(first.to_messages(), tools, "parallel_toolcalls", task, trace)


def synthesized_example(task: Task, toolset, limits_, reply: Reply, source: str = "parallel_toolcalls") -> dict | None:
    """``parallel_toolcalls`` the release's way: the explorer's prompt (system prompt and query message
    of ``toolset``) and the teacher's ``reply`` calls with the content emptied (no tool results); None
    without a call (gen_parallel_toolcalls_1turn.py @0dc077f lines 101-113, 163-171)."""
    calls = [c for c in reply.calls if isinstance(c.arguments, dict)]
    if not calls or len(calls) != len(reply.calls):
        return None
    tr = Trace(
        task_id=task.id,
        policy="teacher",
        toolset=toolset.name,
        prompt=initial_messages(toolset, episode_query(toolset, task), limits_),
        turns=[Turn(index=0, text="", calls=calls)],
    )
    return _example(tr.to_messages(), toolset.schemas, source, task, tr)


def linerange_example(task: Task, cfg: BuildConfig, work_dir: str = WORK_DIR) -> dict | None:
    """The release's tool-free ``linerange`` example (gen_linerange.py @0dc077f): one ``<files>`` block
    per gold range widened by ``linerange_context`` lines, then the tight gold ranges as the answer;
    paths absolute under ``work_dir`` (the workspace the FastContext prompt names). None without
    ranges."""
    files, answer = [], []
    for path, ranges in task.gold.edited.items():
        if not ranges:
            continue
        try:
            data, more = contain.read_bytes(task.root, path)
        except contain.PathRefused:
            return None
        if more:
            return None
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        for a, b in ranges:
            lo, hi = max(1, a - cfg.linerange_context), min(len(lines), b + cfg.linerange_context)
            if lo > hi:
                continue
            files.append((f"{work_dir}/{path}", lo, hi, numbered_lines(lines, lo, hi)))
            answer.append((f"{work_dir}/{path}", a, b))
    if not files:
        return None
    msgs = linerange_messages(files, answer)
    return {
        "messages": msgs,
        "tools": [],
        "source": "linerange",
        "task_id": task.id,
        "split": task.split or "",
        "n_turns": 1,
        "n_calls": 0,
        "trace_id": "",
        "report_contract": "free",
    }


# ---------------------------------------------------------------- episodes per source


def _dialect(toolset: str):
    return Dialect(calls_for(toolset))


def reference_episode(task: Task, cfg: BuildConfig) -> tuple[Trace | None, dict]:
    """A real trajectory's exploration re-executed in the harness on ``task.root``; returns the
    trace (None when nothing converted) and conversion counts."""
    conv = convert_actions(trajectory_actions(task), cfg.toolset, task.query, Path(task.root), cfg.max_calls_per_turn)
    info = {
        "n_actions": conv.n_actions,
        "n_converted": conv.n_converted,
        "unconvertible": dict(conv.unconvertible),
        "n_turns_converted": len(conv.turns),
    }
    if not conv.turns:
        return None, info
    turns = [{"text": "", "calls": g} for g in conv.turns[: cfg.reference_max_turns - 1]]
    turns.append(
        lambda msgs, tools: dialect_for(tools, msgs).report(  # cites IDs under the ids contract
            "report", task.gold.edited, "Files the task's fix changes, with the relevant line ranges."
        )
    )
    tr = run_episode(task, ScriptedPolicy(turns, name="reference"), cfg.toolset, limits(cfg, max_turns=len(turns)))
    tr.meta.update(info)
    return tr, info


def teacher_trace(teacher, task: Task, cfg: BuildConfig) -> Trace:
    """The teacher's reply to the release's synthesis prompt for ``task`` (one turn, its calls not run),
    as a Trace so the build log resumes like the other sources."""
    ts = make_toolset(cfg.toolset, task.root, limits(cfg).tool)
    msgs = synthesis_messages(episode_query(ts, task), WORK_DIR, workspace_ls(task.root))
    reply = teacher.act(msgs, ts.schemas, final=False)
    return Trace(
        task_id=task.id,
        policy=teacher.name,
        toolset=ts.name,
        prompt=msgs,
        turns=[Turn(index=0, text=reply.text, calls=list(reply.calls))],
        stop_reason="max_turns",
    )  # one turn, no answer asked for


def linerange_episode(task: Task, cfg: BuildConfig) -> Trace | None:
    """One turn viewing the gold files around the gold ranges, then the tight report."""
    d = _dialect(cfg.toolset)
    calls = []
    for i, (path, ranges) in enumerate(task.gold.edited.items()):
        for a, b in ranges:
            calls.append(d.view(f"v{i}", path, a - cfg.linerange_context, b + cfg.linerange_context))
    files = {p: r for p, r in task.gold.edited.items() if r}
    if not calls or not files or len(calls) > cfg.max_calls_per_turn:
        return None

    turns = [
        Reply(text="", calls=calls),
        lambda msgs, tools: dialect_for(tools, msgs).report("report", files, "The exact lines that need to change."),
    ]
    return run_episode(task, ScriptedPolicy(turns, name="linerange"), cfg.toolset, limits(cfg, max_turns=3))


def _share(task_id: str) -> float:
    """A number in [0, 1) fixed by the task id (which tasks get ``extra_policy``)."""
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) / 16**8


def released_keeps(trace: Trace) -> bool:
    """gen_multiturn_traj.py @716fe4b's filter (lines 25-30), the only one it applies: the chat ends
    with an assistant message and has at least 3 messages (an episode without an answer is kept)."""
    msgs = restore_notes(trace).to_messages()
    return len(msgs) >= 3 and msgs[-1].get("role") == "assistant"


def _score(task: Task, trace: Trace, reward: str) -> float:
    return score_report(reward, task.gold, trace.report, turns=trace.n_turns, root=task.root).value


# ---------------------------------------------------------------- the build


def _tasks(cfg: BuildConfig, kind: str, split: str) -> list[Task]:
    if split == "test":
        raise ValueError("SFT data never uses test tasks")
    if kind == "reference":
        tasks = [t for t in load_task_set("agent-traces", split=split) if t.meta.get("agent_run") in cfg.reference_runs]
    else:
        # a task without a split (a JSONL file may hold some) would land in both train and dev: left out
        tasks = [t for t in load_task_set(cfg.task_source, split=split) if t.split == split]
    if cfg.task_ids:
        tasks = [t for t in tasks if t.id in set(cfg.task_ids)]
    return tasks


def _materialized(tasks: list[Task], limit: int, desc: str) -> list[Task]:
    """Up to ``limit`` tasks with their corpus (tasks whose corpus cannot be built are skipped)."""
    return with_corpora(tasks, limit=limit, desc=desc).tasks


def build(cfg: BuildConfig, out: str | Path) -> dict:
    """Run the episodes (resuming from ``out/episodes.jsonl``), turn them into examples, apply the
    mix and deduplicate, and save a ``datasets.DatasetDict`` (train/dev) to ``out/dataset``.
    Returns the statistics also written to ``out/stats.json``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "episodes.jsonl"
    repair_jsonl(log)
    done = {(r["kind"], r["task_id"]) for r in iter_jsonl(log)} if log.exists() else set()
    stats: dict[str, Any] = {
        "config": asdict(cfg),
        "unconvertible": Counter(),
        "episodes": Counter(),
        "dropped": Counter(),
        "query_sources": Counter(),
    }  # what the explorer is given
    policy = make_policy(cfg.policy) if "multiturn_traj" in cfg.mix else None
    extra = make_policy(cfg.extra_policy) if cfg.extra_policy and cfg.extra_share > 0 and policy is not None else None
    teacher = (
        make_policy(cfg.parallel_teacher) if cfg.parallel_teacher and cfg.mix.get("parallel_toolcalls", 0) > 0 else None
    )
    # the release's tool-free linerange (relace, and the ids contract, whose answers cite shown IDs: fasbench's)
    release_linerange = cfg.toolset == "fastcontext" and cfg.report_contract == "free"
    for split, limit in cfg.max_tasks.items():
        jobs = []
        if (
            cfg.mix.get("multiturn_traj", 0) > 0
            or cfg.mix.get("parallel_toolcalls", 0) > 0
            or cfg.mix.get("linerange", 0) > 0
        ):
            for t in _materialized(_tasks(cfg, "policy", split), limit, f"{split} corpora"):
                stats["query_sources"][make_toolset(cfg.toolset, t.root).episode_query(t)[1]] += 1
                if cfg.mix.get("multiturn_traj", 0) > 0 or cfg.mix.get("parallel_toolcalls", 0) > 0:
                    jobs.append(("policy", t))
                if cfg.mix.get("linerange", 0) > 0:
                    jobs.append(("linerange", t))
                if teacher is not None:
                    jobs.append(("teacher", t))
        if cfg.mix.get("reference_traj", 0) > 0 or cfg.mix.get("parallel_toolcalls", 0) > 0:
            for t in _materialized(_tasks(cfg, "reference", split), limit, f"{split} reference corpora"):
                jobs.append(("reference", t))
        for kind, t in tqdm(jobs, desc=f"{split} episodes"):
            if (kind, t.id) in done:
                continue
            rec: dict[str, Any] = {"kind": kind, "task_id": t.id, "split": split, "task": t.to_dict(), "trace": None}
            try:
                if kind == "policy":
                    pol = extra if extra is not None and _share(t.id) < cfg.extra_share else policy
                    tr = run_episode(t, pol.bind(t), cfg.toolset, limits(cfg))
                elif kind == "reference":
                    tr, info = reference_episode(t, cfg)
                    rec["conversion"] = info
                elif kind == "teacher":
                    tr = teacher_trace(teacher.bind(t), t, cfg)
                elif release_linerange:
                    tr, rec["example"] = None, linerange_example(t, cfg)
                else:
                    tr = linerange_episode(t, cfg)
                rec["trace"] = tr.to_dict() if tr is not None else None
            except Exception as e:  # one bad task must not stop the build; it is counted
                rec["error"] = f"{type(e).__name__}: {e}"
            append_jsonl(log, [rec])
            done.add((kind, t.id))
    # examples from every logged episode
    examples: dict[str, list[dict]] = {"train": [], "dev": []}
    for r in iter_jsonl(log):
        if r["split"] not in examples or r["split"] not in cfg.max_tasks:
            continue
        if r.get("conversion"):
            stats["unconvertible"].update(r["conversion"]["unconvertible"])
        if r["kind"] == "linerange" and "example" in r:  # the release's tool-free task: no episode to score
            if cfg.task_ids and r["task_id"] not in cfg.task_ids:
                continue
            if r["example"] is None:
                stats["dropped"]["linerange: no gold range to show"] += 1
            else:
                stats["episodes"]["linerange"] += 1
                examples[r["split"]].append(r["example"])
            continue
        if r.get("trace") is None:
            stats["dropped"][f"{r['kind']}: {r['error'] if r.get('error') else 'no episode'}"] += 1
            continue
        task, tr = Task.from_dict(r["task"]), Trace.from_dict(r["trace"])
        if cfg.task_ids and task.id not in cfg.task_ids:
            continue
        # the schemas of the protocol the trace was run under (the harness records a compact one)
        ts = make_toolset(tr.toolset, task.root, ToolLimits(prompt=str(tr.meta.get("prompt", "published"))))
        tools = ts.schemas
        stats["episodes"][r["kind"]] += 1
        if r["kind"] == "teacher":  # the release keeps every first turn with a call (no reward: no answer yet)
            ex = synthesized_example(task, ts, limits(cfg), tr.turns[0]) if tr.turns else None
            if ex is None:
                stats["dropped"]["teacher: no tool call"] += 1
            else:
                examples[r["split"]].append(ex)
            continue
        released = cfg.multiturn_release and r["kind"] == "policy"
        if released:
            if not released_keeps(tr):
                stats["dropped"]["policy: chat does not end with an assistant reply (as released)"] += 1
                continue
        elif tr.report is None or _score(task, tr, cfg.reward) < cfg.min_reward:
            stats["dropped"][f"{r['kind']}: reward < {cfg.min_reward}"] += 1
            continue
        src = {"policy": "multiturn_traj", "reference": "reference_traj", "linerange": "linerange"}[r["kind"]]
        examples[r["split"]].append(trace_example(tr, [] if released else tools, task, src))
        if r["kind"] in ("policy", "reference") and teacher is None:
            ex = first_turn_example(tr, tools, task, cfg.max_calls_per_turn)
            if ex is not None:
                examples[r["split"]].append(ex)
    stats["examples"] = {}
    final: dict[str, list[dict]] = {}
    rng = random.Random(cfg.seed)
    for split, exs in examples.items():
        seen, uniq = set(), []
        for ex in exs:
            key = hashlib.sha256(json.dumps(ex["messages"], sort_keys=True).encode()).hexdigest()
            if key not in seen:
                seen.add(key)
                uniq.append(ex)
        mixed = []
        for src in SOURCES:
            pool = [e for e in uniq if e["source"] == src]
            ratio = cfg.mix.get(src, 0.0)
            k = round(len(pool) * ratio)
            mixed += rng.sample(pool, min(k, len(pool))) + [rng.choice(pool) for _ in range(max(0, k - len(pool)))]
        rng.shuffle(mixed)
        final[split] = mixed
        stats["examples"][split] = dict(Counter(e["source"] for e in mixed))
    save_dataset(final, out / "dataset")
    stats = {k: dict(v) if isinstance(v, Counter) else v for k, v in stats.items()}
    (out / "stats.json").write_text(json.dumps(stats, indent=1))
    return stats


FEATURES_DOC = "messages and tools are List(Json()) so tool-call dicts keep their own keys (no null-padded merge)"


def save_dataset(splits: dict[str, list[dict]], path: str | Path):
    """Save examples as a DatasetDict with ``Json()`` features for messages and tools."""
    # local import: datasets is heavy to import, only paid when a data set is saved
    from datasets import Dataset, DatasetDict, Features, Json, List, Value

    feats = Features(
        {
            "messages": List(Json()),
            "tools": List(Json()),
            "source": Value("string"),
            "task_id": Value("string"),
            "split": Value("string"),
            "n_turns": Value("int32"),
            "n_calls": Value("int32"),
            "trace_id": Value("string"),
            "report_contract": Value("string"),
        }
    )
    # empty splits are left out (datasets cannot load an empty saved split back)
    dd = DatasetDict(
        {
            s: Dataset.from_list([{"report_contract": "free", **r} for r in rows], features=feats)
            for s, rows in splits.items()
            if rows
        }
    )  # rows built before report_contract: free
    dd.save_to_disk(str(path))
    return dd


def load_dataset(path: str | Path):
    """The DatasetDict saved by ``build``."""
    from datasets import load_from_disk  # local import: datasets is heavy to import, only paid when loading

    p = Path(path)
    if (p / "dataset").is_dir():
        p = p / "dataset"
    if not p.exists():
        raise FileNotFoundError(f"no SFT dataset at {path}; run `fasbench sft build --config …` first")
    return load_from_disk(str(p))
