"""The project's own Python environment: where gates and the agent's commands find ``python``.

A project's code often needs packages that only its own environment holds (its ``.venv``, made
with ``uv sync`` or ``pip install -e .``). A :class:`PythonEnv` names that environment; the
:class:`~harness.sandbox.Sandbox` mounts it read-only and puts its ``bin`` first on ``PATH``, and
the pytest gate starts the tests with its interpreter. :func:`detected_env` finds one the way a
person would: the active ``VIRTUAL_ENV``, else a ``.venv`` or ``venv`` in one of the folders it
is given (the workspace, the loop's root, the repository's root).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

VENV_NAMES = (".venv", "venv")
"""The folders a project's virtual environment is looked for under, in order: uv's and most
tools' name, then the one ``python -m venv venv`` makes."""


@dataclass(frozen=True)
class PythonEnv:
    """A Python environment commands run in: ``python`` (its interpreter) and where it was found.

    ``prefix`` is the environment's folder (a virtual environment's root, holding
    ``pyvenv.cfg``), or the interpreter's installation for a plain interpreter; ``origin`` says
    in a few words where it came from (``.venv at /repo``, ``[env] python``), for messages.
    ``source`` is the folder an editable install of the project in it points to, standing for
    the workspace (the user's checkout, or the checkout a set-up ran in): the gates import the
    project from the checkout they judge instead.
    """

    python: Path
    prefix: Path
    origin: str
    source: Path | None = None

    @classmethod
    def of_interpreter(cls, python: Path, origin: str) -> PythonEnv:
        """The environment ``python`` belongs to: a ``bin/python`` of a venv, or a plain one."""
        python = Path(os.path.abspath(python))
        return cls(python, _installation(python), origin)

    @classmethod
    def of_venv(cls, folder: Path, origin: str) -> PythonEnv | None:
        """The virtual environment in ``folder``, or None when it holds none."""
        python = folder / "bin" / "python"
        if not (folder / "pyvenv.cfg").is_file() or not os.access(python, os.X_OK):
            return None
        return cls(Path(os.path.abspath(python)), Path(os.path.abspath(folder)), origin)

    @property
    def bin_dir(self) -> Path:
        """The folder that goes first on ``PATH``: ``python``, ``pytest``, the project's tools."""
        return self.python.parent

    def folders(self) -> tuple[Path, ...]:
        """What a sandbox must show (read-only) for the interpreter to start: the environment
        and the installation its ``python`` links to (a venv's base interpreter)."""
        found = [self.prefix, _installation(Path(os.path.realpath(self.python)))]
        return tuple(dict.fromkeys(path for path in found if path != Path("/")))

    def variables(self) -> dict[str, str]:
        """What commands are told of it: ``VIRTUAL_ENV`` (as activation sets it), for a venv."""
        return {"VIRTUAL_ENV": str(self.prefix)} if (self.prefix / "pyvenv.cfg").is_file() else {}


def detected_env(
    roots: Sequence[Path], environ: Mapping[str, str] | None = None
) -> PythonEnv | None:
    """The active ``VIRTUAL_ENV``, else the first ``.venv`` (then ``venv``) in ``roots``, passing
    over the harness's own environment (commands run with it anyway); None for none."""
    environ = os.environ if environ is None else environ
    active = environ.get("VIRTUAL_ENV")
    candidates = [(Path(active), "the active VIRTUAL_ENV")] if active else []
    candidates += [(root / name, f"{name} at {root}") for root in roots for name in VENV_NAMES]
    for folder, origin in candidates:
        found = PythonEnv.of_venv(folder, origin)
        if found is not None and os.path.realpath(found.prefix) != os.path.realpath(sys.prefix):
            return found
    return None


def _installation(python: Path) -> Path:
    """The folder an interpreter is installed in: ``/usr`` for ``/usr/bin/python3``."""
    return python.parent.parent
