"""The session protocol: the outer loop runs any object meeting it, not only its own agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, AgentRun, OuterLoop, PytestGate, ScriptedModel, StopReason
from harness.agent.agent import AgentStop
from harness.agent.ledger import Ledger
from harness.agent.session import ChecksFit, Session, TakesAsker, TakesTools
from harness.core.errors import ConfigError
from harness.core.sink import NULL_SINK, EventSink
from harness.core.usage import Usage
from harness.models.base import Model
from harness.sandbox import Sandbox
from harness.tools.mcp import McpServer
from tests.conftest import git, make_repo

TESTS = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"


class Fixer:
    """A session of its own: it writes a fix, and asks the model once per round."""

    def __init__(self, model: Model, fixes: list[str]) -> None:
        self.model = model
        self.sandbox: Sandbox | None = None
        self.fixes = fixes
        self.tasks: list[str] = []

    def with_model(self, model: Model) -> Fixer:
        twin = Fixer(model, self.fixes)
        twin.tasks = self.tasks
        return twin

    def run(
        self,
        task: str,
        workspace: str | Path = ".",
        *,
        ledger: Ledger | None = None,
        protect: tuple[str, ...] = (),
        events: EventSink = NULL_SINK,
    ) -> AgentRun:
        self.tasks.append(task)
        reply = self.model.complete([{"role": "user", "content": task}])
        (Path(workspace) / "calc.py").write_text(self.fixes.pop(0))
        return AgentRun(reply.content, [], 1, reply.usage, AgentStop.ANSWERED)


def test_the_loop_runs_a_plain_session_round_after_round(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return 0\n",
                                         "tests/test_calc.py": TESTS})  # fmt: skip
    model = ScriptedModel(["tried multiplying", "tried adding"])
    fixer = Fixer(
        model, ["def add(a, b):\n    return a * b\n", "def add(a, b):\n    return a + b\n"]
    )
    assert isinstance(fixer, Session)
    assert not isinstance(fixer, ChecksFit | TakesTools | TakesAsker)
    result = OuterLoop(
        "make the tests pass", fixer, gates=[PytestGate("tests")], workspace=repo,
        progress=tmp_path / "progress.md",
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 2
    assert [r.agent_summary for r in result.rounds] == ["tried multiplying", "tried adding"]
    assert "tests/test_calc.py::test_add" in fixer.tasks[1]
    assert "tests/test_calc.py::test_add" not in fixer.tasks[0]
    # Its requests went through the run's metered model: counted in the run's usage.
    assert result.usage.calls == 2
    assert result.usage == sum((r.usage for r in result.rounds), Usage())
    assert git(repo, "show", f"{result.branch}:calc.py") == "def add(a, b):\n    return a + b"


def test_the_harness_s_agent_meets_every_part_of_the_protocol() -> None:
    agent = Agent(ScriptedModel([]))
    assert isinstance(agent, Session | ChecksFit | TakesTools | TakesAsker)
    assert all(isinstance(agent, kind) for kind in (Session, ChecksFit, TakesTools, TakesAsker))


def test_mcp_servers_with_a_session_that_takes_no_tools_are_refused_naming_mcp(
    tmp_path: Path,
) -> None:
    fixer = Fixer(ScriptedModel([]), [])
    server = McpServer(name="files", command=["true"])
    with pytest.raises(ConfigError, match=r"^mcp: a Fixer session cannot use the tools"):
        OuterLoop(
            "goal", fixer, gates=[PytestGate("tests")], workspace=tmp_path,
            mcp=(server,),
        )  # fmt: skip
