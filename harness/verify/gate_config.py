"""``[[gates]]`` of the kinds this package runs: pytest, a command, a Python predicate, a person,
reproduction tests.

loop.toml reads them through :class:`~harness.spec.LoopSpec`; :class:`~harness.verify.gates.CommandGate`,
:class:`~harness.verify.gates.PytestGate` and :class:`~harness.verify.human.HumanGate` read their
defaults and bounds from here, so neither is written twice.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from harness.core.section import Section

GATE_SECONDS = 600.0
"""How long a gate's command may run, seconds, unless its ``timeout`` says otherwise."""

APPROVAL_SECONDS = 3600.0
"""How long a person is waited for (``harness approve``) before the run escalates, seconds."""


Feedback = Literal["none", "pass_fail", "ids"]
"""What the agent is told of a failing held-out gate: nothing but that a check failed, that the
held-out tests failed, or also which ones."""


class HeldOutConfig(Section):
    """A gate that may judge with held-out files: a folder (relative to loop.toml, outside the
    workspace) laid over a copy of the round's checkout only, never shown to the agent."""

    held_out: str | None = Field(None, min_length=1)
    feedback: Feedback = "pass_fail"  # what the agent is told


class PytestGateConfig(HeldOutConfig):
    type: Literal["pytest"]
    args: str = ""
    timeout: float = Field(GATE_SECONDS, gt=0)


class CommandGateConfig(HeldOutConfig):
    type: Literal["command"]
    cmd: str = Field(min_length=1)
    name: str | None = None
    timeout: float = Field(GATE_SECONDS, gt=0)


class ScriptGateConfig(Section):
    """A Python predicate: ``module:function`` taking the workspace path."""

    type: Literal["python"]
    target: str = Field(pattern=r"^[\w.]+:\w+$")
    name: str | None = None


class HumanGateConfig(Section):
    """A person approves each round the other gates and the critic passed."""

    type: Literal["human"]
    timeout: float = Field(APPROVAL_SECONDS, gt=0)  # then the run escalates
    interactive: bool | None = None  # None: ask inline when run on a terminal


def _test_id(test_id: str) -> str:
    """A pytest node id of a test in the workspace: ``tests/test_x.py::test_y``."""
    path = test_id.split("::")[0]
    parts = PurePosixPath(path).parts
    if not path or path.startswith(("-", "/")) or ".." in parts or any(c.isspace() for c in path):
        raise ValueError(f"{test_id!r} is not a test id relative to the workspace")
    return test_id


class ReproductionGateConfig(Section):
    """The round's tests reproduce the bug: each fails at the run's base commit and passes on the
    round's commit. ``tests`` names them (pytest node ids); none named, the tests the round
    added or changed are the ones."""

    type: Literal["reproduction"]
    tests: list[Annotated[str, AfterValidator(_test_id)]] = []
    timeout: float = Field(GATE_SECONDS, gt=0)  # for each of the two pytest runs
    name: str = Field("reproduction", min_length=1)
