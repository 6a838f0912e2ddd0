"""The environment a command gets: by allow-list inside a sandbox, by deny-list without one."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import Field

from harness.core.errors import ConfigError
from harness.core.redact import SECRET_NAME

ALLOWED_NAMES = ("PATH", "LANG", "TERM", "TZ")
"""Variables every sandboxed command gets from the harness's environment (plus ``LC_*``)."""
ALWAYS_SET = {"PYTHONDONTWRITEBYTECODE": "1"}
"""Values every sandboxed command gets: no byte code written into the workspace."""
PASSED_NAMES = "HARNESS_SANDBOX_ENV"
"""The variable naming more variables every sandboxed command gets, for one invocation."""
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
"""The name of an environment variable, as a pattern."""

EnvName = Annotated[str, Field(pattern=rf"^{ENV_NAME}$")]
"""The name of an environment variable (one passed to commands, or where a secret is read from,
never the secret itself), as a field of a configuration section."""


def passed_names() -> tuple[str, ...]:
    """The names :data:`PASSED_NAMES` lists (separated by commas or spaces): passed to every
    sandboxed command besides ``[sandbox] env``, without editing loop.toml (a CI job's proxy,
    its package index). Set by whoever starts the harness, out of the agent's reach."""
    names = tuple(name for name in re.split(r"[\s,]+", os.environ.get(PASSED_NAMES, "")) if name)
    for name in names:
        if not re.fullmatch(ENV_NAME, name):
            raise ConfigError(f"{PASSED_NAMES}: {name!r} is not the name of a variable")
    return names


def safe_env(
    base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) without API keys and other secrets.

    A deny-list, for commands the harness's user configured (the escalation hook); the agent's
    commands and the gates get :func:`allowed_env` instead. The directory of the Python running
    harness comes first on ``PATH`` (see :func:`with_python_first`).
    """
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if not SECRET_NAME.search(k)  # the same names the event log redacts
    }
    env.update(extra or {})
    return with_python_first(env)


def allowed_env(
    *,
    home: str,
    names: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
    first_on_path: str | None = None,
) -> dict[str, str]:
    """Only ``PATH``, ``LANG``, ``LC_*``, ``TERM``, ``TZ`` and ``names`` from ``base``.

    ``HOME`` is ``home`` (the sandbox's own), :data:`ALWAYS_SET` is set; ``extra`` are values
    the harness sets on purpose. Nothing else of the harness's environment reaches the command:
    no provider key, no ``DATABASE_URL``, whatever its name. ``first_on_path`` (the project's
    environment's ``bin``) goes first on ``PATH``, before the running Python's folder.
    """
    source = os.environ if base is None else base
    wanted = set(ALLOWED_NAMES) | set(names)
    env = {k: v for k, v in source.items() if k in wanted or k.startswith("LC_")}
    env["HOME"] = home
    env.update(ALWAYS_SET)
    env.update(extra or {})
    return with_python_first(env, first_on_path)


def with_python_first(env: dict[str, str], bin_dir: str | None = None) -> dict[str, str]:
    """``env`` with ``bin_dir`` (default: the directory of the running Python) first on ``PATH``.

    So that ``python``, ``python -m pytest`` or ``ruff`` in a gate or a shell command find the
    same environment even when its virtual environment was never activated.
    """
    if bin_dir is not None:
        env = with_python_first(env)
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    path = env.get("PATH", os.defpath)
    if bin_dir and path.split(os.pathsep)[0] != bin_dir:
        env["PATH"] = bin_dir + os.pathsep + path if path else bin_dir
    return env
