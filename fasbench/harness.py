"""The episode loop: policy → concurrent tool execution → observations → report.

One turn = one policy reply. All calls of a turn run concurrently (they are independent
reads); results come back in call order with their own timings. Two loops, chosen by the tool set's
flags (:class:`fasbench.tools.base.Toolset`):

- fasbench's (Relace): at most ``max_turns`` replies; before the last the policy is told to stop
  exploring and answer; after a reply with neither calls nor answer it is reminded to go on.
- FastContext's release (``src/fastcontext/agent/agent.py`` ``_agent_loop`` @5fb8c1d, unchanged at
  913afd3): ``max_turns`` replies, then the last-turn message as a user message and one extra reply
  (turn ``max_turns + 1``, tools still offered and run); a reply without tool calls ends the episode
  (``reported`` if it holds an answer block, else stop reason ``no_answer``, which every reward scores
  0). So ``--max-turns K`` is the release's ``max_turns=K`` (at most K + 1 replies). The RL rollout of
  the release (``training/fastcontext-rl/agent_runner.py`` @5fb8c1d) differs: 8 replies, the 8th after
  an *assistant* message "Stop exploring and return the final answer directly."; its over-length rule
  (``generate_with_fastcontext.py``: a rollout over 65,536 tokens is removed from training) is
  :data:`RL_MAX_CONTEXT_TOKENS` / :func:`context_tokens`, for the trainer to apply; evaluation has none.

The query is the tool set's ``episode_query(task)`` (FastContext: the generated query of
``task.meta["fc_query"]`` when there is one); ``trace.meta["query_source"]`` says which, and
``trace.meta["query"]`` holds it when it is not ``task.query``. The Trace records every message the
policy saw, notes included, and the chat given to the policy at each turn is read back from it
(``Trace.to_messages``), so SFT data, RL and replay that read the trace read the same chat. An
episode whose replies held no parsable tool call (:func:`parsable_calls`) is flagged
``meta["no_tool_call"]``. The trace is returned whole; callers append it to a JSONL file as each
episode finishes (``fasbench.evaluation.evaluate.run_eval``).
"""

from __future__ import annotations

import numbers
import os
import time
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fasbench.base.specs import build, spec_fields
from fasbench.records import SCHEMA_VERSION, Reply, Task, ToolCall, ToolResult, Trace, Turn
from fasbench.tools import ToolLimits, Toolset, make_toolset
from fasbench.tools.base import too_many_calls
from fasbench.tools.contract import IdLedger, answer_cites, check_contract, final_note_addendum, prompt_addendum


class Policy:
    """Chooses the tool calls: the protocol every policy subclasses, its optional members declared here
    with their defaults (docs/design.md section 3; ``fasbench/policies/README.md``).

    - ``name``: the label of its traces (``make_policy`` sets it to the spec).
    - ``act(messages, tools, *, final) -> Reply``: the chat so far (OpenAI-style messages) and the tool
      schemas; ``final`` is True on the last allowed turn. The one member a policy must write.
    - ``observes_turns`` (default False): True makes the harness pass ``act(..., turns=...)``, the
      episode's recorded turns with each result's ``shown`` (the scripted policies read those instead
      of parsing the chat).
    - ``backend`` (default ``process``): how ``fasbench eval`` runs many episodes of it by default:
      ``thread`` (one shared object: HTTP pools, loaded indexes, ripgrep-bound work), ``serial`` (a
      local model), ``process`` (a worker pool, each worker builds its own).
    - ``default_workers`` (default 0 = the CPU count): episodes ``fasbench eval`` runs at once when
      ``--workers`` is not given (``openai``: 1, a server may generate one request at a time).
    - ``bind(task) -> Policy`` (default: itself): the policy for one task (the RAG baselines read the
      task's corpus and query); every workflow calls it before ``run_episode``.
    - ``prepare(tasks)`` (default: nothing): build or load what the tasks need (a corpus index), called
      by the evaluation per task just before its episode, outside its timing.
    - ``cache_note(tasks) -> str | None`` (default None): one line printed before a run (how many
      indexes are cached).
    """

    name: str = "policy"
    observes_turns: bool = False
    backend: str = "process"
    default_workers: int = 0

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        raise NotImplementedError(f"{type(self).__name__} does not define act(messages, tools, *, final)")

    def bind(self, task: Task) -> Policy:
        return self

    def prepare(self, tasks: Iterable[Task]) -> None:
        return None

    def cache_note(self, tasks: Iterable[Task]) -> str | None:
        return None

    @classmethod
    def from_spec(cls, family: str, params: dict[str, str], **fixed) -> Policy:
        """The policy of the spec ``family:key=value,...`` (``fasbench.policies.make_policy``; ``params``
        as parsed, ``fixed`` set by the caller): ``cls(**fixed, **params)``, each value converted to its
        dataclass field's declared type."""
        return build(cls, family, params, **fixed)

    @classmethod
    def spec_parameters(cls, family: str) -> list[tuple[str, str, str]]:
        """``(parameter, default, comment)`` of each parameter the spec may set (``fasbench policies``)."""
        return spec_fields(cls)


@dataclass
class Limits:
    """Limits of one episode."""

    max_turns: int = 6  # turns before the episode ends without a report (any n >= 1; Relace's turn penalty
    # reaches 0 at n = 24, so runs that study it use 24: configs/rl_long_*.yaml)
    max_calls_per_turn: int = 12  # parallel calls allowed in one turn; extra calls get an error. fasbench's
    # cap, not a published one: Relace's prompt asks for "4-12 tools in parallel" and sets none, FastContext
    # runs every call; 12 is the top of Relace's range
    tool: ToolLimits | None = None  # per-call limits (timeout, output cap); None = defaults
    report_contract: str = "free"  # how the answer cites (fasbench.tools.contract): free (published: paths and
    # ranges as written) | ids (fasbench's extension: IDs of shown ranges, rendered into paths by fasbench)

    def __post_init__(self):
        check_contract(self.report_contract)
        for k in ("max_turns", "max_calls_per_turn"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"limits: {k} must be an integer >= 1, got {v!r}")


NO_CALL_NOTE = "Your reply had no tool call and no answer. Call tools to keep searching, or give your answer."

#: generate_with_fastcontext.py @5fb8c1d: ``total_length > 65536`` tokens -> the rollout is removed.
RL_MAX_CONTEXT_TOKENS = 65_536


def turn_budget(toolset: Toolset, limits: Limits) -> int:
    """Replies an episode may have: ``max_turns``, plus one for a tool set with the release's extra
    last turn (FastContext). The last-turn note comes before reply number ``turn_budget``."""
    return limits.max_turns + (1 if toolset.extra_final_turn else 0)


def context_tokens(trace: Trace) -> int | None:
    """Tokens of the whole episode as the model server counted them: the last reply's prompt plus
    its completion (None when the policy reported no token counts). Over
    :data:`RL_MAX_CONTEXT_TOKENS` FastContext's RL drops the rollout."""
    if not trace.turns:
        return None
    t = trace.turns[-1]
    if t.prompt_tokens is None or t.completion_tokens is None:
        return None
    return int(t.prompt_tokens) + int(t.completion_tokens)


def tool_pool_size() -> int:
    """Threads of the tool pool shared by every episode of the process: $FASBENCH_TOOL_WORKERS, else
    4 per core between 8 and 64 (a call mostly waits on a ripgrep child or the disk; 8 keeps an
    8-call turn fully concurrent on a 2-core machine, and concurrent episodes queue behind it instead
    of starting hundreds of ripgrep processes at once)."""
    env = os.environ.get("FASBENCH_TOOL_WORKERS", "").strip()
    default = min(64, max(8, 4 * len(os.sched_getaffinity(0))))
    if env:
        if env.isdigit() and int(env) >= 1:
            return int(env)
        warnings.warn(
            f"FASBENCH_TOOL_WORKERS={env!r} is not a positive integer; using {default} tool threads", stacklevel=2
        )
    return default


_POOL = ThreadPoolExecutor(max_workers=tool_pool_size(), thread_name_prefix="fasbench-tool")


def execute_calls(toolset: Toolset, calls: list[ToolCall], max_calls: int | None = None) -> list[ToolResult]:
    """Run the calls of one turn concurrently; results in call order."""
    limit = max_calls if max_calls is not None else toolset.limits.max_calls_per_turn
    run = calls[:limit]
    futures = [_POOL.submit(toolset.execute, c) for c in run]
    results = [f.result() for f in futures]
    results += [too_many_calls(c, limit) for c in calls[limit:]]
    return results


def initial_messages(toolset: Toolset, query: str, limits: Limits) -> list[dict]:
    ids = limits.report_contract == "ids"
    return [
        {
            "role": "system",
            "content": toolset.system_prompt(limits.max_turns, limits.max_calls_per_turn)
            + (prompt_addendum(toolset.answer_tool) if ids else ""),
        },
        {"role": "user", "content": toolset.user_prompt(query)},
    ]


def with_prepare_s(policy, seconds: float, trace):
    """``trace`` with ``meta["prepare_s"]``: the seconds ``policy.prepare`` took before it (a retrieval
    index built or loaded), kept out of the episode's wall time; only for a policy that overrides
    :meth:`Policy.prepare` (the others' traces are unchanged)."""
    if type(policy).prepare is not Policy.prepare:
        trace.meta["prepare_s"] = round(seconds, 3)
    return trace


def run_episode(task: Task, policy: Policy, toolset: Toolset | str, limits: Limits | None = None) -> Trace:
    """Run one search episode of ``policy`` on ``task``. ``toolset`` is a Toolset or the name of
    one, bound to ``task.root``."""
    limits = limits or Limits()
    if not isinstance(policy, Policy):
        raise TypeError(
            f"{type(policy).__name__} is not a fasbench.harness.Policy: subclass it "
            "(docs/design.md section 3, A policy)"
        )
    if isinstance(toolset, str):
        if not task.root:
            raise ValueError(f"task {task.id} has no corpus root; materialise it first")
        toolset = make_toolset(toolset, task.root, limits.tool)
    query, source = toolset.episode_query(task)
    trace = Trace(
        task_id=task.id,
        policy=policy.name,
        toolset=toolset.name,
        prompt=initial_messages(toolset, query, limits),
        started_at=time.time(),
        stop_reason="max_turns",
    )
    trace.meta["query_source"] = source
    if toolset.limits.prompt != "published":  # the compact protocol (fasbench.tools.compact): say so
        trace.meta["prompt"] = toolset.limits.prompt
    if query != task.query:
        trace.meta["query"] = query
    notes: list[dict] = []  # what the harness adds to the chat before the next reply
    ledger = IdLedger() if limits.report_contract == "ids" else None  # IDs of the shown ranges
    if ledger is not None:
        trace.meta.update(report_contract="ids", cite_ids=ledger.ids)
    budget = turn_budget(toolset, limits)
    for i in range(budget):
        final = i == budget - 1
        if final:
            notes.append(
                {
                    "role": "user",
                    "content": toolset.final_turn_note() + (final_note_addendum() if ledger is not None else ""),
                }
            )
            trace.meta["final_note_turn"] = i
        # the chat is read back from the trace: what the policy sees is what the trace records
        messages = trace.to_messages(last_results=True) + [dict(m) for m in notes]
        t0 = time.time()
        try:
            # a policy that reads structured observations (the scripted ones) gets the recorded turns
            kw = {"turns": list(trace.turns)} if policy.observes_turns else {}
            reply = policy.act(messages, toolset.schemas, final=final, **kw)
        except Exception as e:  # the policy failed: record it, keep what we have
            trace.stop_reason, trace.error = "policy_error", f"{type(e).__name__}: {e}"
            trace.tail_notes = notes
            if getattr(e, "requests", None):  # the attempts of a remote policy (openai_compat.EndpointError)
                trace.meta["failed_requests"] = list(e.requests)
            break
        turn = Turn(
            index=i,
            text=reply.text,
            calls=list(reply.calls),
            notes=notes,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            model_started_at=t0,
            model_ended_at=time.time(),
            requests=list(getattr(reply, "requests", None) or []),
        )
        notes = []
        turn.tools_started_at = time.time()
        turn.results = execute_calls(toolset, turn.calls, limits.max_calls_per_turn)
        turn.tools_ended_at = time.time()
        if ledger is not None:
            ledger.annotate(i, turn.results)
        trace.turns.append(turn)
        # only calls that ran can answer: a report_back refused as over the per-turn limit is no report
        report = toolset.parse_report(turn.text, turn.calls[: limits.max_calls_per_turn])
        if report is not None and ledger is not None:  # fasbench renders the paths from the IDs
            report, trace.meta["citation"] = ledger.render(
                answer_cites(report, turn.text, toolset.answer_tool), i, report
            )
        if report is not None:
            trace.report, trace.stop_reason = report, "reported"
            break
        if not turn.calls and toolset.silent_reply_ends:  # FastContext: no calls, no answer: the end
            trace.stop_reason = "no_answer"
            break
        if not turn.calls and not final:
            notes.append({"role": "user", "content": NO_CALL_NOTE})
    if trace.turns and not parsable_calls(trace):  # fasbench eval warns about these (evaluate.tool_call_warnings)
        trace.meta["no_tool_call"] = True
    trace.ended_at = time.time()
    return trace


def parsable_calls(trace: Trace) -> int:
    """Calls of the episode that were parsed: a name and JSON-object arguments (a malformed call keeps
    its raw text as arguments). An episode with turns and none of these has ``meta["no_tool_call"]``."""
    return sum(1 for t in trace.turns for c in t.calls if c.name and isinstance(c.arguments, dict))


def restore_notes(trace: Trace) -> Trace:
    """A schema-1 trace (written before traces recorded the harness's notes) with its notes put
    back where ``run_episode`` of that version added them: the tool set's last-turn note before the
    turn ``meta["final_note_turn"]``, the no-call reminder after each non-final turn with neither calls
    nor answer. Returns the trace, upgraded in place; newer traces are returned unchanged."""
    if trace.schema_version >= SCHEMA_VERSION:
        return trace
    final = trace.meta.get("final_note_turn")
    note = make_toolset(trace.toolset, ".").final_turn_note() if final is not None else ""
    pending: list[dict] = []
    for i, t in enumerate(trace.turns):
        if i == final:
            pending.append({"role": "user", "content": note})
        t.notes, pending = pending + list(t.notes), []
        if not t.calls and (final is None or i < final):
            pending.append({"role": "user", "content": NO_CALL_NOTE})
    if trace.stop_reason == "policy_error":
        if final == len(trace.turns):
            pending.append({"role": "user", "content": note})
        trace.tail_notes = pending
    trace.schema_version = SCHEMA_VERSION
    return trace
