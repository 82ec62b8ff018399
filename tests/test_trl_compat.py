"""The TRL adapter: the installed TRL passes, an older version or a GRPOTrainer without an overridden
private method fails with one message naming the supported range."""

import pytest
from trl import GRPOTrainer

from fasbench.rl import trl_compat
from fasbench.rl.trl_compat import SUPPORTED, TRLVersionError, check_grpo_trainer, check_version


def test_installed_trl_passes():
    check_grpo_trainer(GRPOTrainer)  # the real installed TRL and its real GRPOTrainer


@pytest.mark.parametrize("v", ["0.24.0", "1.15.2", "2.0.0", "not-a-version"])
def test_unsupported_version_fails_clearly(v):
    with pytest.raises(TRLVersionError) as e:
        check_grpo_trainer(GRPOTrainer, v)
    msg = str(e.value)
    assert f"TRL {v} is installed" in msg and f"trl{SUPPORTED}" in msg and "\n" not in msg


def test_fake_old_installed_version(monkeypatch):
    monkeypatch.setattr(trl_compat, "installed_version", lambda name: "0.24.0")
    with pytest.raises(TRLVersionError, match=r"TRL 0\.24\.0 is installed; .*trl>=1\.16,<2"):
        check_grpo_trainer(GRPOTrainer)


def test_trainer_without_private_method_fails():
    class OldTrainer:  # a GRPOTrainer of a release before the environment tool loop
        def _generate_single_turn(self): ...

        def _generate_and_score_completions(self): ...

    with pytest.raises(TRLVersionError, match=r"no _tool_call_loop, _get_tool_suffix_ids, .*trl>=1\.16,<2"):
        check_grpo_trainer(OldTrainer, "1.16.0")


def test_env_tools_layout():
    class T:
        _env_tools = [{"name": "x"}]  # a list: not the multi-environment dict

    with pytest.raises(TRLVersionError, match=r"_env_tools is not a"):
        trl_compat.check_env_tools(T())
    T._env_tools = {None: []}
    trl_compat.check_env_tools(T())


def test_check_version_bounds():
    check_version("1.16.0")
    check_version("1.99.3")
