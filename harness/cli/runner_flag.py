"""``--runner NAME[,NAME...]``: what runs each round's session, one name per attempt."""

from __future__ import annotations

from typing import get_args

from harness.agent.config import RunnerName
from harness.core.errors import ConfigError
from harness.spec import LoopSpec


def runner_names(flag: str) -> list[str]:
    """The names ``--runner`` lists (commas between), each one a runner's."""
    names = [name.strip() for name in flag.split(",")]
    known = get_args(RunnerName)
    for name in names:
        if name not in known:
            raise ConfigError(f"--runner: expected one of {', '.join(known)}, got {name!r}")
    return names


def with_runner(config: LoopSpec, runner: str) -> LoopSpec:
    """``config`` with ``runner``'s session, checked again with the file's other fields (runner
    ``command`` needs ``[agent] command``)."""
    return config.with_changes(agent={**config.agent.model_dump(), "runner": runner})


def runner_of(runners: list[str], number: int) -> str | None:
    """The runner of attempt ``number`` (1-based) when ``--runner`` named several: in turn."""
    return runners[(number - 1) % len(runners)] if runners else None
