"""One pool for many loops at once: best-of-N attempts, a fleet's subtasks, a batch's tasks and a
benchmark's instances all run here, behind one interface with two backends.

``local`` runs each job in a thread of this process (loops spend their time waiting on models
and git). The threads are daemons, so a second interrupt quits at once. ``ray`` runs each job
as a Ray task (:class:`~harness.scale.ray_backend.RayPool`): the job's git repository goes to
the worker as a bundle, the job runs in a copy of it (its :class:`~harness.scale.job.Place`),
and the run's branch and files come back to where a local run would have left them.

A :class:`~harness.scale.job.Job` says what it runs, ``run(place)``, building its loop where the pool put it, and
what Ray needs to know of it: the ``loop`` file and the ``workspace`` whose repository is
shipped, its ``progress`` file, and its ``run_id`` when it names one. This module and the
engine's :class:`~harness.engine.foreach.ForEach` (the loop node of programs) are the only places
that start threads for parallel work.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Protocol, cast, get_args

from harness.core.errors import ConfigError
from harness.models.rate_limit import Limiter, shared_limiter
from harness.scale.job import HERE, Backend, Job, T


class Pool(Protocol):
    """Where jobs run: threads of this process, or a Ray cluster."""

    backend: Backend

    def submit(self, job: Job[T]) -> Future[T]: ...

    def limiter(self, model: str, per_minute: float) -> Limiter:
        """A rate limit for ``model`` that every job of this pool shares."""
        ...

    def close(self) -> None: ...


class LocalPool:
    """Each job in a daemon thread of this process, with the context of the one submitting it
    (an enclosing loop's bounds reach the job's loop). The caller bounds how many run at once."""

    backend: Backend = "local"

    def submit(self, job: Job[T]) -> Future[T]:
        future: Future[T] = Future()
        context = contextvars.copy_context()

        def work() -> None:
            try:
                future.set_result(context.run(job.run, HERE))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, which re-raises it
                future.set_exception(exc)

        threading.Thread(target=work, name=f"pool-{job.name}", daemon=True).start()
        return future

    def limiter(self, model: str, per_minute: float) -> Limiter:
        return shared_limiter(model, per_minute)

    def close(self) -> None:
        """Nothing to release: every thread ends with its job."""


def check_backend(backend: object) -> Backend:
    """``backend`` if it names one; a :class:`ConfigError` naming the field otherwise."""
    for name in get_args(Backend):
        if backend == name:  # the name itself, whatever compared equal to it
            return cast(Backend, name)
    raise ConfigError(f"backend: must be 'local' or 'ray', got {backend!r}")


def open_pool(
    backend: Backend = "local", *, address: str | None = None, num_cpus: float = 1
) -> Pool:
    """A pool of ``backend``; for ``ray``, ``address`` (or ``RAY_ADDRESS``) joins a cluster,
    else a local Ray instance is started (and stopped by :meth:`Pool.close`); each job asks for
    ``num_cpus``."""
    if check_backend(backend) == "ray":
        from harness.scale.ray_backend import RayPool

        return RayPool(address=address, num_cpus=num_cpus)
    return LocalPool()


def run_all(
    pool: Pool,
    jobs: Iterable[Job[T]],
    *,
    at_once: int,
    ended: Callable[[int, T | BaseException], None] | None = None,
    stopping: Callable[[], None] | None = None,
) -> list[T | BaseException]:
    """Run the jobs ``jobs`` gives, at most ``at_once`` at a time; each started one's result, or
    what it raised, in the jobs' order. The next job is asked of ``jobs`` only when a place is
    free, so a generator may stop giving them (a batch whose budget is spent); ``ended(index,
    outcome)`` is told of each job as it ends.

    A first interrupt starts no further job and waits for the running ones (a second one quits
    at once): with ``stopping``, it is told at once and what ended is returned; without, the
    interrupt is raised once they ended."""
    waiting = iter(jobs)
    running: dict[Future[T], int] = {}
    results: dict[int, T | BaseException] = {}
    taking, interrupted = True, False
    while taking or running:
        try:
            while taking and len(running) < at_once:
                job = next(waiting, None)
                if job is None:
                    taking = False
                else:
                    running[pool.submit(job)] = len(results) + len(running)
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                error = future.exception()
                results[index] = future.result() if error is None else error
                if ended is not None:
                    ended(index, results[index])
        except KeyboardInterrupt:
            if stopping is None:
                wait(running)
                raise
            if interrupted:
                raise
            taking, interrupted = False, True
            stopping()
    return [results[index] for index in range(len(results))]
