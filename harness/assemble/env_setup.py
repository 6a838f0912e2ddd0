"""``[env]``: the project's Python environment a loop's commands run in, found or made once.

:func:`project_env` picks, in order: ``[env] setup`` (a set-up command such as ``uv sync`` or
``pip install -e .[test]``, run in a fresh virtual environment once per commit the run starts
from, or ``[env] commit``, and kept in the user's state folder, ``~/.local/state/harness/envs/``,
outside every workspace and where no command can write),
``[env] python`` (an interpreter used as it is), the active ``VIRTUAL_ENV``, a ``.venv`` (then a
``venv``) at the workspace, the loop's root or the repository's root. ``uv`` ships with the harness: a set-up
command finds it on ``PATH``, and ``uv sync`` fills the environment made for it
(``UV_PROJECT_ENVIRONMENT``).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import uv

from harness.core.errors import ConfigError
from harness.core.state_home import state_home
from harness.sandbox import Sandbox
from harness.sandbox.python_env import PythonEnv, detected_env
from harness.spec.loop_spec import LoopSpec
from harness.workspace.cleanup import top_of
from harness.workspace.git_cmd import git, rev_parse

CALLS_PIP = re.compile(r"(^|[;&|(]|(?<!\buv)\s)(pip3?|python3?\s+-m\s+pip)\s")
"""A set-up command that runs pip itself (not ``uv pip``): its venv needs pip installed."""

ENVS = "envs"
"""Where made environments are kept, in the user's state folder: ``<repository>-<digest>/<commit>-
<digest>/`` holds ``venv`` beside ``src`` (the commit it was made from, which an editable
install points to) and ``ready``; ``cache`` holds uv's and pip's downloads."""

NAMED = "commits"
"""Where environments made at an ``[env] commit`` are kept, under :data:`ENVS`: by commit alone,
so every clone holding the commit (a benchmark's instances of one repository) shares one; a
commit id names its files."""


def project_env(config: LoopSpec) -> PythonEnv | None:
    """The Python environment ``config``'s commands run in; None for the harness's own."""
    settings = config.env
    if config.sandbox.backend in ("docker", "podman"):
        return None  # the image's Python (LoopSpec refuses [env] python and setup there)
    python = _interpreter(config) if settings.python else None
    if settings.setup:
        return made_env(config, python or Path(sys.executable))
    workspace = (config.root / config.workspace).resolve()
    found: PythonEnv | None = None
    if python is not None:
        found = PythonEnv.of_interpreter(python, "[env] python")
    elif settings.detect:
        roots = [workspace, config.root.resolve()]
        if workspace.is_dir():  # else opening the workspace says so
            top = top_of(workspace)
            roots += [top] if top else []
        found = detected_env(list(dict.fromkeys(roots)))
    return dataclasses.replace(found, source=workspace) if found is not None else None


def made_env(config: LoopSpec, python: Path) -> PythonEnv:
    """The environment ``[env] setup`` makes at the commit the run starts from, made once.

    Concurrent runs wait for each other; a failed set-up leaves nothing behind and is a
    :class:`ConfigError` naming the field, the command and the end of its output.
    """
    setup = config.env.setup
    assert setup is not None
    repo, commit = _start_commit(config)
    digest = hashlib.sha256(f"{setup}\0{python}".encode()).hexdigest()[:12]
    if config.env.commit is None:
        where = hashlib.sha256(str(repo).encode()).hexdigest()[:12]
        envs = state_home() / ENVS / f"{repo.name}-{where}"
    else:
        commit = _named_commit(config, repo, config.env.commit)
        envs = state_home() / ENVS / NAMED
    home = envs / f"{commit[:16]}-{digest}"
    envs.mkdir(parents=True, exist_ok=True)
    with open(envs / f"{home.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent run making the same one: wait for it
        if not (home / "ready").is_file():
            shutil.rmtree(home, ignore_errors=True)  # what a killed set-up left
            try:
                _make(config, setup, python, repo, commit, home)
            except BaseException:
                shutil.rmtree(home, ignore_errors=True)
                raise
    env = PythonEnv.of_venv(home / "venv", f"[env] setup at {commit[:12]}")
    assert env is not None, "made by uv venv"
    place = (config.root / config.workspace).resolve().relative_to(repo)
    return dataclasses.replace(env, source=home / "src" / place)


def _make(config: LoopSpec, setup: str, python: Path, repo: Path, commit: str, home: Path) -> None:
    """Export ``commit`` to ``home/src``, make ``home/venv`` and run ``setup`` in the sandbox."""
    source, venv = home / "src", home / "venv"
    source.mkdir(parents=True)
    index = {"GIT_INDEX_FILE": str(home / "index")}
    git(repo, "read-tree", commit, env=index)
    git(repo, "checkout-index", "--all", "--force", f"--prefix={source}/", env=index)
    (home / "index").unlink()
    cache = state_home() / ENVS / "cache"
    for tool in ("uv", "pip"):
        (cache / tool).mkdir(parents=True, exist_ok=True)
    uv_bin = uv.find_uv_bin()
    steps = [[uv_bin, "venv", "--quiet", "--no-config", "--python", str(python), str(venv)]]
    if CALLS_PIP.search(setup):  # uv makes venvs without pip; the standard library has one
        steps.append([str(venv / "bin" / "python"), "-m", "ensurepip", "--default-pip"])
    for step in steps:
        made = subprocess.run(
            step, cwd=home, capture_output=True, text=True, check=False,
            env={**os.environ, "UV_CACHE_DIR": str(cache / "uv")},
        )  # fmt: skip
        if made.returncode != 0:
            raise ConfigError(
                f"{config.source}: field 'env.python': `{' '.join(step)}` failed: "
                f"{_last_lines(made.stderr)}"
            )
    env = PythonEnv.of_venv(venv, "[env] setup")
    assert env is not None
    settings = config.sandbox
    sandbox = Sandbox(
        settings.backend, network=True, env=settings.env, limits=settings.limits, python_env=env
    )
    started = time.monotonic()
    place = (config.root / config.workspace).resolve().relative_to(repo)
    result = sandbox.run(
        setup, cwd=source / place, workspace=source, writable=[home, cache],
        timeout=config.env.setup_timeout,
        env={
            "PATH": os.path.dirname(uv_bin) + os.pathsep + os.environ.get("PATH", os.defpath),
            "UV_PROJECT_ENVIRONMENT": str(venv), "UV_CACHE_DIR": str(cache / "uv"),
            "UV_LINK_MODE": "copy", "PIP_CACHE_DIR": str(cache / "pip"),
        },
    )  # fmt: skip
    if result.exit_code != 0:
        failed = result.status if result.timed_out else f"failed with {result.status}"
        raise ConfigError(
            f"{config.source}: field 'env.setup': `{setup}` {failed} at commit {commit[:12]}: "
            f"{_last_lines(result.output)}"
        )
    ready = {"setup": setup, "commit": commit, "seconds": round(time.monotonic() - started, 1)}
    (home / "ready").write_text(json.dumps(ready) + "\n", encoding="utf-8")


def _start_commit(config: LoopSpec) -> tuple[Path, str]:
    """The repository holding the workspace and the commit a run starts from (its ``HEAD``)."""
    workspace = (config.root / config.workspace).resolve()
    top = top_of(workspace)
    head = rev_parse(workspace, "HEAD")
    if top is None or head is None:
        raise ConfigError(
            f"{config.source}: field 'env.setup': {workspace} is not in a git repository with a commit; the "
            "environment is made once per commit (or give [env] python)"
        )
    return top, head


def _named_commit(config: LoopSpec, repo: Path, given: str) -> str:
    """``[env] commit`` as the full id of a commit ``repo`` holds."""
    found = rev_parse(repo, f"{given}^{{commit}}")
    if found is None:
        raise ConfigError(f"{config.source}: field 'env.commit': {given} is not a commit of {repo}")
    return found


def _interpreter(config: LoopSpec) -> Path:
    """``[env] python``: a path (``~`` expanded, relative to the loop's root) or a name on PATH."""
    given = config.env.python
    assert given is not None
    if os.sep in given:
        found: str | None = str(config.root / Path(given).expanduser())
    else:
        found = shutil.which(given)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise ConfigError(
            f"{config.source}: field 'env.python': {given!r} is not an interpreter that can be run"
        )
    return Path(os.path.abspath(found))


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:]) or "no output"
