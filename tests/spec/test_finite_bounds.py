"""Finite bounds only: ``inf`` and ``nan`` are refused with the field named, from loop.toml, the
command line and the Python API alike (``[budget] seconds = inf`` once crashed round 1)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import Budget, CommandGate, Critic, HumanGate, LiteLLMModel, PytestGate, Skill
from harness.agent.compaction import MaskObservations
from harness.core.errors import ConfigError
from harness.engine.bounds import Watchdog
from harness.models.rate_limit import RateLimiter
from harness.models.scripted import ScriptedModel
from harness.spec import LoopSpec
from harness.tools.mcp_server import McpServer
from harness.tools.toolkit import ToolContext
from tests.cli.test_cli import harness, write_loop

GATE = '[[gates]]\ntype = "command"\ncmd = "true"\n'


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "+inf"])
@pytest.mark.parametrize(
    ("table", "key", "field"),
    [
        ("[budget]", "seconds", "budget.seconds"),
        ("[budget]", "cost_usd", "budget.cost_usd"),
        ("[budget]", "tokens", "budget.tokens"),
        ("[agent]", "shell_timeout", "agent.shell_timeout"),
        ("[agent]", "compaction_threshold", "agent.compaction_threshold"),
        ("[critic]", "threshold", "critic.threshold"),
        ("[model_options]", "timeout", "model_options.timeout"),
        ("[web]", "timeout", "web.timeout"),
        ("[permissions]", "ask_timeout", "permissions.ask_timeout"),
        ("[subagents]", "max_depth", "subagents.max_depth"),
    ],
)
def test_loop_toml_refuses_inf_and_nan_naming_the_field(
    tmp_path: Path, table: str, key: str, field: str, value: str
) -> None:
    path = write_loop(tmp_path, f'goal = "x"\n{GATE}{table}\n{key} = {value}\n')

    with pytest.raises(ConfigError) as error:
        LoopSpec.from_toml(path)

    assert f"field '{field}" in str(error.value)
    assert "loop.toml" in str(error.value)


@pytest.mark.parametrize("value", ["inf", "nan"])
def test_gate_and_mcp_timeouts_in_loop_toml_refuse_inf_and_nan(tmp_path: Path, value: str) -> None:
    gate = write_loop(tmp_path / "g", f'goal = "x"\n{GATE}timeout = {value}\n')
    mcp = write_loop(
        tmp_path / "m", f'goal = "x"\n{GATE}[[mcp]]\nname = "t"\ncommand = ["x"]\n'
        f"call_timeout = {value}\n",
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"field 'gates\[0\]\.timeout'"):
        LoopSpec.from_toml(gate)
    with pytest.raises(ConfigError, match=r"field 'mcp\[0\]\.call_timeout'"):
        LoopSpec.from_toml(mcp)


def test_a_finite_budget_in_loop_toml_still_reads() -> None:
    spec = LoopSpec(goal="x", budget={"seconds": 1e9, "cost_usd": 0.5})  # type: ignore[arg-type]
    assert (spec.budget.seconds, spec.budget.cost_usd) == (1e9, 0.5)


def test_harness_run_with_an_infinite_time_budget_exits_2_naming_it(tmp_path: Path) -> None:
    write_loop(tmp_path, f'goal = "x"\nisolation = "none"\n{GATE}[budget]\nseconds = inf\n')

    result = harness("run", str(tmp_path), "--model", "scripted:none.json", cwd=tmp_path)

    assert result.returncode == 2, result.stdout + result.stderr
    assert "field 'budget.seconds': must be a finite number above 0, got inf" in result.stderr
    assert "OverflowError" not in result.stdout + result.stderr


@pytest.mark.parametrize("rate", ["m=inf", "m=nan", "m=0"])
def test_a_rate_limit_on_the_command_line_must_be_finite(tmp_path: Path, rate: str) -> None:
    (tmp_path / "tasks.jsonl").write_text("")
    result = harness("batch", "tasks.jsonl", "--rate-limit", rate, cwd=tmp_path)
    assert result.returncode == 2
    assert "must be a finite number above 0, got" in result.stderr


BAD = [math.inf, -math.inf, math.nan]
API: dict[str, tuple[Callable[[float], object], str]] = {
    "Budget.seconds": (lambda v: Budget(seconds=v), "budget.seconds"),
    "Budget.cost_usd": (lambda v: Budget(cost_usd=v), "budget.cost_usd"),
    "Budget.tokens": (lambda v: Budget(tokens=v), "budget.tokens"),  # type: ignore[arg-type]
    "Watchdog": (lambda v: Watchdog(seconds=v), "Watchdog.seconds"),
    "CommandGate": (lambda v: CommandGate("true", timeout=v), "timeout"),
    "PytestGate": (lambda v: PytestGate(timeout=v), "timeout"),
    "HumanGate.timeout": (lambda v: HumanGate(timeout=v), "timeout"),
    "HumanGate.poll_interval": (lambda v: HumanGate(poll_interval=v), "poll_interval"),
    "Critic": (lambda v: Critic(ScriptedModel(), threshold=v), "threshold"),
    "LiteLLMModel": (lambda v: LiteLLMModel("openai/x", timeout=v), "timeout"),
    "RateLimiter": (lambda v: RateLimiter(v), "requests per minute"),
    "MaskObservations": (lambda v: MaskObservations(threshold=v), "threshold"),
    "McpServer": (lambda v: McpServer("t", command=["x"], call_timeout=v), "call_timeout"),
}


@pytest.mark.parametrize("value", BAD, ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("name", list(API))
def test_the_python_api_refuses_inf_and_nan_naming_the_field(name: str, value: float) -> None:
    make, field = API[name]
    with pytest.raises((ConfigError, ValueError)) as error:
        make(value)
    assert field in str(error.value)


@pytest.mark.parametrize("value", BAD, ids=["inf", "-inf", "nan"])
def test_the_tool_context_refuses_inf_and_nan(tmp_path: Path, value: float) -> None:
    for name in ("shell_timeout", "max_shell_timeout", "search_timeout"):
        with pytest.raises(ConfigError, match=f"^{name}: must be a finite number above 0, got"):
            ToolContext(workspace=tmp_path, **{name: value})


def test_finite_values_at_the_edges_are_accepted(tmp_path: Path) -> None:
    assert Budget(tokens=1, cost_usd=1e-9, seconds=1e12).seconds == 1e12
    assert Watchdog(seconds=1e-3).seconds == 1e-3
    assert ToolContext(workspace=tmp_path, search_timeout=1e6).search_timeout == 1e6
    assert CommandGate("true", timeout=0.001).timeout == 0.001


@pytest.mark.parametrize("value", ["inf", "nan"])
def test_a_skills_threshold_must_be_finite(value: str) -> None:
    text = f"---\nname: s\nthreshold: {value}\n---\n\n## Success\n\nok\n"
    with pytest.raises(ConfigError, match="^<skill>: threshold: Input should be a finite number$"):
        Skill.parse(text)
