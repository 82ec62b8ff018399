"""The GRPO trainer over the harness: TRL ``GRPOTrainer`` with ``environment_factory``.

The prompt is ``harness.initial_messages`` and the tools are rendered with the harness's own JSON
schemas (:class:`HarnessGRPOTrainer` hands TRL the schema dicts, not the introspected ones), so
training sees what evaluation sees. The environment is :mod:`fasbench.rl.env`, the reward
:mod:`fasbench.rl.episode_reward`. Each logged step carries mean and std of the reward and each of its parts,
turns, calls per turn, episode tokens and tool errors (``rl_log.jsonl`` in the output dir, always,
and the trackers of TRL's ``report_to``: TensorBoard by default, trackio, W&B); every rollout is written as a harness
:class:`~fasbench.records.Trace` to ``rollouts.jsonl``.

The private ``GRPOTrainer`` methods overridden here are checked against the supported TRL range by
:mod:`fasbench.rl.trl_compat` when the trainer class is built.
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from fasbench.chat_families import check_parallel, template_family
from fasbench.harness import initial_messages
from fasbench.models import load_model, load_tokenizer, resolve_model
from fasbench.records import Task
from fasbench.rl.config import LOG_FILE, SUMMARY_FILE, RLConfig, resolve_model_spec
from fasbench.rl.env import environment_class, harness_schemas
from fasbench.rl.episode_reward import EpisodeReward, mean_std, rollout_stats
from fasbench.rl.tasks import load_rl_tasks
from fasbench.rl.trl_compat import check_env_tools, check_grpo_trainer
from fasbench.scoring.judge import make_judge
from fasbench.tools import make_toolset, toolset_class
from fasbench.tools.fastcontext_query import query_note
from fasbench.training.log import checkpoint_step, last_checkpoint, read_log, resume_line, save_at_end, step_log
from fasbench.training.profiles import check_report_to, device_args, report_to_list

# The function-local imports below are the heavy training libraries (torch, transformers, datasets,
# trl; their measured import costs are in benchmarks/README.md), which `fasbench rl config|log` and
# the notebooks' analysis cells must not pay.


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
    from trl import GRPOTrainer  # local import: trl and torch are heavy

    check_grpo_trainer(GRPOTrainer)  # the private methods overridden below: one supported range (trl_compat)

    class HarnessGRPOTrainer(GRPOTrainer):
        """GRPOTrainer that (1) renders the harness's exact tool schemas, (2) tells each
        environment when a new turn starts (for ``max_calls_per_turn``), (3) appends the harness's
        last-turn note as a user message after the tool results of the turn before the last, as
        ``run_episode`` does (environment tokens: masked out of the loss like tool results),
        (4) logs the episode statistics of every generation batch with TRL's metrics, and (5) with
        ``advantage="raw"`` uses each rollout's reward as its advantage (slime's
        ``--disable-rewards-normalization``; TRL itself always subtracts the group mean)."""

        def __init__(
            self,
            *args,
            harness_tool_schemas: list[dict],
            episode_reward: EpisodeReward,
            raw_advantages: bool = False,
            **kw,
        ):
            super().__init__(*args, **kw)
            self._raw_advantages = raw_advantages
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
            if self._raw_advantages:
                self._use_raw_rewards(out)
            mode = "train" if self.model.training else "eval"
            stats = rollout_stats(self._episode_reward.batch)
            mask = out["completion_mask"]
            model_mask = mask * out["tool_mask"] if out.get("tool_mask") is not None else mask
            stats["episode/tokens/mean"], stats["episode/tokens/std"] = mean_std(mask.sum(1).float().tolist())
            stats["episode/model_tokens/mean"], stats["episode/model_tokens/std"] = mean_std(
                model_mask.sum(1).float().tolist()
            )
            for k, v in stats.items():
                self._metrics[mode][k].append(v)
            return out

        def _use_raw_rewards(self, out: dict) -> None:
            """This process's rollouts' rewards (the reward function ran on them, in order) as their
            advantages, in the batch and in TRL's advantage log."""
            import torch  # local import: loaded with trl above (heavy)

            adv = out["advantages"]
            raw = torch.tensor([r.reward for r in self._episode_reward.batch], dtype=adv.dtype, device=adv.device)
            if raw.shape != adv.shape:
                raise RuntimeError(f"raw advantages: {raw.numel()} rewards for {adv.numel()} rollouts")
            out["advantages"] = raw
            logged = self.accelerator.gather(raw).tolist()
            log = self._logs["advantages"]
            for _ in range(min(len(logged), len(log))):
                log.pop()
            log.extend(logged)

    return HarnessGRPOTrainer


def prepare_tokenizer(tok):
    """Give the tokenizer a TRL response parser: known templates through ``add_response_schema``;
    the Qwen2.5/Qwen3 *training* templates (same text plus generation markers) get Qwen's parser."""
    if getattr(tok, "response_template", None) is not None or getattr(tok, "response_schema", None) is not None:
        return tok
    import trl.chat_template_utils as ctu  # local import: trl and torch are heavy

    try:
        return ctu.add_response_schema(tok)
    except ValueError:
        qwen_training = [
            getattr(ctu, n, None)
            for n in (
                "qwen2_5_training_chat_template",
                "qwen3_training_chat_template",
                "qwen3_instruct_2507_training_chat_template",
            )
        ]
        if tok.chat_template in qwen_training:
            if ctu._SUPPORTS_RESPONSE_TEMPLATE:
                tok.response_template = ctu.qwen3_template
            else:
                tok.response_schema = ctu.qwen3_schema
            return tok
        raise


def tool_rounds(cfg: RLConfig) -> int:
    """TRL's ``max_tool_calling_iterations``: the replies an episode may have (``harness.turn_budget``:
    ``max_turns``, plus FastContext's extra last turn as released) less the one that ends it."""
    return cfg.max_turns - 1 + int(toolset_class(cfg.toolset).extra_final_turn)


def grpo_args(cfg: RLConfig, use_cpu: bool | None = None):
    """The TRL ``GRPOConfig`` of ``cfg`` (``cfg.grpo`` passes any other field through)."""
    import torch  # local import: torch is heavy
    from trl import GRPOConfig  # local import: trl adds to torch

    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    extra = dict(cfg.grpo or {})
    checkpointing = extra.pop("gradient_checkpointing", cfg.gradient_checkpointing)  # the old name in cfg.grpo
    return GRPOConfig(
        output_dir=str(cfg.out),
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        max_tool_calling_iterations=tool_rounds(cfg),
        epsilon=cfg.epsilon,
        epsilon_high=cfg.epsilon_high,
        beta=cfg.beta,
        loss_type=cfg.loss_type,
        temperature=cfg.temperature,
        seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        report_to=report_to_list(cfg.report_to),
        bf16=cfg.bf16,
        use_vllm=cfg.use_vllm,
        vllm_mode=cfg.vllm_mode,
        vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
        use_cpu=use_cpu,
        remove_unused_columns=False,
        **{**device_args(checkpointing, use_cpu), **extra},
    )


def build_dataset(tasks: list[Task], cfg: RLConfig):
    """A ``datasets.Dataset`` with the harness's initial messages as ``prompt`` and the task as JSON."""
    from datasets import Dataset  # local import: datasets heavy

    rows, sources = [], Counter()
    for t in tasks:
        ts = make_toolset(cfg.toolset, t.root, cfg.limits.tool)
        query, source = ts.episode_query(t)
        sources[source] += 1
        rows.append({"prompt": initial_messages(ts, query, cfg.limits), "task": json.dumps(t.to_dict())})
    note = query_note(sources)
    if note:
        print(f"rl: {note}")
    return Dataset.from_list(rows)


def peft_config(cfg: RLConfig):
    """PEFT's ``LoraConfig`` of ``cfg`` (rank ``lora_r``, scale ``lora_alpha``), or None without LoRA."""
    if not cfg.lora:
        return None
    from peft import LoraConfig  # local import: peft and torch are heavy

    return LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM")


def make_trainer(cfg: RLConfig, tasks: list[Task] | None = None):
    """(trainer, tasks) for ``cfg``: the model, tokenizer, dataset, environment and reward wired up."""
    import torch  # local import: torch is heavy

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    check_report_to(cfg.report_to, "rl config")  # a missing tracker: one line, before tasks and model load
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
        model, tok = load_model(path, dtype=dtype, device="cpu", trainable=True)
    else:
        from transformers import AutoModelForCausalLM  # local import: transformers adds to torch

        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        tok = load_tokenizer(path)
    tok.padding_side = "left"
    try:
        prepare_tokenizer(tok)
    except ValueError as e:  # TRL has no tool-call parser for the template ("Unrecognized chat template")
        raise ValueError(
            f"grpo: TRL's tool loop has no tool-call parser for the {template_family(tok.chat_template)} "
            f"chat template ({str(e).splitlines()[0][:80]}); use a Qwen2.5/Qwen3 tool template "
            "(fasbench.models.tool_chat_template())"
        ) from None
    check_parallel(tok, "grpo")  # TRL's parser must give back every parallel call, in order
    args = grpo_args(cfg, use_cpu=not cuda)
    # TRL's generation helpers (trl.models.utils) read model.is_gradient_checkpointing, which transformers
    # 5.x warns is deprecated, at every generation; nothing here calls it, so that one message is silenced.
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    reward = EpisodeReward(cfg.reward, out, cfg.log_rollouts, make_judge(cfg.judge) if cfg.judge else None)
    limits = cfg.limits
    env_cls = environment_class(cfg.toolset, limits)
    trainer = _trainer_class()(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=build_dataset(tasks, cfg),
        processing_class=tok,
        environment_factory=env_cls,
        peft_config=peft_config(cfg),
        callbacks=[step_log(out / LOG_FILE), save_at_end()],
        harness_tool_schemas=harness_schemas(cfg.toolset, limits),
        episode_reward=reward,
        raw_advantages=cfg.advantage == "raw",
    )
    return trainer, tasks


def train(cfg: RLConfig, tasks: list[Task] | None = None) -> dict:
    """Run GRPO; resume from the last checkpoint in ``cfg.out`` when ``cfg.resume``. Saves the final
    model to ``out/final`` and returns (and writes ``summary.json``) the run's headline numbers, with
    ``steps_this_call`` and ``steps_resumed`` (also printed). ``max_steps`` is a total: a run resumed
    at or past it does no step, keeps ``final/`` and returns its earlier summary with
    ``steps_this_call`` 0 (a checkpoint is saved at the last step, so no step is ever trained twice)."""
    import torch  # local import: torch is heavy

    out = cfg.out
    start = resolve_model_spec(cfg)
    resume = last_checkpoint(out) if cfg.resume else None
    if resume and (out / "config.json").exists():
        before = json.loads((out / "config.json").read_text()).get("resolved_model")
        if before is not None and before != start:
            raise ValueError(
                f"{out} holds a run that started from {before!r}, but this config starts from "
                f"{start!r}; use another output_dir (or delete {out}) to train from it"
            )
    start_step = checkpoint_step(resume)
    if resume and cfg.max_steps > 0 and start_step >= cfg.max_steps and (out / "final").is_dir():
        old = json.loads((out / SUMMARY_FILE).read_text()) if (out / SUMMARY_FILE).exists() else {}
        summary = {
            **old,
            "resumed_from": resume,
            "global_step": start_step,
            "steps_this_call": 0,
            "steps_resumed": start_step,  # the other numbers are the earlier call's (the model in final/)
            "note": f"resumed at step {start_step} >= max_steps={cfg.max_steps}: no step in this call; "
            f"the numbers are those of the earlier call that trained final/",
        }
        (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1, default=str))
        print(resume_line("RL", out, start_step, 0, cfg.max_steps))
        return summary
    trainer, tasks = make_trainer(cfg, tasks)
    (out / "config.json").write_text(json.dumps({**cfg.to_dict(), "resolved_model": start}, indent=1))
    init = None
    if cfg.track_weights:
        init = {k: v.detach().to("cpu", copy=True) for k, v in trainer.model.named_parameters() if v.requires_grad}
    t0 = time.time()
    result = trainer.train(resume_from_checkpoint=resume)
    wall = time.time() - t0
    trainer.save_model(str(out / "final"))
    trainer.processing_class.save_pretrained(str(out / "final"))
    summary: dict[str, Any] = {
        "config": cfg.to_dict(),
        "model": resolve_model_spec(cfg),
        "n_tasks": len(tasks),
        "task_ids": [t.id for t in tasks],
        "resumed_from": resume,
        "global_step": trainer.state.global_step,
        "train_loss": result.training_loss,
        "wall_s": wall,
    }
    if init is not None:
        # Against the weights at the start of this call (the resumed checkpoint's, when resuming).
        sq = diff = 0.0
        with torch.no_grad():
            for k, v in trainer.model.named_parameters():
                if k in init:
                    d = v.detach().float().cpu() - init[k].float()
                    diff += float(d.pow(2).sum())
                    sq += float(init[k].float().pow(2).sum())
        summary["weight_delta_l2"] = math.sqrt(diff)
        summary["weight_delta_rel"] = math.sqrt(diff) / max(math.sqrt(sq), 1e-12)
    steps = read_log(out, LOG_FILE)
    steps = [s for s in steps if s.get("kind") == "step"]
    summary["logged_steps"] = len(steps)
    summary["steps_with_reward_parts"] = sum(any(k.startswith("reward_parts/") for k in s) for s in steps)
    summary["nonzero_loss_steps"] = sum(abs(s.get("loss", 0.0) or 0.0) > 0 for s in steps)
    summary["steps_this_call"] = trainer.state.global_step - start_step
    summary["steps_resumed"] = start_step
    summary["s_per_step"] = wall / max(1, summary["steps_this_call"])
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1, default=str))
    print(resume_line("RL", out, start_step, summary["steps_this_call"], cfg.max_steps))
    return summary
