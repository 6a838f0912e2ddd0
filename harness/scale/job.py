"""What the pool runs: a :class:`Job` (one loop, built and run where the pool puts it), the
:class:`Place` it runs in, and the backends that can run it."""

from __future__ import annotations

import contextvars
import dataclasses
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, chdir, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar, runtime_checkable

from harness.observe.run_summary import RUNS_DIR

if TYPE_CHECKING:
    from harness.outer.loop import OuterLoop
    from harness.outer.result import RunResult

Backend = Literal["local", "ray"]


@runtime_checkable
class Ran(Protocol):
    """What a job's result tells of its run: the branch it made and the run's id (Ray sends
    back that branch and that run's folder)."""

    @property
    def branch(self) -> str | None: ...

    @property
    def run_id(self) -> str | None: ...


T = TypeVar("T")


@dataclass(frozen=True)
class Place:
    """Where a job runs: in place (the default), or on a Ray worker in a copy of the folder the
    driver shipped, where :meth:`path` finds a driver's path and :meth:`progress` gives the
    job's progress file a folder of its own."""

    shipped: Path | None = None
    """The folder the driver shipped, as the driver resolved it."""
    copy: Path | None = None
    """Its copy here."""
    cwd: Path | None = None
    """The driver's working directory, which relative paths start from."""
    progress_folder: Path | None = None
    """Here: where the job's progress file (and its escalation report) go."""
    progress_home: list[Path] = field(default_factory=list, compare=False)
    """The driver's folder of the progress file :meth:`progress` placed here, once asked."""

    def path(self, path: str | Path) -> Path:
        """Where the driver's ``path`` lies here: in the copy when it was shipped, else as given."""
        if self.shipped is None or self.copy is None:
            return Path(path)
        full = ((self.cwd or self.shipped) / path).resolve()  # lexical where it is not here
        if full.is_relative_to(self.shipped):
            return self.copy / full.relative_to(self.shipped)
        return full

    def back(self, path: Path) -> Path:
        """The driver's path for ``path`` in the copy or the progress folder (the inverse of
        :meth:`path` and :meth:`progress`)."""
        folder = self.progress_folder
        if folder is not None and self.progress_home and path.is_relative_to(folder):
            return self.progress_home[0] / path.relative_to(folder)
        if self.shipped is None or self.copy is None or not path.is_relative_to(self.copy):
            return path
        return self.shipped / path.relative_to(self.copy)

    def progress(self, path: Path) -> Path:
        """Where the job's progress file goes here (the driver's ``path`` itself locally): the
        folder whose files Ray sends back beside ``path``."""
        if self.progress_folder is None:
            return path
        self.progress_home[:] = [Path(os.path.normpath((self.cwd or Path()) / path)).parent]
        return self.progress_folder / path.name

    @staticmethod
    def current() -> Place:
        """Where the job running in this thread runs (in place, outside a Ray worker's job)."""
        return _CURRENT.get()

    @contextmanager
    def entered(self) -> Iterator[None]:
        """Within: :meth:`current` is this place and, on a Ray worker, the working directory is
        the copy of the driver's (else of the shipped folder), as Ray's ``working_dir`` has it,
        so relative paths name the copy's files. A Ray worker process runs one task at a time."""
        token = _CURRENT.set(self)
        moved: AbstractContextManager[object] = nullcontext()
        if self.copy is not None:  # never in place: the working directory is the process's
            here = self.path(self.cwd or ".")
            moved = chdir(here if here.is_relative_to(self.copy) else self.copy)
        try:
            with moved:
                yield
        finally:
            _CURRENT.reset(token)


HERE = Place()
"""A job run in place, in this process."""
_CURRENT: contextvars.ContextVar[Place] = contextvars.ContextVar("harness_place", default=HERE)


@dataclass(frozen=True)
class Job(Generic[T]):
    """One loop for the pool: ``run(place)`` builds it where the pool put it and runs it."""

    name: str
    run: Callable[[Place], T]
    loop: str | None = None
    """The loop.toml the job reads: Ray ships its folder when that holds the repository."""
    workspace: str | None = None
    """A path in the git repository the loop works in (else the loop's folder): Ray ships it."""
    progress: Path | None = None
    """The job's progress file, when it names one: Ray sends back its folder's files."""
    run_id: str | None = None
    """The run's id, when the job names it: Ray brings back only that run's branch."""


def run_loop(place: Place, build: Callable[[], OuterLoop]) -> tuple[OuterLoop, RunResult]:
    """Build a loop and run it where ``place`` is (on a Ray worker, in its copy, the working
    directory there); the loop, and its result as the driver sees it: the escalation report
    where it comes back, no worktree (that stayed on the worker)."""
    with place.entered():
        loop = build()
        result = loop.run()
    if place.copy is not None:
        escalation = result.escalation and place.back(result.escalation)
        result = dataclasses.replace(result, worktree=None, escalation=escalation)
    return loop, result


def run_folder_of(job: Job[T], place: Place, run_id: str | None) -> Path | None:
    """On the worker: the run's own folder, ``.harness/runs/<run_id>`` under the loop's root
    in the copy (the loop.toml's folder, else the folder the job ran in)."""
    if not run_id or Path(run_id).name != run_id or run_id in (".", ".."):
        return None
    if job.loop is not None:
        found = place.path(Path(job.loop))
        root = found if found.is_dir() else found.parent
    else:  # where Place.entered put the job
        here = place.path(place.cwd or Path("."))
        root = here if place.copy is None or here.is_relative_to(place.copy) else place.copy
    return root / RUNS_DIR / run_id
