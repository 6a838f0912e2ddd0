"""What the test gates find at a base commit, measured once per base and kept.

A pytest gate compares each round with the base (a test that ran there must run and pass now).
The base does not change while runs start from it, so its results are measured once and kept in
the user's state folder (``<state>/base-results/<key>.json``, see
:mod:`harness.core.state_home`), out of every sandboxed command's reach. The key is a digest of
the base commit, the workspace's folder in it, the gate (its type, name, arguments, timeout and
sandbox, with the values of the variables it passes on), the interpreter and pytest that run it, and the harness's version: any of them
changed, the base is measured again. An entry is read without following links, bounded, and
validated; one that is unreadable, malformed or made for another key is not believed: the base is
measured again and the entry rewritten. Runs that miss the same entry at once (best-of-N
attempts, a batch's tasks on one repository) take turns on a lock beside it
(``<key>.lock``): the first measures, the others wait and read what it kept. Gates of other
types than :class:`PytestGate` are measured every time (what their results depend on is theirs
to know). A reproduction gate keeps its tests' results at the base here too, under a key of its
own (:mod:`harness.verify.reproduction`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.core import nofollow
from harness.core.state_home import state_home
from harness.core.version import VERSION
from harness.sandbox import default_sandbox
from harness.sandbox.python_env import PythonEnv
from harness.verify.gates import Gate, SuiteGate, measure_baselines
from harness.verify.junit import JUnitReport
from harness.verify.pytest_gate import PytestGate

ENTRY_LIMIT = 16 * 1024 * 1024
"""The most an entry may hold when read back (a suite of some ten thousand tests)."""

FOLDER = "base-results"


class BaseResults(BaseModel):
    """One kept entry: the key it was made for and the gate's report at the base."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    report: JUnitReport


def measure_at_base(
    gates: Sequence[Gate],
    *,
    base: str,
    folder: str,
    checkout: Callable[[], AbstractContextManager[Path]],
) -> dict[str, JUnitReport]:
    """Each test gate's report at ``base``, by gate name: kept ones read, the rest measured.

    ``folder`` is the workspace's path in the repository (``""`` at its top); ``checkout``
    gives a clean checkout of the base's workspace, entered only when something is measured.
    A gate that writes no report there has no baseline.
    """
    keyed = [(g, entry_key(g, base=base, folder=folder)) for g in gates if isinstance(g, SuiteGate)]
    found, missing = _kept(keyed)
    if not missing:
        return found
    with _turns(sorted({key for _, key in missing if key is not None})):
        now_kept, missing = _kept(missing)  # what a run that held the lock before kept meanwhile
        found.update(now_kept)
        if missing:
            with checkout() as workspace:
                measured = measure_baselines([gate for gate, _ in missing], workspace)
            for gate, key in missing:
                if gate.name in measured and key is not None:
                    write_entry(key, measured[gate.name])
            found.update(measured)
    return found


def _kept(
    keyed: list[tuple[SuiteGate, str | None]],
) -> tuple[dict[str, JUnitReport], list[tuple[SuiteGate, str | None]]]:
    """The kept reports of ``keyed``'s gates, by gate name, and the gates that have none."""
    found: dict[str, JUnitReport] = {}
    missing: list[tuple[SuiteGate, str | None]] = []
    for gate, key in keyed:
        kept = read_entry(key) if key is not None else None
        if kept is not None:
            found[gate.name] = kept
        else:
            missing.append((gate, key))
    return found, missing


@contextmanager
def _turns(keys: list[str]) -> Iterator[None]:
    """Hold the lock of each entry of ``keys`` (taken in order, so no two runs wait on each
    other in a circle), waiting while another run holds one. A lock that cannot be opened (a
    link or a folder planted in its place) is gone without: the base is measured, not waited for."""
    with ExitStack() as held:
        for key in keys:
            try:
                fd = nofollow.open_file(
                    entry_path(key).with_suffix(".lock"),
                    os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                    root=state_home(),
                    make_folders=True,
                    mode=0o600,
                )
            except (OSError, nofollow.UnsafePath):
                continue
            held.callback(os.close, fd)
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when closed
        yield


def entry_key(gate: Gate, *, base: str, folder: str) -> str | None:
    """The key of ``gate``'s results at ``base``; None for a gate whose results are not kept."""
    if type(gate) is not PytestGate:
        return None
    sandbox = gate.sandbox or default_sandbox()
    described = {
        "harness": VERSION,
        "base": base,
        "folder": folder,
        "gate": {"name": gate.name, "args": gate.args, "timeout": gate.timeout},
        "sandbox": {
            "backend": sandbox.backend,
            "image": sandbox.image,
            "network": sandbox.network,
            # the values too (only their digest is kept): a PYTHONPATH passed on changes results
            "env": {name: os.environ.get(name) for name in sandbox.env_names},
            "limits": sandbox.limits.model_dump(mode="json"),
            "readonly": [str(p) for p in sandbox.readonly],
            "hidden": [str(p) for p in sandbox.hidden],
        },
        "python": [sys.executable, sys.version],
        "pytest": _pytest_version(),
        "environment": _environment(sandbox.python_env),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def _environment(env: PythonEnv | None) -> dict[str, object] | None:
    """The project's environment as the key sees it: its interpreter, and what its
    site-packages hold (names only), so installing a dependency there measures the base anew."""
    if env is None:
        return None
    installed = sorted(
        f"{folder.name}/{entry.name}"
        for folder in env.prefix.glob("lib*/python3*/site-packages")
        for entry in folder.iterdir()
    )
    return {"python": str(env.python), "prefix": str(env.prefix), "installed": installed}


def entry_path(key: str) -> Path:
    """Where the entry of ``key`` is kept."""
    return state_home() / FOLDER / f"{key}.json"


def read_entry(key: str) -> JUnitReport | None:
    """The kept report of ``key``; None when there is none or it is not to be believed."""
    try:
        data = nofollow.read_bytes(entry_path(key), root=state_home(), limit=ENTRY_LIMIT)
        entry = BaseResults.model_validate_json(data)
    except (OSError, nofollow.UnsafePath, ValidationError):
        return None
    return entry.report if entry.key == key else None


def write_entry(key: str, report: JUnitReport) -> None:
    """Keep ``report`` under ``key``; a place that cannot take it (a link, a folder) is left."""
    data = BaseResults(key=key, report=report).model_dump_json().encode()
    try:
        nofollow.write_atomic(entry_path(key), data, root=state_home())
    except (OSError, nofollow.UnsafePath):
        return


def _pytest_version() -> str:
    try:
        return version("pytest")
    except PackageNotFoundError:
        return "unknown"
