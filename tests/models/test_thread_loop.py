"""A thread that calls litellm gets one event loop for its life: litellm's timing hooks run on it
instead of on an event loop made and closed for every request."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.models.thread_loop import thread_loop
from tests.models.test_litellm_model import HELLO, _offline, local  # noqa: F401 - the fixture
from tests.openai_server import OpenAIServer, Text


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(deadline=60) as running:
        yield running


def _in_a_thread(work: Callable[[], Any]) -> Any:
    """``work()``'s result, run in a thread of its own that has ended since."""
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(work()))
    thread.start()
    thread.join()
    return results[0]


def test_requests_from_a_thread_make_no_event_loop_each(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[object] = []
    original = asyncio.run

    def counted(main: Any, **kwargs: Any) -> Any:
        runs.append(main)
        return original(main, **kwargs)

    monkeypatch.setattr(asyncio, "run", counted)
    model = local(server)
    server.queue(*(Text(f"answer {n}") for n in range(4)))

    def four_requests() -> list[str | None]:
        return [model.complete(HELLO).content for _ in range(4)]

    assert _in_a_thread(four_requests) == [f"answer {n}" for n in range(4)]
    assert len(server.requests) == 4
    assert runs == []  # before: one event loop made (asyncio.run) and closed for each request


def test_the_loop_is_the_threads_for_its_life_and_closed_when_it_ends() -> None:
    def two_looks() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
        thread_loop()
        first = asyncio.get_event_loop()
        thread_loop()
        return first, asyncio.get_event_loop()

    first, second = _in_a_thread(two_looks)
    assert first is second
    gc.collect()
    assert first.is_closed()  # not left for the garbage collector to warn about


def test_a_thread_keeps_the_loop_it_has() -> None:
    mine = asyncio.new_event_loop()

    def with_its_own() -> asyncio.AbstractEventLoop:
        asyncio.set_event_loop(mine)
        thread_loop()
        return asyncio.get_event_loop()

    try:
        assert _in_a_thread(with_its_own) is mine
        assert not mine.is_closed()
    finally:
        mine.close()


def test_a_thread_inside_a_running_loop_is_left_alone() -> None:
    async def inside() -> bool:
        running = asyncio.get_running_loop()
        thread_loop()
        return asyncio.get_event_loop() is running

    assert _in_a_thread(lambda: asyncio.run(inside())) is True
