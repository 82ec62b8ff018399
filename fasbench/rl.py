"""GRPO over the evaluation harness: TRL ``GRPOTrainer`` with ``environment_factory``.

The environment's public methods ARE the harness tools: each is generated from the tool set's
:class:`~fasbench.tools.base.Tool` (name, Google-style docstring and type hints derived from its JSON
schema) and calls ``Toolset.execute``, so a call's observation is exactly what evaluation returns
(same sandbox, validation, truncation, error text). The prompt is ``harness.initial_messages`` and
the tools are rendered with the harness's own JSON schemas (:class:`HarnessGRPOTrainer` hands TRL
the schema dicts, not the introspected ones), so training sees what evaluation sees.

Per rollout the episode is rebuilt from the completion messages exactly as ``run_episode`` reads
it (one assistant message = one turn; the first turn holding a report ends it) and scored with
``fasbench.reward`` (default ``relace``: A1 for agent-trace gold with viewed files, else A2, times
the turn penalty; any name in ``REWARDS``). Each logged step carries mean and std of the reward and
each of its parts, turns, calls per turn, episode tokens and tool errors (``rl_log.jsonl`` in the
output dir, and TensorBoard/W&B through TRL's ``report_to``); every rollout is written as a
harness :class:`~fasbench.records.Trace` to ``rollouts.jsonl``.

Where TRL's loop differs from ``run_episode``: the harness's last-turn note is appended as a user
message after the tool results of the turn before the last (``HarnessGRPOTrainer._get_tool_suffix_ids``),
as ``run_episode`` does; its no-call reminder is not, since TRL's tool loop ends the rollout at a reply
without tool calls; calls made after the report get an error observation instead of ending the
rollout at once (the reward ignores them); the turn counter that enforces ``max_calls_per_turn`` is
advanced by the trainer at every generation.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Optional

from fasbench.harness import Limits, initial_messages
from fasbench.paths import cache_dir, repo_root
from fasbench.records import Task, ToolCall, ToolResult, Trace, Turn, append_jsonl, iter_jsonl
from fasbench.judge import make_judge
from fasbench.reward import REWARDS, Score, episode_kwargs, finish_reason, judge_requests, score_report
from fasbench.tools import TOOLSETS, ToolLimits, make_toolset
from fasbench.tools.base import Tool, too_many_calls
from fasbench.trl_compat import check_env_tools, check_grpo_trainer

LOG_FILE = "rl_log.jsonl"
ROLLOUT_FILE = "rollouts.jsonl"
SUMMARY_FILE = "summary.json"


# ====================================================================== config

@dataclass
class RLConfig:
    """One flat config of a GRPO run (a YAML file in ``fasbench/configs/rl_*.yaml``)."""

    # -- model
    model: str = "tiny"  # models.resolve_model name: tiny | smollm2-offline | a checkpoint dir | a hub id
    init_from: list[str] = field(default_factory=list)  # checkpoints tried first, in order ({cache} = cache dir)
    dtype: Optional[str] = None  # float32 on CPU, bfloat16 on GPU when None
    lora: bool = False  # train a LoRA adapter instead of all weights
    lora_r: int = 16  # LoRA rank
    # -- tasks
    tasks: str = "swebench-lite"  # load_tasks source | git:PATH (mined from history) | a tasks .jsonl[.gz]
    split: Optional[str] = "train"  # task split (train/dev/test); None = all
    n_tasks: Optional[int] = 4  # first n tasks whose corpus materialises; None = all
    task_ids: Optional[list[str]] = None  # exactly these tasks (overrides split/n_tasks)
    corpus_mode: Optional[str] = None  # offline | online | None (corpus.materialize's default)
    # -- episode: the same limits evaluation uses
    toolset: str = "relace"  # relace | fastcontext
    reward: str = "relace"  # a name in fasbench.reward.REWARDS
    judge: str = ""  # fastcontext reward: its LLM judge, openai:model=NAME,base_url=URL ("" = quality term 0)
    max_turns: int = 4  # assistant turns per episode (TRL: max_tool_calling_iterations = max_turns - 1)
    max_calls_per_turn: int = 8  # parallel calls per turn; extra calls get the harness's error
    tool_timeout_s: float = 10.0  # wall-clock limit of one tool call
    max_output_chars: int = 4000  # observation cap (same cut and note as evaluation)
    # -- GRPO
    num_generations: int = 4  # rollouts per prompt (the group)
    per_device_train_batch_size: int = 4  # rollouts per device per step
    gradient_accumulation_steps: int = 1
    max_completion_length: int = 512  # token budget of a WHOLE episode: every turn's model tokens + observations
    max_steps: int = 4  # optimiser steps
    learning_rate: float = 1e-6
    epsilon: float = 0.2  # lower clip
    epsilon_high: float = 0.28  # upper clip (DAPO clip-higher)
    beta: float = 0.0  # KL coefficient; 0 = no reference model
    loss_type: str = "dapo"  # TRL loss aggregation
    temperature: float = 1.0  # sampling temperature of rollouts
    seed: int = 0
    torch_threads: Optional[int] = None  # CPU threads for torch (1 is much faster on a busy shared CPU); None = torch's
    gradient_checkpointing: bool = False
    bf16: bool = False
    use_vllm: bool = False  # generate with vLLM (GPU)
    vllm_mode: str = "colocate"  # colocate | server
    vllm_gpu_memory_utilization: float = 0.3  # colocate: share of GPU memory vLLM takes
    # -- output
    output_dir: str = "{cache}/runs/rl-tiny"  # checkpoints, rl_log.jsonl, rollouts.jsonl ({cache} = cache dir)
    save_steps: int = 2  # checkpoint every n steps (resume picks the last)
    save_total_limit: int = 2
    logging_steps: int = 1
    report_to: Any = "auto"  # "auto" = tensorboard/wandb when installed (wandb only when configured); "none"; a list
    resume: bool = True  # continue from the last checkpoint in output_dir when there is one
    log_rollouts: bool = True  # write every rollout as a Trace to rollouts.jsonl
    track_weights: bool = True  # keep a copy of the initial weights and report how far training moved them
    grpo: dict = field(default_factory=dict)  # any other GRPOConfig field, passed through

    def __post_init__(self):
        if self.toolset not in TOOLSETS:
            raise ValueError(f"rl config: toolset {self.toolset!r} unknown; choose one of {', '.join(TOOLSETS)}")
        if self.reward not in REWARDS:
            raise ValueError(f"rl config: reward {self.reward!r} unknown; choose one of {', '.join(REWARDS)}")
        if self.judge:
            if self.reward != "fastcontext":
                raise ValueError(f"rl config: judge applies to the fastcontext reward, not {self.reward!r}")
            make_judge(self.judge)  # a bad spec fails here, not at the first reward
        for k in ("max_turns", "max_calls_per_turn", "num_generations", "max_completion_length", "max_steps"):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"rl config: {k} must be >= 1, got {getattr(self, k)}")
        if self.num_generations < 2:
            raise ValueError("rl config: num_generations must be >= 2 (GRPO compares rollouts within a group)")

    @property
    def limits(self) -> Limits:
        return Limits(max_turns=self.max_turns, max_calls_per_turn=self.max_calls_per_turn,
                      tool=ToolLimits(timeout_s=self.tool_timeout_s, max_output_chars=self.max_output_chars,
                                      max_calls_per_turn=self.max_calls_per_turn))

    @property
    def out(self) -> Path:
        return Path(expand(self.output_dir))

    def to_dict(self) -> dict:
        return asdict(self)


def expand(p: str) -> str:
    return os.path.expanduser(str(p).replace("{cache}", str(cache_dir())).replace("{repo}", str(repo_root())))


def config_path(name: str | os.PathLike) -> Path:
    """A config file: a path, or a profile name (``tiny`` → ``fasbench/configs/rl_tiny.yaml``)."""
    p = Path(name)
    if p.exists():
        return p
    cand = Path(__file__).parent / "configs" / f"rl_{name}.yaml"
    if cand.exists():
        return cand
    have = sorted(x.stem[3:] for x in (Path(__file__).parent / "configs").glob("rl_*.yaml"))
    raise FileNotFoundError(f"rl config {str(name)!r}: no such file and no profile of that name (profiles: {have})")


def load_config(name: str | os.PathLike, **overrides) -> RLConfig:
    """An :class:`RLConfig` from a YAML file or profile name; ``overrides`` win. Unknown keys are errors."""
    import yaml

    p = config_path(name)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f"{p}: not a YAML text file ({' '.join(str(e).split())})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping of config fields, got {type(data).__name__}")
    data.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(RLConfig)}
    bad = sorted(set(data) - known)
    if bad:
        raise ValueError(f"{p}: unknown rl config field(s) {bad}; known: {sorted(known)}")
    return RLConfig(**data)


# ====================================================================== tasks

def load_rl_tasks(cfg: RLConfig) -> list[Task]:
    """The training tasks of ``cfg``, each with a materialised corpus (``root`` set)."""
    src = cfg.tasks
    if src.startswith("git:"):
        from fasbench.data.gitmine import mine

        repo = Path(expand(src[4:]))
        tasks, _ = mine(repo)
        tasks = _materialize(tasks, cfg)  # a git worktree at each task's parent commit
    else:
        p = Path(expand(src))
        if src.endswith((".jsonl", ".jsonl.gz")) or p.exists():
            from fasbench.records import read_tasks

            if not p.exists():
                raise FileNotFoundError(f"rl config tasks: {p} does not exist")
            tasks = read_tasks(p)
            if cfg.split and not cfg.task_ids:
                tasks = [t for t in tasks if t.split in (None, cfg.split)]
            tasks = _materialize(tasks, cfg)
        else:
            from fasbench.data import load_tasks

            tasks = load_tasks(src, None if cfg.task_ids else cfg.split)
            tasks = _materialize(tasks, cfg)
    if not tasks:
        raise ValueError(f"rl config: no usable task from {src!r} (split {cfg.split!r}, ids {cfg.task_ids})")
    return tasks


def _materialize(tasks: list[Task], cfg: RLConfig) -> list[Task]:
    from fasbench.data.corpus import CorpusError, materialize

    if cfg.task_ids:
        want = list(cfg.task_ids)
        by_id = {t.id: t for t in tasks}
        missing = [i for i in want if i not in by_id]
        if missing:
            raise ValueError(f"rl config task_ids not found in {cfg.tasks!r}: {missing}")
        tasks = [by_id[i] for i in want]
    out = []
    for t in tasks:
        if cfg.n_tasks is not None and not cfg.task_ids and len(out) >= cfg.n_tasks:
            break
        if t.root and Path(t.root).is_dir():
            out.append(t)
            continue
        try:
            out.append(materialize(t, mode=cfg.corpus_mode))
        except CorpusError:
            if cfg.task_ids:
                raise
    return out


def build_dataset(tasks: list[Task], cfg: RLConfig):
    """A ``datasets.Dataset`` with the harness's initial messages as ``prompt`` and the task as JSON."""
    from datasets import Dataset

    rows = []
    for t in tasks:
        ts = make_toolset(cfg.toolset, t.root, cfg.limits.tool)
        rows.append({"prompt": initial_messages(ts, t.query, cfg.limits), "task": json.dumps(t.to_dict())})
    return Dataset.from_list(rows)


# ====================================================================== the environment

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def _hint(schema: dict) -> Any:
    """A Python type hint whose ``transformers.get_json_schema`` rendering is the JSON schema's type."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    typ = schema.get("type")
    if isinstance(typ, list):
        hints = [_hint({**schema, "type": t}) for t in typ if t != "null"]
        h = hints[0]
        for x in hints[1:]:
            h = h | x
        return Optional[h] if "null" in typ else h
    if typ == "array" and isinstance(schema.get("prefixItems"), list):  # a fixed-length tuple
        return tuple[tuple(_hint(x) for x in schema["prefixItems"])]
    if typ == "array":
        return list[_hint(schema["items"])] if isinstance(schema.get("items"), dict) else list
    if typ == "object":
        ap = schema.get("additionalProperties")
        return dict[str, _hint(ap)] if isinstance(ap, dict) else dict
    if typ in _JSON_TYPES:
        return _JSON_TYPES[typ]
    return Any


def _docstring(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    lines = [tool.description.strip(), "", "Args:"]
    for name, s in props.items():
        if name.isidentifier():
            lines.append(f"    {name}: {' '.join(str(s.get('description', name)).split())}")
    return "\n".join(lines)


def _tool_method(tool: Tool):
    """An environment method for ``tool``: its signature and docstring mirror the tool's schema
    (parameters that are not Python identifiers, like Grep's ``-i``, stay reachable through
    ``**arguments``), and its body runs the harness's ``Toolset.execute``."""
    name = tool.name

    def method(self, **arguments):
        return self._call(name, arguments)

    shown = tool.schema()["function"]["parameters"]  # what the model sees (the published schema)
    props = shown.get("properties", {})
    required = set(shown.get("required", []))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    ann = {}
    for p, s in props.items():
        if not p.isidentifier():
            continue
        default = inspect.Parameter.empty if p in required else s.get("default")
        ann[p] = _hint(s)
        params.append(inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann[p]))
    ann["return"] = str
    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(tool)
    method.__annotations__ = ann
    method.__signature__ = inspect.Signature(params, return_annotation=str)
    return method


class HarnessEnv:
    """Base of the generated environment classes; see :func:`environment_class`.

    ``reset(task=...)`` binds the tool set to the task's corpus; each tool method call is one
    harness call, recorded with the turn it belongs to. Private state only (TRL exposes every
    public method as a tool)."""

    _toolset_name: str = "relace"
    _limits: Limits = Limits()

    def __init__(self):
        self._toolset = None
        self._task: Task | None = None
        self._turn = -1
        self._in_turn = 0
        self._log: list[tuple[int, ToolCall, ToolResult]] = []
        self._reported_turn: int | None = None  # the turn whose calls included a valid report
        self._score: Score | None = None
        self._note_turn: int | None = None  # the turn told to stop exploring and answer

    def reset(self, **row) -> None:
        if "task" not in row:
            raise ValueError(f"environment reset: the dataset row has no 'task' column (columns: {sorted(row)})")
        t = row["task"]
        self._task = Task.from_dict(json.loads(t) if isinstance(t, str) else t)
        if not self._task.root or not Path(self._task.root).is_dir():
            raise ValueError(f"task {self._task.id}: corpus root {self._task.root!r} is not a directory")
        self._toolset = make_toolset(self._toolset_name, self._task.root, self._limits.tool)
        self._turn, self._in_turn, self._log, self._reported_turn, self._score = -1, 0, [], None, None
        self._note_turn = None
        return None

    # -- called by HarnessGRPOTrainer at every generation: calls after it belong to a new turn
    def _begin_turn(self) -> None:
        self._turn += 1
        self._in_turn = 0

    def _final_note(self) -> str | None:
        """The harness's last-turn note when the turn whose results were just returned is the one
        before the last allowed turn (run_episode appends it as a user message there); None
        otherwise, or once the search has ended with a report."""
        if self._toolset is None or self._reported_turn is not None or self._turn != self._limits.max_turns - 2:
            return None
        self._note_turn = self._turn + 1
        return self._toolset.final_turn_note()

    def _call(self, name: str, arguments: dict) -> str:
        if self._toolset is None:
            raise RuntimeError("environment used before reset()")
        turn = max(self._turn, 0)
        call = ToolCall(id=f"call_{turn}_{self._in_turn}", name=name, arguments=dict(arguments))
        self._in_turn += 1
        if self._reported_turn is not None and turn > self._reported_turn:  # run_episode would have stopped
            t = time.time()
            res = ToolResult(call.id, f"Error: the search already ended with {self._toolset.answer_tool}; "
                                      f"call {name} was not run", True, t, t)
        elif self._in_turn > self._limits.max_calls_per_turn:
            res = too_many_calls(call, self._limits.max_calls_per_turn)
        else:
            res = self._toolset.execute(call)
        self._log.append((turn, call, res))
        if self._toolset.answer_tool == name and not res.is_error and self._reported_turn is None:
            self._reported_turn = turn
        return res.output

    # -- episode reconstruction, as run_episode reads it
    def _episode(self, completion: list[dict], policy: str = "grpo") -> Trace:
        """The harness Trace of this rollout from its completion messages."""
        ts, task = self._toolset, self._task
        trace = Trace(task_id=task.id, policy=policy, toolset=ts.name, stop_reason="max_turns")
        results_by_turn: dict[int, list[ToolResult]] = {}
        for turn, _, res in self._log:
            results_by_turn.setdefault(turn, []).append(res)
        i = 0
        for m in completion:
            if m.get("role") != "assistant":
                continue
            calls = []
            for k, c in enumerate(m.get("tool_calls") or []):
                fn = c.get("function", c)
                calls.append(ToolCall(id=f"call_{i}_{k}", name=str(fn.get("name", "")), arguments=fn.get("arguments", {})))
            text = m.get("content") or ""
            if not isinstance(text, str):
                text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
            turn = Turn(index=i, text=text, calls=calls, results=results_by_turn.get(i, []))
            trace.turns.append(turn)
            report = ts.parse_report(text, calls[:self._limits.max_calls_per_turn])  # refused calls never answer
            if report is not None:
                trace.report, trace.stop_reason = report, "reported"
                break
            i += 1
        trace.meta["tool_errors"] = sum(r.is_error for t in trace.turns for r in t.results)
        if self._note_turn is not None and len(trace.turns) > self._note_turn:  # the note's turn was generated
            trace.meta["final_note_turn"] = self._note_turn
        return trace


def environment_class(toolset: str, limits: Limits) -> type:
    """A :class:`HarnessEnv` subclass whose public methods are the tools of ``toolset``."""
    with tempfile.TemporaryDirectory() as d:
        tools = make_toolset(toolset, d, limits.tool).tools
    ns = {name: _tool_method(tool) for name, tool in tools.items()}
    ns.update(_toolset_name=toolset, _limits=limits, __doc__=f"The {toolset} harness tools as a TRL environment.")
    return type(f"{toolset.capitalize()}HarnessEnv", (HarnessEnv,), ns)


def harness_schemas(toolset: str, limits: Limits) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        return make_toolset(toolset, d, limits.tool).schemas


# ====================================================================== reward

@dataclass
class Rollout:
    """What the reward function measured on one rollout (kept for the step log)."""

    task_id: str
    reward: float
    parts: dict[str, float]
    turns: int
    calls: int
    calls_per_turn: float
    reported: bool
    tool_errors: int
    reason: str = ""


class EpisodeReward:
    """TRL reward function: rebuild each rollout's episode and score it with ``fasbench.reward``."""

    def __init__(self, reward: str, out: Path | None = None, log_rollouts: bool = True, judge=None):
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
        self.reward = reward
        self.__name__ = reward.replace(".", "_").replace("-", "_")
        self.out = out
        self.log_rollouts = log_rollouts
        self.judge = judge  # fasbench.judge.Judge for the fastcontext reward's quality term
        self.batch: list[Rollout] = []  # rollouts of the latest generation batch
        self.step = 0

    def __call__(self, prompts, completions, environments=None, **kwargs) -> list[float]:
        if environments is None:
            raise ValueError("EpisodeReward needs the rollouts' environments (use environment_factory)")
        values, self.batch, traces = [], [], []
        # non-conversational completions: the whole text is one turn
        trs = [env._episode([{"role": "assistant", "content": c}] if isinstance(c, str) else c)
               for c, env in zip(completions, environments)]
        if self.judge is not None:  # the batch's judge calls at once, concurrently
            self.judge.score_many(judge_requests((tr.report, env._task.root, env._task.query, finish_reason(tr))
                                                 for tr, env in zip(trs, environments)))
        for tr, env in zip(trs, environments):
            n = tr.n_turns if tr.n_turns else None
            s: Score = score_report(self.reward, env._task.gold, tr.report, n, root=env._task.root,
                                    **episode_kwargs(self.reward, tr, env._task.query, self.judge))
            env._score = s
            values.append(float(s.value))
            cpt = (tr.n_calls / tr.n_turns) if tr.n_turns else 0.0
            self.batch.append(Rollout(tr.task_id, float(s.value), {k: float(v) for k, v in s.parts.items()},
                                      tr.n_turns, tr.n_calls, cpt, tr.report is not None,
                                      int(tr.meta["tool_errors"]), s.reason))
            tr.meta.update(step=self.step, reward=self.reward, score=s.to_dict())
            traces.append(tr)
        if self.log_rollouts and self.out is not None:  # one file per process (rank 0: rollouts.jsonl)
            rank = int(os.environ.get("RANK", "0"))
            name = ROLLOUT_FILE if rank == 0 else ROLLOUT_FILE.replace(".jsonl", f".rank{rank}.jsonl")
            append_jsonl(self.out / name, traces)
        return values


def _mean_std(xs: list[float]) -> tuple[float, float]:
    if not xs:
        return float("nan"), float("nan")
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def rollout_stats(batch: list[Rollout]) -> dict[str, float]:
    """Mean and std over a batch of rollouts of the reward, each part, turns, calls and errors."""
    cols: dict[str, list[float]] = {"episode/reward": [r.reward for r in batch],
                                    "episode/turns": [r.turns for r in batch],
                                    "episode/calls": [r.calls for r in batch],
                                    "episode/calls_per_turn": [r.calls_per_turn for r in batch],
                                    "episode/reported": [float(r.reported) for r in batch],
                                    "episode/tool_errors": [r.tool_errors for r in batch]}
    for r in batch:
        for k, v in r.parts.items():
            cols.setdefault(f"reward_parts/{k}", []).append(v)
    out = {}
    for k, xs in cols.items():
        out[f"{k}/mean"], out[f"{k}/std"] = _mean_std([float(x) for x in xs])
    return out


# ====================================================================== the trainer

def _rollout_of(completions: list[list[dict]] | None, tool_messages: list[dict]) -> int | None:
    """Index of the rollout whose messages hold ``tool_messages`` (the same dict objects TRL appended
    to it this iteration), or None."""
    if not completions or not tool_messages:
        return None
    last = tool_messages[-1]
    for i, msgs in enumerate(completions):
        if msgs and msgs[-1] is last:
            return i
    return None


def _trainer_class():
    from trl import GRPOTrainer

    check_grpo_trainer(GRPOTrainer)  # the private methods overridden below: one supported range (trl_compat)

    class HarnessGRPOTrainer(GRPOTrainer):
        """GRPOTrainer that (1) renders the harness's exact tool schemas, (2) tells each
        environment when a new turn starts (for ``max_calls_per_turn``), (3) appends the harness's
        last-turn note as a user message after the tool results of the turn before the last, as
        ``run_episode`` does (environment tokens: masked out of the loss like tool results), and
        (4) logs the episode statistics of every generation batch with TRL's metrics."""

        def __init__(self, *args, harness_tool_schemas: list[dict], episode_reward: EpisodeReward, **kw):
            super().__init__(*args, **kw)
            check_env_tools(self)
            self._env_tools = {name: list(harness_tool_schemas) for name in self._env_tools}
            self._episode_reward = episode_reward
            self._loop_completions = None  # the rollouts' messages while TRL's tool loop runs

        def _generate_single_turn(self, *args, **kw):
            for env in self.environments or []:
                env._begin_turn()
            return super()._generate_single_turn(*args, **kw)

        def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, *args, **kw):
            self._loop_completions = completions  # to find the rollout whose tool results are being rendered
            try:
                return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, *args, **kw)
            finally:
                self._loop_completions = None

        def _get_tool_suffix_ids(self, tool_messages):
            idx = _rollout_of(self._loop_completions, tool_messages)
            note = self.environments[idx]._final_note() if idx is not None and self.environments else None
            if note is None:
                return super()._get_tool_suffix_ids(tool_messages)
            msg = {"role": "user", "content": note}
            self._loop_completions[idx].append(msg)  # the rollout's messages show it, as the harness's do
            return super()._get_tool_suffix_ids([*tool_messages, msg])

        def _generate_and_score_completions(self, inputs):
            self._episode_reward.step = self.state.global_step
            out = super()._generate_and_score_completions(inputs)
            mode = "train" if self.model.training else "eval"
            stats = rollout_stats(self._episode_reward.batch)
            mask = out["completion_mask"]
            model_mask = mask * out["tool_mask"] if out.get("tool_mask") is not None else mask
            stats["episode/tokens/mean"], stats["episode/tokens/std"] = _mean_std(mask.sum(1).float().tolist())
            stats["episode/model_tokens/mean"], stats["episode/model_tokens/std"] = _mean_std(
                model_mask.sum(1).float().tolist())
            for k, v in stats.items():
                self._metrics[mode][k].append(v)
            return out

    return HarnessGRPOTrainer


def _report_to(value: Any) -> list[str]:
    if value in (None, "none", []):
        return []
    if value != "auto":
        return [value] if isinstance(value, str) else list(value)
    import importlib.util

    out = []
    if importlib.util.find_spec("tensorboard") or importlib.util.find_spec("tensorboardX"):
        out.append("tensorboard")
    if importlib.util.find_spec("wandb") and (os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_MODE")):
        out.append("wandb")
    return out


def resolve_model_spec(cfg: RLConfig) -> str:
    """The first existing checkpoint of ``init_from`` (a dir with config.json or adapter_config.json),
    else ``cfg.model``."""
    for c in cfg.init_from or []:
        p = Path(expand(c))
        if (p / "config.json").exists() or (p / "adapter_config.json").exists():
            return str(p)
    return cfg.model


def prepare_tokenizer(tok):
    """Give the tokenizer a TRL response parser: known templates through ``add_response_schema``;
    the Qwen2.5/Qwen3 *training* templates (same text plus generation markers) get Qwen's parser."""
    if getattr(tok, "response_template", None) is not None or getattr(tok, "response_schema", None) is not None:
        return tok
    import trl.chat_template_utils as ctu

    try:
        return ctu.add_response_schema(tok)
    except ValueError:
        qwen_training = [getattr(ctu, n, None) for n in ("qwen2_5_training_chat_template", "qwen3_training_chat_template",
                                                         "qwen3_instruct_2507_training_chat_template")]
        if tok.chat_template in qwen_training:
            if ctu._SUPPORTS_RESPONSE_TEMPLATE:
                tok.response_template = ctu.qwen3_template
            else:
                tok.response_schema = ctu.qwen3_schema
            return tok
        raise


class StepLog:
    """TrainerCallback writing each log record (loss, reward, parts, turns, ...) to rl_log.jsonl."""

    def __new__(cls, path: Path):
        from transformers import TrainerCallback

        class _StepLog(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):
                if not logs or not state.is_world_process_zero:
                    return
                rec = {"step": state.global_step, "time": time.time(), **{k: v for k, v in logs.items()}}
                rec["kind"] = "summary" if "train_runtime" in logs else "step"
                append_jsonl(path, [rec])

        return _StepLog()


def grpo_args(cfg: RLConfig, use_cpu: bool | None = None):
    """The TRL ``GRPOConfig`` of ``cfg`` (``cfg.grpo`` passes any other field through)."""
    import torch
    from trl import GRPOConfig

    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    extra = dict(cfg.grpo or {})
    return GRPOConfig(
        output_dir=str(cfg.out), max_steps=cfg.max_steps, learning_rate=cfg.learning_rate,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length, max_tool_calling_iterations=cfg.max_turns - 1,
        epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high, beta=cfg.beta, loss_type=cfg.loss_type,
        temperature=cfg.temperature, seed=cfg.seed, logging_steps=cfg.logging_steps, save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit, report_to=_report_to(cfg.report_to), bf16=cfg.bf16,
        gradient_checkpointing=cfg.gradient_checkpointing, use_vllm=cfg.use_vllm, vllm_mode=cfg.vllm_mode,
        vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization, use_cpu=use_cpu,
        remove_unused_columns=False, **extra)


def make_trainer(cfg: RLConfig, tasks: list[Task] | None = None):
    """(trainer, tasks) for ``cfg``: the model, tokenizer, dataset, environment and reward wired up."""
    import torch

    from fasbench.models import load_tokenizer, resolve_model

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if cfg.torch_threads:
        torch.set_num_threads(int(cfg.torch_threads))
    tasks = tasks if tasks is not None else load_rl_tasks(cfg)
    out = cfg.out
    out.mkdir(parents=True, exist_ok=True)
    spec = resolve_model_spec(cfg)
    path = resolve_model(spec)
    cuda = torch.cuda.is_available()
    dtype = getattr(torch, cfg.dtype) if cfg.dtype else (torch.bfloat16 if cuda else torch.float32)
    if (Path(path) / "adapter_config.json").exists():  # a PEFT adapter (e.g. the SFT output): merge it
        from fasbench.models import load_model

        model, tok = load_model(path, dtype=dtype, device="cpu", trainable=True)
    else:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        tok = load_tokenizer(path)
    tok.padding_side = "left"
    prepare_tokenizer(tok)
    args = grpo_args(cfg, use_cpu=not cuda)
    peft_config = None
    if cfg.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=2 * cfg.lora_r, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    reward = EpisodeReward(cfg.reward, out, cfg.log_rollouts, make_judge(cfg.judge) if cfg.judge else None)
    limits = cfg.limits
    env_cls = environment_class(cfg.toolset, limits)
    trainer = _trainer_class()(
        model=model, reward_funcs=[reward], args=args, train_dataset=build_dataset(tasks, cfg),
        processing_class=tok, environment_factory=env_cls, peft_config=peft_config,
        callbacks=[StepLog(out / LOG_FILE)], harness_tool_schemas=harness_schemas(cfg.toolset, limits),
        episode_reward=reward)
    return trainer, tasks


def last_checkpoint(out: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(out)) if Path(out).is_dir() else None


def train(cfg: RLConfig, tasks: list[Task] | None = None) -> dict:
    """Run GRPO; resume from the last checkpoint in ``cfg.out`` when ``cfg.resume``. Saves the final
    model to ``out/final`` and returns (and writes ``summary.json``) the run's headline numbers."""
    import torch

    out = cfg.out
    start = resolve_model_spec(cfg)
    resume = last_checkpoint(out) if cfg.resume else None
    if resume and (out / "config.json").exists():
        before = json.loads((out / "config.json").read_text()).get("resolved_model")
        if before is not None and before != start:
            raise ValueError(f"{out} holds a run that started from {before!r}, but this config starts from "
                             f"{start!r}; use another output_dir (or delete {out}) to train from it")
    trainer, tasks = make_trainer(cfg, tasks)
    (out / "config.json").write_text(json.dumps({**cfg.to_dict(), "resolved_model": start}, indent=1))
    init = None
    if cfg.track_weights:
        init = {k: v.detach().to("cpu", copy=True) for k, v in trainer.model.named_parameters() if v.requires_grad}
    start_step = int(json.loads((Path(resume) / "trainer_state.json").read_text())["global_step"]) if resume else 0
    t0 = time.time()
    result = trainer.train(resume_from_checkpoint=resume)
    wall = time.time() - t0
    trainer.save_model(str(out / "final"))
    trainer.processing_class.save_pretrained(str(out / "final"))
    summary: dict[str, Any] = {"config": cfg.to_dict(), "model": resolve_model_spec(cfg), "n_tasks": len(tasks),
                               "task_ids": [t.id for t in tasks], "resumed_from": resume,
                               "global_step": trainer.state.global_step, "train_loss": result.training_loss,
                               "wall_s": wall}
    if init is not None:
        # Against the weights at the start of this call (the resumed checkpoint's, when resuming).
        sq = diff = 0.0
        with torch.no_grad():
            for k, v in trainer.model.named_parameters():
                if k in init:
                    d = (v.detach().float().cpu() - init[k].float())
                    diff += float(d.pow(2).sum())
                    sq += float(init[k].float().pow(2).sum())
        summary["weight_delta_l2"] = math.sqrt(diff)
        summary["weight_delta_rel"] = math.sqrt(diff) / max(math.sqrt(sq), 1e-12)
    steps = read_log(out)
    steps = [s for s in steps if s.get("kind") == "step"]
    summary["logged_steps"] = len(steps)
    summary["steps_with_reward_parts"] = sum(any(k.startswith("reward_parts/") for k in s) for s in steps)
    summary["nonzero_loss_steps"] = sum(abs(s.get("loss", 0.0) or 0.0) > 0 for s in steps)
    summary["steps_this_call"] = trainer.state.global_step - start_step
    summary["s_per_step"] = wall / max(1, summary["steps_this_call"])
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1, default=str))
    return summary


# ====================================================================== reading runs back

def read_log(out: str | Path) -> list[dict]:
    """The step log of a run, one record per step (a step logged twice, e.g. before and after a
    resume, keeps its last record), in step order; the final summary record(s) last."""
    p = Path(out) / LOG_FILE
    if not p.exists():
        return []
    steps: dict[int, dict] = {}
    summaries = []
    for r in iter_jsonl(p):
        if r.get("kind") == "summary":
            summaries.append(r)
        else:
            steps[int(r["step"])] = r
    return [steps[k] for k in sorted(steps)] + summaries


def log_frame(out: str | Path):
    """The step log as a polars frame (one row per step)."""
    import polars as pl

    rows = [r for r in read_log(out) if r.get("kind") == "step"]
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def read_rollouts(out: str | Path) -> list[Trace]:
    from fasbench.records import read_traces

    p = Path(out) / ROLLOUT_FILE
    return read_traces(p) if p.exists() else []


# ====================================================================== incentive landscape

def incentive_landscape(tasks: list[Task], toolset: str = "relace", reward: str = "relace",
                        turns: tuple[int, ...] = (2, 3, 4, 6), calls: tuple[int, ...] = (1, 2, 4, 8),
                        max_turns: int | None = None, progress: bool = True):
    """The heuristic policy swept over planned turns × parallel calls per search turn, each episode
    run through the harness and scored under ``reward``: what the reward pays for.
    Returns a polars frame (turns, calls, task_id, reward, used_turns, n_calls, then one column per
    part of the reward: accuracy and turn_penalty under Relace's, cited / score_file / f0.5 /
    over_penalty / quality / judged under FastContext's; no judge here, so quality is 0)."""
    import polars as pl
    from tqdm.auto import tqdm

    from fasbench.harness import run_episode
    from fasbench.policies.heuristic import HeuristicPolicy

    rows = []
    grid = [(t, c) for t in turns for c in calls]
    for nt, nc in tqdm(grid, desc="landscape", disable=not progress):
        lim = Limits(max_turns=max_turns or max(turns), max_calls_per_turn=max(nc, 1))
        pol = HeuristicPolicy(turns=nt, calls=nc)
        for t in tasks:
            tr = run_episode(t, pol, toolset, lim)
            s = score_report(reward, t.gold, tr.report, tr.n_turns, root=t.root,
                             **episode_kwargs(reward, tr, t.query))
            rows.append({"turns": nt, "calls": nc, "task_id": t.id, "reward": s.value,
                         "used_turns": tr.n_turns, "n_calls": tr.n_calls,
                         **{k: float(v) for k, v in s.parts.items() if k not in LANDSCAPE_COLUMNS}})
    return pl.DataFrame(rows)


#: The fixed columns of :func:`incentive_landscape`; the others are the reward's parts.
LANDSCAPE_COLUMNS = ("turns", "calls", "task_id", "reward", "used_turns", "n_calls")


# ====================================================================== before vs after

def evaluate_checkpoint(model: str, tasks: list[Task], cfg: RLConfig, label: str | None = None,
                        max_new_tokens: int = 256, traces_out: str | Path | None = None) -> list[dict]:
    """Greedy episodes of the checkpoint ``model`` on ``tasks`` through the harness with the run's
    tool set and limits, scored with the run's reward. One row per task."""
    from fasbench.harness import run_episode
    from fasbench.policies.hf import make_hf_policy

    pol = make_hf_policy(model, max_new_tokens=max_new_tokens, temperature=0.0, name=label or str(model))
    judge = make_judge(cfg.judge) if cfg.judge else None
    rows = []
    for t in tasks:
        tr = run_episode(t, pol, cfg.toolset, cfg.limits)
        if traces_out is not None:
            append_jsonl(traces_out, [tr])
        s = score_report(cfg.reward, t.gold, tr.report, tr.n_turns or None, root=t.root,
                         **episode_kwargs(cfg.reward, tr, t.query, judge))
        rows.append({"policy": label or str(model), "task_id": t.id, "reward": s.value,
                     **{f"part/{k}": v for k, v in s.parts.items()}, "turns": tr.n_turns, "calls": tr.n_calls,
                     "calls_per_turn": tr.n_calls / tr.n_turns if tr.n_turns else 0.0,
                     "reported": tr.report is not None, "stop_reason": tr.stop_reason})
    return rows
