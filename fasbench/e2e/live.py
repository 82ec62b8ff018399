"""A live main agent: mini-swe-agent (the PyPI package ``mini-swe-agent``, its ``DefaultAgent``, local
environment and LiteLLM tool-call model) on a copy of a task's corpus, against any OpenAI-compatible
endpoint, with an optional handoff from the fasbench search subagent in its task text (the subagent
runs as a first step; FastContext's and Relace's main agents get the subagent's report the same way,
before they start).

Prompts are mini-swe-agent's own SWE-bench configuration (``config/benchmarks/swebench.yaml``: system
and instance templates, observation and format-error templates, ``parallel_tool_calls``), with two
changes: the working directory named in the instance template is the corpus copy instead of
``/testbed``, and the environment is mini-swe-agent's bubblewrap one configured by fasbench
(``fasbench.e2e.workcopy``: only the copy writable, nothing of the host's home, caches or run directory
visible, no network, a cleared environment; ``check_main_sandbox`` fails before any episode where bwrap is
missing). The model endpoint is called by this process, never by a command; the API key is sent but not
saved in the trajectory. Step and cost limits come from ``MainConfig``. Every model call goes through
:func:`fasbench.base.endpoint.bounded_client` (set as ``litellm.client_session``): ``timeout_s`` is the call's
total wall time, the reply body is capped and its shape checked, and each failure reaches mini-swe-agent
as a 502/504 answer naming it.

Offline notes (measured here): importing LiteLLM fetches its model-cost map from GitHub at import time
and, without network, retries for ~6 s and falls back to its bundled copy; ``LITELLM_LOCAL_MODEL_COST_MAP``
is set before the import so it reads the bundled copy at once. mini-swe-agent writes a global config
folder (``MSWEA_GLOBAL_CONFIG_DIR``, set to the fasbench cache) and tracks cost through LiteLLM's price
table, which has no entry for a local model: cost tracking is set to ``ignore_errors`` (tokens are counted
from the endpoint's ``usage`` instead). Nothing else in the main-agent path needs the network.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fasbench.base.endpoint import bounded_client
from fasbench.base.paths import cache_dir
from fasbench.base.specs import convert, parse_spec
from fasbench.base.untrusted import SandboxError, check_sandbox, execute_sandboxed, sandbox_env, wrapper_args

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", str(cache_dir("mini-swe-agent")))

try:
    import litellm
    import minisweagent
    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.extra.bubblewrap import BubblewrapEnvironment, BubblewrapEnvironmentConfig
    from minisweagent.models.litellm_model import LitellmModel
except ImportError as _e:  # a clear error where it is used, not at `fasbench` start-up
    IMPORT_ERROR: ImportError | None = _e
else:
    IMPORT_ERROR = None
    litellm.suppress_debug_info = True  # else each call to an unpriced (local) model prints LiteLLM's provider list

SWEBENCH_CONFIG = "config/benchmarks/swebench.yaml"
CONNECTION_ERRORS = ("APIConnectionError", "ServiceUnavailableError", "Timeout", "InternalServerError")


class MainAgentError(RuntimeError):
    """The main agent cannot run (package missing, endpoint unreachable): nothing is recorded."""


@dataclass
class MainConfig:
    """``openai:model=…,base_url=…[,key=value…]``: the main agent's endpoint and limits."""

    model: str = ""  # model name the endpoint serves
    base_url: str = ""  # e.g. http://127.0.0.1:8000/v1
    api_key_env: str = "OPENAI_API_KEY"  # environment variable with the key ("EMPTY" is sent without one)
    temperature: float = 0.0
    max_tokens: int = 2048  # completion tokens per call
    step_limit: int = 40  # model calls per task (mini-swe-agent's step_limit; its SWE-bench default is 250)
    command_timeout_s: int = 60  # per shell command (mini-swe-agent's SWE-bench default)
    wall_limit_s: int = 0  # per task; 0 = none
    retries: int = 3  # attempts per model call on retryable errors (MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT)
    timeout_s: float = 300.0  # total wall time of one model call (fasbench.base.endpoint: deadline and body cap)


if IMPORT_ERROR is None:

    class SandboxEnvironment(BubblewrapEnvironment):
        """mini-swe-agent's bubblewrap environment with fasbench's configuration (``fasbench.e2e.workcopy``).
        Two changes: ``execute`` starts bwrap with the sandbox's environment, not this process's (mini-swe-agent's
        passes the caller's, which the sandbox's pid 1 then holds in ``/proc/1/environ``), stdin ``/dev/null``;
        no host temp directory is made (the copy is the working directory)."""

        def __init__(self, *, cwd: str, timeout: int, env: dict[str, str], executable: str):
            self.env_all = sandbox_env(env)
            self.config = BubblewrapEnvironmentConfig(
                cwd=cwd,
                timeout=timeout,
                env=self.env_all,
                executable=executable,
                wrapper_args=wrapper_args(self.env_all),
            )

        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
            out = execute_sandboxed(
                self.config.executable,
                self.config.cwd,
                action.get("command", ""),
                self.env_all,
                timeout or self.config.timeout,
            )
            self._check_finished(out)
            return out

        def cleanup(self):  # nothing of its own on the host: the copy is the runner's
            pass

    class KeylessTrajectoryModel(LitellmModel):
        """LiteLLM's model; its serialized config (saved in the trajectory) without ``api_key``."""

        def serialize(self) -> dict:
            d = super().serialize()
            d["info"]["config"]["model"].get("model_kwargs", {}).pop("api_key", None)
            return d


def check_main_sandbox() -> str:
    """bwrap's path once it has run a probe command in the main agent's sandbox; MainAgentError (one
    line: what to install) otherwise. Called before any episode."""
    if IMPORT_ERROR is not None:
        raise MainAgentError(
            f"the live main agent needs the 'mini-swe-agent' package ({IMPORT_ERROR}); pip install mini-swe-agent"
        )
    try:
        return check_sandbox()
    except SandboxError as e:
        raise MainAgentError(str(e)) from None


def _model(cfg: MainConfig, mconf: dict):
    """mini-swe-agent's LiteLLM model with the endpoint's key (which its trajectory leaves out)."""
    return KeylessTrajectoryModel(
        model_name=f"openai/{cfg.model}",
        cost_tracking="ignore_errors",
        observation_template=mconf["observation_template"],
        format_error_template=mconf["format_error_template"],
        model_kwargs={
            **mconf.get("model_kwargs", {}),
            "api_base": cfg.base_url,
            "api_key": os.environ.get(cfg.api_key_env, "") or "EMPTY",
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "timeout": cfg.timeout_s,
        },
    )


def parse_main(spec: str) -> MainConfig:
    """``openai:model=NAME,base_url=URL,...`` → MainConfig; a clear error on anything else."""
    name, kw = parse_spec(spec)
    if name != "openai":
        raise ValueError(
            f"--main {spec!r}: the main agent needs an OpenAI-compatible endpoint, 'openai:model=NAME,base_url=URL'"
        )
    fields = MainConfig.__dataclass_fields__
    bad = [k for k in kw if k not in fields]
    if bad:
        raise ValueError(f"--main: unknown parameter {bad[0]!r}; known: {', '.join(fields)}")
    cfg = MainConfig(**{k: convert(v, fields[k].type, f"--main {k}") for k, v in kw.items()})
    if not cfg.model or not cfg.base_url:
        raise ValueError(f"--main {spec!r}: needs model=… and base_url=…")
    return cfg


def _swebench_config() -> dict:
    return yaml.safe_load((Path(minisweagent.package_dir) / SWEBENCH_CONFIG).read_text(encoding="utf-8"))


def task_text(query: str, handoff: str | None) -> str:
    """The task the main agent gets: the issue, then the subagent's handoff when there is one."""
    if not handoff:
        return query
    return (
        f"{query}\n\nA code search subagent has already explored this repository for the issue above. "
        f"Its report:\n\n<search_report>\n{handoff}\n</search_report>"
    )


def usage_totals(messages: list[dict]) -> dict:
    """Prompt and completion tokens summed over every model call's ``usage`` (format-error calls too)."""
    p = c = n = 0
    for m in messages:
        u = ((m.get("extra") or {}).get("response") or {}).get("usage") if isinstance(m, dict) else None
        if isinstance(u, dict):
            p += int(u.get("prompt_tokens") or 0)
            c += int(u.get("completion_tokens") or 0)
            n += 1
    return {"prompt_tokens": p, "completion_tokens": c, "tokens": p + c, "model_calls": n}


_SESSIONS: dict = {}


def _model_session(base_url: str, timeout_s: float, max_chars: int):
    """One bounded, checking HTTP client per endpoint (LiteLLM caches the OpenAI clients made with it)."""
    key = (base_url, timeout_s, max_chars)
    if key not in _SESSIONS:
        _SESSIONS[key] = bounded_client(base_url, timeout_s, gateway_chars=max_chars)
    return _SESSIONS[key]


def run_main(
    query: str,
    workdir: Path,
    cfg: MainConfig,
    traj_path: Path,
    instance_id: str,
    handoff: str | None = None,
    extra_info: dict | None = None,
) -> dict:
    """Run mini-swe-agent on ``workdir`` (its commands in the sandbox); save its trajectory to
    ``traj_path``; return exit status, submission, tokens, turns and wall time. Raises MainAgentError
    when the endpoint is unreachable or the sandbox cannot start."""
    bwrap = check_main_sandbox()
    workdir = Path(workdir).resolve()  # bound at its own path in the sandbox
    os.environ["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] = str(max(1, cfg.retries))
    conf = _swebench_config()
    agent_cfg = dict(conf["agent"])
    agent_cfg["instance_template"] = agent_cfg["instance_template"].replace("/testbed", str(workdir))
    agent_cfg.update(
        step_limit=cfg.step_limit, cost_limit=0.0, wall_time_limit_seconds=cfg.wall_limit_s, output_path=traj_path
    )
    mconf = conf["model"]
    model = _model(cfg, mconf)
    # LiteLLM's OpenAI client sends through litellm.client_session: fasbench.base.endpoint's bounded client
    # makes the call's timeout its total deadline, caps the reply body (MAX_REPLY_BYTES) and checks the
    # reply's shape, each failure a 502/504 answer whose message names it
    litellm.client_session = _model_session(cfg.base_url, cfg.timeout_s, max(65536, 32 * cfg.max_tokens))
    env_vars = {k: v for k, v in conf["environment"].get("env", {}).items() if k != "BASH_ENV"}
    env = SandboxEnvironment(cwd=str(workdir), timeout=cfg.command_timeout_s, env=env_vars, executable=bwrap)
    agent = DefaultAgent(model, env, **agent_cfg)
    t0 = time.time()
    error = None
    try:
        result = agent.run(task_text(query, handoff))
    except Exception as e:  # mini-swe-agent re-raises after recording the exit message
        if type(e).__name__ in CONNECTION_ERRORS or isinstance(e, getattr(litellm, "APIConnectionError", ())):
            raise MainAgentError(f"main agent endpoint {cfg.base_url}: {type(e).__name__}: {str(e)[:300]}") from e
        result = {"exit_status": type(e).__name__, "submission": ""}
        error = f"{type(e).__name__}: {str(e)[:500]}"
    wall = time.time() - t0
    info = {"fasbench": {"main": asdict(cfg), **(extra_info or {})}}
    agent.save(traj_path, {"instance_id": instance_id, "info": info})
    return {
        "exit_status": result.get("exit_status", ""),
        "submission": result.get("submission", "") or "",
        "error": error,
        "turns": agent.n_calls,
        "main_wall_s": wall,
        **usage_totals(agent.messages),
    }
