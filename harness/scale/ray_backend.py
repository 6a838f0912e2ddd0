"""The Ray backend of the pool: each job's loop is a Ray task, with its repository shipped.

The driver bundles the job's git repository (``git bundle --all``, once per pool: the jobs of
one repository share it, as it was at the first) and sends it with the job; the worker clones it
into a temporary folder, runs the job there (its :class:`~harness.scale.pool.Place`), and sends
back the run's branch as a git bundle plus the files the run wrote (its run folder under
``.harness/runs/`` and its progress file and escalation report). The driver fetches the branch
into the job's repository and writes the files where a local run would have, so branches and
``harness report`` work exactly as after a local run. Nothing relies on a shared filesystem.

A job whose loop.toml lies outside its repository, in a folder that holds the repository (a
benchmark instance: loop.toml and held-out tests beside the clone the agent works in), ships
that folder too: its regular files outside the repository and its ``.harness`` folders, links
left out; the worker lays them around its clone, and the run's files come back to that folder.

Ray retries a job whose worker process dies (``max_retries``); the retry starts again from the
shipped repository. ``address`` (or ``RAY_ADDRESS``) joins an existing cluster; without one a
local Ray instance is started for the pool and stopped with it. Install with
``pip install 'harness[ray]'``.
"""

from __future__ import annotations

import itertools
import os
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from harness.core import nofollow
from harness.core.errors import ConfigError, MissingExtra
from harness.models.rate_limit import Limiter
from harness.scale.cluster_limiter import ClusterLimiter
from harness.scale.job import Backend, Job, Place, Ran, T, run_folder_of
from harness.workspace.git import BRANCH_PREFIX, PART, is_run_branch, run_branch_suffix
from harness.workspace.git_cmd import git, run_git

if TYPE_CHECKING:
    from harness.scale.batch_task import BatchTask

MAX_RETRIES = 3
"""How many times Ray runs a job again after its worker process died."""
SHIP_LIMIT = 256 * 1024 * 1024
"""The most a worker sends back of a run's files, and the driver ships of a loop's folder
around its repository, all together (256 MB)."""


@dataclass(frozen=True)
class Shipment:
    """What a worker needs besides the job: the repository as a bundle, and around it."""

    bundle: bytes
    repo_at: str = "."
    """Where the repository goes, relative to the shipped top (the loop's folder, or itself)."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """The loop's folder's files around the repository, relative to the top."""
    shallow: str = ""
    """A shallow repository's boundary commits (its ``shallow`` file); empty for a full one."""
    head: str = ""
    """For a shallow repository: the branch checked out (``refs/heads/...``), or the commit."""


@dataclass(frozen=True)
class Returned(Generic[T]):
    """What a worker sends back: the job's result, the branch as a bundle, the files it wrote."""

    record: T
    branch_bundle: bytes | None
    run_files: dict[str, bytes]  # relative to the shipped top (the repository's top folder)
    progress_files: dict[str, bytes]  # names in the job's progress folder
    progress_home: Path | None = None  # that folder on the driver, when the job named none


class RayPool:
    """Runs jobs as Ray tasks with ``num_cpus`` each."""

    backend: Backend = "ray"

    def __init__(self, *, address: str | None = None, num_cpus: float = 1) -> None:
        try:
            import ray
        except ImportError as exc:
            raise MissingExtra("backend 'ray'", "Ray", "ray") from exc
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            ray.init(
                address=address or os.environ.get("RAY_ADDRESS") or None,
                include_dashboard=False,
                log_to_driver=False,
            )
        self._shipments: dict[tuple[Path, Path], Any] = {}  # ObjectRefs of Shipments
        self._remote: Any = ray.remote(_run_shipped).options(
            num_cpus=num_cpus, max_retries=MAX_RETRIES
        )

    def submit(self, job: Job[T]) -> Future[T]:
        repo = repository_of(job)
        top = shipped_top(job, repo)
        place = Place(shipped=top.resolve(), cwd=Path.cwd())
        done: Future[T] = Future()
        ref = self._remote.remote(self._shipment(repo, top), job, place)

        def imported(remote: Future[Returned[T]]) -> None:
            try:
                done.set_result(import_returned(remote.result(), repo, job, place))
            except Exception as exc:  # noqa: BLE001 - handed to the caller: the job's error
                done.set_exception(exc)

        ref.future().add_done_callback(imported)
        return done

    def _shipment(self, repo: Path, top: Path) -> Any:
        """The shipment of ``repo`` and of ``top`` around it, in Ray's object store: made once
        per pool, as they were at the first job that needed them (the attempts of best-of-N, a
        fleet's subtasks, a benchmark instance's attempts and runners share one)."""
        key = (repo.resolve(), top.resolve())
        if key not in self._shipments:
            files = folder_files(top, repo) if top != repo else {}
            shipment = Shipment(
                _bundle_all(repo), os.path.relpath(repo, top), files, *_shallow_of(repo)
            )
            self._shipments[key] = self._ray.put(shipment)
        return self._shipments[key]

    def limiter(self, model: str, per_minute: float) -> Limiter:
        return ClusterLimiter(self._ray, model, per_minute)

    def close(self) -> None:
        self._shipments.clear()
        if self._started:
            self._ray.shutdown()


def repository_of(task: Job[Any] | BatchTask) -> Path:
    """The top folder of the git repository that holds the job's workspace (or its loop)."""
    where = task.workspace or (str(Path(task.loop).parent) if task.loop else None)
    if where is None:
        raise ConfigError(f"task {task.name}: backend 'ray' needs a 'loop' or a 'workspace'")
    try:
        return Path(git(Path(where), "rev-parse", "--show-toplevel").strip())
    except ConfigError as exc:
        raise ConfigError(
            f"task {task.name}: backend 'ray' ships the task's git repository, and {where} "
            f"is not in one: {exc}"
        ) from exc


def shipped_top(task: Job[Any] | BatchTask, repo: Path) -> Path:
    """What is shipped around ``repo``: itself when the task's loop.toml lies in it, else the
    loop's folder, which must hold the repository."""
    if task.loop is None:
        return repo
    folder = Path(task.loop).resolve().parent
    if folder.is_relative_to(repo.resolve()):
        return repo
    if repo.resolve().is_relative_to(folder):
        return folder
    raise ConfigError(
        f"task {task.name}: backend 'ray' ships the task's repository ({repo}) and the folder "
        f"of its loop.toml ({folder}); the loop's folder must lie in the repository or hold it"
    )


def folder_files(top: Path, repo: Path) -> dict[str, bytes]:
    """On the driver: the regular files under ``top`` outside ``repo`` and every ``.harness``
    folder (loop.toml, held-out tests, a scripted model's file), relative to ``top``; links
    are left out, and all together at most :data:`SHIP_LIMIT` bytes."""
    budget = [SHIP_LIMIT]
    files: dict[str, bytes] = {}
    skipped = {os.path.normpath(repo.resolve())}
    for here, folders, names in os.walk(top.resolve()):  # never descends a link to a folder
        folders[:] = sorted(
            name
            for name in folders
            if name not in (".harness", ".git") and os.path.join(here, name) not in skipped
        )
        for name in sorted(names):
            path = Path(here, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                files[str(path.relative_to(top.resolve()))] = _take(path, top.resolve(), budget)
    return files


def import_returned(returned: Returned[T], repo: Path, job: Job[T], place: Place) -> T:
    """Fetch the returned branch into ``repo`` and write the returned files where they belong:
    the run's in its own folder under the shipped one (``place.shipped``), the progress
    folder's beside ``job.progress``.

    What the worker sends is data: only a branch named as this run's (``harness/<loop>.<8 hex
    of the loop>.<8 hex of the run id>``, the id the job named, else the one its result gives)
    is fetched, as a worker's record naming ``main`` would otherwise replace the user's own;
    only files in the run's own folder (``.harness/runs/<run id>/`` of the job's loop, found
    here as the worker found it) are written, each without following a link. Nothing is
    written when anything is refused.
    """
    assert place.shipped is not None  # the driver's place: what it shipped
    top = place.shipped
    record = _ran(returned.record)
    run_id = job.run_id or record.run_id or ""
    if record.branch and not is_run_branch(record.branch, run_id):
        raise ConfigError(
            f"ray: the worker returned branch {record.branch!r}, not one of run {run_id}'s "
            f"({BRANCH_PREFIX}<loop>{PART}<8 hex>{PART}{run_branch_suffix(run_id)}); "
            "nothing of it was fetched"
        )
    own = run_folder_of(job, replace(place, copy=top), run_id)
    for relative in returned.run_files:
        if own is None or not _within(top / relative, own) or Path(relative).is_absolute():
            raise ConfigError(
                f"ray: a returned file {relative!r} lies outside run {run_id}'s own folder "
                f"({own}); nothing of the run was taken"
            )
    home = job.progress.parent if job.progress is not None else returned.progress_home
    if (
        home is not None
        and job.progress is None
        and (not _within(home, top) or ".git" in Path(os.path.relpath(home, top)).parts)
    ):
        raise ConfigError(
            f"ray: a returned progress folder {home} lies outside {top} or in a .git folder"
        )
    if returned.branch_bundle is not None and record.branch:
        with tempfile.TemporaryDirectory(prefix="harness-ray-") as tmp:
            bundle = Path(tmp) / "branch.bundle"
            bundle.write_bytes(returned.branch_bundle)
            refspec = f"+refs/heads/{record.branch}:refs/heads/{record.branch}"
            git(repo, "fetch", "-q", str(bundle), refspec)
    for relative, data in returned.run_files.items():
        _write_inside(top, relative, data)
    for name, data in returned.progress_files.items():
        if home is not None:
            _write_inside(home, name, data)
    return returned.record


def _ran(record: object) -> Ran:
    """``record`` as the result of a run; a job for Ray must return one."""
    if not isinstance(record, Ran):
        raise ConfigError(
            f"ray: a job's result must name its branch and run id, got {record!r:.80}"
        )
    return record


def _within(path: Path, folder: Path) -> bool:
    return Path(os.path.normpath(path)).is_relative_to(os.path.normpath(folder))


def _write_inside(folder: Path, relative: str, data: bytes) -> None:
    """Write ``data`` at ``relative`` under ``folder``, no link on the way followed."""
    target = Path(os.path.normpath(folder / relative))
    if Path(relative).is_absolute() or not target.is_relative_to(os.path.normpath(folder)):
        raise ConfigError(f"ray: a returned file {relative!r} points outside {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    nofollow.write_atomic(target, data, root=folder)


def pack_files(
    clone: Path, run_folder: Path | None, progress: Path
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """On the worker: the run's own folder's files (relative to ``clone``; none when it lies
    outside ``clone`` or a link is on its way) and the progress folder's (by name), regular files
    only, reached without following a link, together at most :data:`SHIP_LIMIT` bytes; a link,
    a FIFO or a device among them is left behind. No other folder is looked at: a
    ``.harness/runs/<id>/`` an agent made elsewhere in the clone is not the run's."""
    budget = [SHIP_LIMIT]
    run_files: dict[str, bytes] = {}
    if run_folder is not None and _within(run_folder, clone) and not _linked(run_folder, clone):
        for path in _regular_files(run_folder):
            run_files[str(path.relative_to(clone))] = _take(path, clone, budget)
    progress_files = {
        path.name: _take(path, progress, budget)
        for path in _regular_files(progress, recurse=False)
        if not path.name.startswith(".")
    }
    return run_files, progress_files


def _linked(path: Path, top: Path) -> bool:
    """Whether a link lies on the way from ``top`` down to ``path`` (``path`` included)."""
    here, top = Path(os.path.normpath(path)), Path(os.path.normpath(top))
    return any(p.is_symlink() for p in (here, *here.parents) if p.is_relative_to(top) and p != top)


def _regular_files(folder: Path, *, recurse: bool = True) -> list[Path]:
    """The regular files under ``folder`` (none when it is a link or missing), links left out."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    walk = itertools.islice(os.walk(folder), None if recurse else 1)
    paths = (Path(top, name) for top, _folders, names in walk for name in names)
    return sorted(path for path in paths if stat.S_ISREG(os.lstat(path).st_mode))


def _take(path: Path, root: Path, budget: list[int]) -> bytes:
    """``path``'s bytes, read without following a link, counted against what is left."""
    data = nofollow.read_bytes(path, root=root, limit=max(budget[0], 0))
    budget[0] -= len(data)
    return data


def _bundle_all(repo: Path) -> bytes:
    with tempfile.TemporaryDirectory(prefix="harness-ray-") as tmp:
        bundle = Path(tmp) / "repo.bundle"
        git(repo, "bundle", "create", "-q", str(bundle), "--all")
        return bundle.read_bytes()


def _shallow_of(repo: Path) -> tuple[str, str]:
    """A shallow repository's boundary commits and checked-out branch (or commit, detached);
    empty for a full one."""
    shallow = Path(repo, git(repo, "rev-parse", "--git-path", "shallow").strip())
    if not shallow.is_file():
        return "", ""
    head = run_git(repo, ("symbolic-ref", "-q", "HEAD"), None).stdout.strip()
    head = head or git(repo, "rev-parse", "HEAD").strip()
    return shallow.read_text(encoding="utf-8"), head


def _clone_bundle(bundle: Path, clone: Path, shallow: str, head: str) -> None:
    """Clone ``bundle`` into ``clone``. A bundle of a shallow repository lacks the parents of
    its boundary commits, so a clone refuses it: the repository is made from a fetch into one
    told where its history stops, its branches local, ``head`` (a branch or a commit) checked
    out."""
    if not shallow:
        subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True,
                       capture_output=True)  # fmt: skip
        return
    clone.mkdir(parents=True)
    git(clone, "init", "-q")
    Path(clone, git(clone, "rev-parse", "--git-path", "shallow").strip()).write_text(shallow)
    branch = head.startswith("refs/")
    if branch:
        git(clone, "symbolic-ref", "HEAD", head)
    git(clone, "fetch", "-q", "--update-head-ok", str(bundle), "+refs/*:refs/*")
    if branch:
        git(clone, "reset", "-q", "--hard", "HEAD")
    else:
        git(clone, "checkout", "-q", "--detach", head)


def _run_shipped(shipment: Shipment, job: Job[T], place: Place) -> Returned[T]:
    """On the worker: clone the bundle, run the job there, and pack what its run made."""
    with tempfile.TemporaryDirectory(prefix="harness-ray-") as tmp:
        root = Path(tmp)
        (root / "in.bundle").write_bytes(shipment.bundle)
        top = root / "repo"
        clone = Path(os.path.normpath(top / shipment.repo_at))
        _clone_bundle(root / "in.bundle", clone, shipment.shallow, shipment.head)
        for relative, data in shipment.files.items():
            _write_inside(top, relative, data)
        progress = root / "progress"
        progress.mkdir()
        here = replace(place, copy=top, progress_folder=progress)
        result = job.run(here)
        record = _ran(result)
        branch_bundle = None
        if record.branch:
            out = root / "branch.bundle"
            git(clone, "bundle", "create", "-q", str(out), f"refs/heads/{record.branch}")
            branch_bundle = out.read_bytes()
        run_files, progress_files = pack_files(
            top, run_folder_of(job, here, record.run_id), progress
        )
        home = here.progress_home[0] if here.progress_home else None
        return Returned(result, branch_bundle, run_files, progress_files, home)
