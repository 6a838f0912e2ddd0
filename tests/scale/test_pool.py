"""The one pool of many loops: its local backend, its bound, its order, and where a job runs."""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.scale.job import HERE, Job, Place
from harness.scale.pool import LocalPool, open_pool, run_all

ASKED: contextvars.ContextVar[str] = contextvars.ContextVar("asked", default="nobody")


class Made:
    """A job's result: the branch and run id a run gives."""

    branch: str | None = None

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id


def test_every_job_runs_at_most_so_many_at_once_results_in_order_failures_kept() -> None:
    lock, running, most = threading.Lock(), [0], [0]

    def work(number: int, place: Place) -> Made:
        assert place is HERE  # in place, in this process
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05 * (5 - number))  # the later ones end first
        with lock:
            running[0] -= 1
        if number == 3:
            raise ValueError("three is bad")
        return Made(f"run-{number}")

    jobs = [Job(f"job-{n}", lambda place, n=n: work(n, place)) for n in range(5)]
    results = run_all(LocalPool(), jobs, at_once=2)

    assert [r.run_id if isinstance(r, Made) else repr(r) for r in results] == [
        "run-0", "run-1", "run-2", "ValueError('three is bad')", "run-4",
    ]  # fmt: skip
    assert most[0] == 2


def test_a_job_runs_with_the_context_of_the_one_who_submitted_it() -> None:
    ASKED.set("the fleet")
    future = LocalPool().submit(Job("ask", lambda place: Made(ASKED.get())))
    assert future.result(timeout=10).run_id == "the fleet"
    assert threading.current_thread().name == "MainThread"


def test_a_place_finds_the_drivers_paths_in_its_copy(tmp_path: Path) -> None:
    shipped, copy = tmp_path / "driver" / "top", tmp_path / "worker" / "top"
    (shipped / "sub").mkdir(parents=True)
    (copy / "sub").mkdir(parents=True)
    progress = tmp_path / "worker" / "progress"
    place = Place(shipped=shipped, copy=copy, cwd=shipped / "sub", progress_folder=progress)

    assert place.path(shipped / "loop.toml") == copy / "loop.toml"
    assert place.path("notes.md") == copy / "sub" / "notes.md"  # from the driver's cwd
    assert place.path(tmp_path / "elsewhere.json") == tmp_path / "elsewhere.json"  # not shipped
    assert place.back(copy / "sub" / "repo") == shipped / "sub" / "repo"
    assert place.back(tmp_path / "other") == tmp_path / "other"
    assert place.progress(shipped / "progress" / "a.md") == progress / "a.md"
    assert place.progress_home == [shipped / "progress"]  # where its files go back
    before = os.getcwd()
    with place.entered():
        assert Path.cwd() == copy / "sub"
        assert Place.current() is place
    assert os.getcwd() == before
    assert Place.current() is HERE
    assert HERE.path("x/y") == Path("x/y")
    assert HERE.progress(Path("p.md")) == Path("p.md")


def test_an_unknown_backend_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="backend: must be 'local' or 'ray', got 'k8s'"):
        open_pool("k8s")  # type: ignore[arg-type]
    assert isinstance(open_pool("local"), LocalPool)


def test_a_job_is_asked_for_only_when_a_place_is_free_and_each_end_is_told() -> None:
    """What a batch builds on: its generator records a task as running only when it starts,
    and stops giving tasks once their ends spent its budget."""
    asked: list[int] = []
    told: list[tuple[int, str]] = []
    release = [threading.Event() for _ in range(4)]

    def jobs() -> Iterator[Job[Made]]:
        for number in range(4):
            if len(told) >= 2:  # the budget: two ended
                return
            asked.append(number)
            yield Job(f"job-{number}", lambda _place, n=number: release[n].wait(5) and Made(f"{n}"))

    def ended(index: int, outcome: Made | BaseException) -> None:
        assert isinstance(outcome, Made)
        told.append((index, outcome.run_id))
        assert asked == [0, 1, 2][: len(told) + 1]  # the next one only once this one ended
        release[len(told)].set()

    release[0].set()
    results = run_all(LocalPool(), jobs(), at_once=2, ended=ended)

    assert [r.run_id if isinstance(r, Made) else r for r in results] == ["0", "1", "2"]
    assert sorted(told) == [(0, "0"), (1, "1"), (2, "2")]
    assert asked == [0, 1, 2]  # the fourth was never asked for: two had ended


def test_a_first_interrupt_starts_nothing_more_and_returns_what_ended() -> None:
    stops: list[str] = []
    gate = threading.Event()

    def ended(index: int, outcome: Made | BaseException) -> None:
        if index == 0:
            raise KeyboardInterrupt  # as a first Ctrl-C would arrive while waiting

    jobs = [Job("quick", lambda _place: Made("quick"))]
    jobs += [
        Job(f"slow-{n}", lambda _place, n=n: gate.wait(5) and Made(f"slow-{n}")) for n in (1, 2)
    ]
    timer = threading.Timer(0.2, gate.set)
    timer.start()
    results = run_all(
        LocalPool(), jobs, at_once=2, ended=ended, stopping=lambda: stops.append("stop")
    )

    assert stops == ["stop"]
    assert [r.run_id if isinstance(r, Made) else r for r in results] == ["quick", "slow-1"]
    with pytest.raises(KeyboardInterrupt):  # without ``stopping``: raised once they ended
        run_all(LocalPool(), jobs[:1], at_once=1, ended=ended)
