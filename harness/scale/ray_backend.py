"""The Ray backend of a batch: each task's loop is a Ray task, with its repository shipped.

The driver bundles the task's git repository (``git bundle --all``) and sends it with the task;
the worker clones it into a temporary folder, runs the loop there, and sends back the run's
branch as a git bundle plus the files the run wrote (its run folder under ``.harness/runs/`` and
its progress file and escalation report). The driver fetches the branch into the task's
repository and writes the files where a local run would have, so branches and ``harness report``
work exactly as after a local batch. Nothing relies on a shared filesystem.

A task whose loop.toml lies outside its repository, in a folder that holds the repository (a
benchmark instance: loop.toml and held-out tests beside the clone the agent works in), ships
that folder too: its regular files outside the repository and its ``.harness`` folders, links
left out; the worker lays them around its clone, and the run's files come back to that folder.

Ray retries a task whose worker process dies (``max_retries``); the retry starts again from the
shipped repository. ``address`` (or ``RAY_ADDRESS``) joins an existing cluster; without one a
local Ray instance is started for the batch and stopped after it. Install with
``pip install 'harness[ray]'``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import nofollow
from harness.core.errors import ConfigError
from harness.models.rate_limit import Limiter, RateLimiter
from harness.scale.batch_task import BatchTask, TaskRecord
from harness.scale.task_run import TaskRun, run_task
from harness.spec.named_models import rooted_model
from harness.workspace.git import BRANCH_PREFIX, PART, is_run_branch, run_branch_suffix
from harness.workspace.git_cmd import git, run_git

if TYPE_CHECKING:
    from harness.outer.loop import OuterLoop

LoopFor = Callable[[BatchTask, TaskRun], "OuterLoop"]

MAX_RETRIES = 3
"""How many times Ray runs a task again after its worker process died."""
SHIP_LIMIT = 256 * 1024 * 1024
"""The most a worker sends back of a run's files, and the driver ships of a loop's folder
around its repository, all together (256 MB)."""
SCRIPTED = "scripted:"
"""The prefix of a scripted model's name: a file, shipped relative to the task's folder."""


@dataclass(frozen=True)
class Shipment:
    """What a worker needs: the repository as a bundle and the task's paths inside it."""

    bundle: bytes
    task: BatchTask  # loop, workspace and a scripted model's file relative to the shipped top
    run: TaskRun  # progress relative to the shipped progress folder
    repo_at: str = "."
    """Where the repository goes, relative to the shipped top (the loop's folder, or itself)."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """The loop's folder's files around the repository, relative to the top."""
    shallow: str = ""
    """A shallow repository's boundary commits (its ``shallow`` file); empty for a full one."""
    head: str = ""
    """For a shallow repository: the branch checked out (``refs/heads/...``), or the commit."""


@dataclass(frozen=True)
class Returned:
    """What a worker sends back: the record, the branch as a bundle, and the files it wrote."""

    record: TaskRecord
    branch_bundle: bytes | None
    run_files: dict[str, bytes]  # relative to the shipped top (the repository's top folder)
    progress_files: dict[str, bytes]  # names in the task's progress folder


class RayExecutor:
    """Runs batch tasks as Ray tasks with ``num_cpus`` each (and optional custom resources)."""

    def __init__(
        self,
        loop_for: LoopFor,
        *,
        address: str | None = None,
        num_cpus: float = 1,
        resources: dict[str, float] | None = None,
        max_retries: int = MAX_RETRIES,
        rate_limits: Mapping[str, float] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ConfigError(
                "backend 'ray': Ray is not installed; install it with pip install 'harness[ray]'"
            ) from exc
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            ray.init(
                address=address or os.environ.get("RAY_ADDRESS") or None,
                include_dashboard=False,
                log_to_driver=False,
            )
            self._started = True
        self._remote = ray.remote(_run_shipped).options(
            num_cpus=num_cpus, resources=resources or {}, max_retries=max_retries
        )
        self.loop_for = loop_for
        self.limiters = {
            name: ClusterLimiter(ray, name, per_minute)
            for name, per_minute in (rate_limits or {}).items()
        }

    def submit(self, task: BatchTask, run: TaskRun) -> Future[TaskRecord]:
        repo = repository_of(task)
        top = shipped_top(task, repo)
        files = folder_files(top, repo) if top != repo else {}
        repo_at = os.path.relpath(repo, top)
        shipment = Shipment(
            _bundle_all(repo), _relative(task, top), run, repo_at, files, *_shallow_of(repo)
        )
        done: Future[TaskRecord] = Future()
        ref = self._remote.remote(shipment, self.loop_for, self.limiters)

        def imported(remote: Future[Returned]) -> None:
            try:
                done.set_result(import_returned(remote.result(), repo, run, top=top))
            except Exception as exc:  # noqa: BLE001 - a task Ray gave up on is an error record
                done.set_result(
                    TaskRecord(
                        name=task.name,
                        status="error",
                        stop_reason="ERROR",
                        message=f"ray: {type(exc).__name__}: {exc}",
                        starts=run.starts,
                    )
                )

        ref.future().add_done_callback(imported)
        return done

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


class ClusterLimiter:
    """A rate limit shared by every worker of the cluster: one Ray actor per model hands out turns.

    The actor only computes each call's wait; the caller sleeps, so the actor never blocks.
    """

    def __init__(self, ray: Any, model: str, per_minute: float) -> None:
        actor = ray.remote(num_cpus=0)(_TurnKeeper)
        self._actor = actor.options(
            name=f"harness-rate-{model}-{per_minute:g}", get_if_exists=True
        ).remote(per_minute)

    def acquire(self) -> float:
        import ray  # on the worker: the handle travels, the module is imported there

        wait = float(ray.get(self._actor.turn.remote()))
        if wait > 0:
            time.sleep(wait)
        return wait


class _TurnKeeper:
    """The actor behind :class:`ClusterLimiter`: a limiter that reports waits without sleeping."""

    def __init__(self, per_minute: float) -> None:
        self._limiter = RateLimiter(per_minute, sleep=lambda seconds: None)

    def turn(self) -> float:
        return self._limiter.acquire()


def repository_of(task: BatchTask) -> Path:
    """The top folder of the git repository that holds the task's workspace (or its loop)."""
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


def shipped_top(task: BatchTask, repo: Path) -> Path:
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


def import_returned(
    returned: Returned, repo: Path, run: TaskRun, *, top: Path | None = None
) -> TaskRecord:
    """Fetch the returned branch into ``repo`` and write the returned files where they belong:
    the run's under ``top`` (the shipped folder; default ``repo``).

    Only a branch named as this run's (``harness/<loop>.<8 hex of the loop>.<8 hex of the run
    id>``) is fetched: a worker's record naming ``main`` would otherwise replace the user's own.
    Each file is written without following a link, inside its folder.
    """
    record = returned.record
    if record.branch and not is_run_branch(record.branch, run.run_id):
        raise ConfigError(
            f"ray: the worker returned branch {record.branch!r}, not one of run {run.run_id}'s "
            f"({BRANCH_PREFIX}<loop>{PART}<8 hex>{PART}{run_branch_suffix(run.run_id)}); "
            "nothing of it was fetched"
        )
    if returned.branch_bundle is not None and record.branch:
        with tempfile.TemporaryDirectory(prefix="harness-ray-") as tmp:
            bundle = Path(tmp) / "branch.bundle"
            bundle.write_bytes(returned.branch_bundle)
            git(
                repo,
                "fetch",
                "-q",
                str(bundle),
                f"+refs/heads/{record.branch}:refs/heads/{record.branch}",
            )
    for relative, data in returned.run_files.items():
        _write_inside(top or repo, relative, data)
    for name, data in returned.progress_files.items():
        _write_inside(run.progress.parent, name, data)
    return record


def _write_inside(folder: Path, relative: str, data: bytes) -> None:
    """Write ``data`` at ``relative`` under ``folder``, no link on the way followed."""
    target = Path(os.path.normpath(folder / relative))
    if Path(relative).is_absolute() or not target.is_relative_to(os.path.normpath(folder)):
        raise ConfigError(f"ray: a returned file {relative!r} points outside {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    nofollow.write_atomic(target, data, root=folder)


def pack_files(
    clone: Path, run_id: str, progress: Path
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """On the worker: the run's folders' files (relative to ``clone``) and the progress
    folder's (by name), regular files only, reached without following a link, together at most
    :data:`SHIP_LIMIT` bytes; a link, a FIFO or a device among them is left behind."""
    budget = [SHIP_LIMIT]
    run_files: dict[str, bytes] = {}
    for top, folders, _ in os.walk(clone):  # os.walk never descends a link to a folder
        here = Path(top)
        if here.name == "runs" and here.parent.name == ".harness" and run_id in folders:
            for path in _regular_files(here / run_id):
                run_files[str(path.relative_to(clone))] = _take(path, clone, budget)
        folders[:] = [name for name in folders if name != ".git"]
    progress_files = {
        path.name: _take(path, progress, budget)
        for path in _regular_files(progress, recurse=False)
        if not path.name.startswith(".")
    }
    return run_files, progress_files


def _regular_files(folder: Path, *, recurse: bool = True) -> list[Path]:
    """The regular files under ``folder`` (none when it is a link or missing), links left out."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    found = []
    for top, _folders, files in os.walk(folder):
        found += [
            Path(top, name) for name in files if stat.S_ISREG(os.lstat(Path(top, name)).st_mode)
        ]
        if not recurse:
            break
    return sorted(found)


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


def _relative(task: BatchTask, top: Path) -> BatchTask:
    """The task with its paths relative to ``top``; a scripted model's file inside ``top``
    too (``scripted:`` and a relative path, found on the worker at its place there)."""
    update = {
        key: os.path.relpath(Path(value).resolve(), top.resolve())
        for key, value in (("loop", task.loop), ("workspace", task.workspace))
        if value is not None
    }
    if task.model is not None and task.model.startswith(SCRIPTED):
        script = Path(task.model.removeprefix(SCRIPTED)).resolve()
        inside = script.is_relative_to(top.resolve())
        update["model"] = SCRIPTED + str(script.relative_to(top.resolve()) if inside else script)
    return task.model_copy(update=update)


def _run_shipped(
    shipment: Shipment, loop_for: LoopFor, limiters: Mapping[str, Limiter]
) -> Returned:
    """On the worker: clone the bundle, run the task's loop there, and pack what it made."""
    with tempfile.TemporaryDirectory(prefix="harness-ray-") as tmp:
        root = Path(tmp)
        (root / "in.bundle").write_bytes(shipment.bundle)
        top = root / "repo"
        clone = Path(os.path.normpath(top / shipment.repo_at))
        _clone_bundle(root / "in.bundle", clone, shipment.shallow, shipment.head)
        for relative, data in shipment.files.items():
            _write_inside(top, relative, data)
        task = shipment.task
        update: dict[str, Any] = {
            key: str(top / value)
            for key, value in (("loop", task.loop), ("workspace", task.workspace))
            if value is not None
        }
        update["model"] = rooted_model(task.model, top)
        progress = root / "progress" / shipment.run.progress.name
        run = TaskRun(shipment.run.run_id, progress, shipment.run.starts)
        record = run_task(task.model_copy(update=update), run, loop_for, limiters=limiters)
        branch_bundle = None
        if record.branch:
            out = root / "branch.bundle"
            git(clone, "bundle", "create", "-q", str(out), f"refs/heads/{record.branch}")
            branch_bundle = out.read_bytes()
        run_files, progress_files = pack_files(top, run.run_id, progress.parent)
        return Returned(record, branch_bundle, run_files, progress_files)
