"""``--runner NAME[,NAME...]``: what runs each round's session, one name per attempt (``harness
run``), or each task or instance once per name (``harness batch``, ``harness bench``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast, get_args

from harness.agent.config import RunnerName
from harness.core.errors import ConfigError


def runner_names(flag: str, *, repeats: bool = True) -> list[RunnerName]:
    """The names ``--runner`` lists (commas between), each one a runner's; ``repeats`` false:
    each at most once (side by side, a name twice would run the same thing twice)."""
    names = [name.strip() for name in flag.split(",")]
    known = get_args(RunnerName)
    for name in names:
        if name not in known:
            raise ConfigError(f"--runner: expected one of {', '.join(known)}, got {name!r}")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice and not repeats:
        raise ConfigError(f"--runner: {', '.join(twice)} named twice; name each runner once")
    return [cast(RunnerName, name) for name in names]


def runner_of(runners: Sequence[str], number: int) -> str | None:
    """The runner of attempt ``number`` (1-based) when ``--runner`` named several: in turn."""
    return runners[(number - 1) % len(runners)] if runners else None
