"""An event loop for each thread that calls litellm, kept for the thread's life.

litellm reports every call's timing to its service hooks through the calling thread's event
loop and, in a thread that has none, makes one for the call and closes it again
(``asyncio.run``): an epoll and a socket pair made and closed on every model request. The
gateway answers an agent from the thread of its connection, a batch from its workers' threads,
so each of their requests paid for it (about 0.2 ms of CPU, some 5 % of a litellm call;
``bench/gateway.py``). The main thread is left alone: asyncio gives it a loop of its own.
"""

from __future__ import annotations

import asyncio
import threading

_threads = threading.local()


class _OwnLoop:
    """A loop made for the calling thread, closed when the thread ends (its locals go)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        self.loop.close()


def thread_loop() -> None:
    """Give this thread an event loop of its own where it has none, once."""
    if threading.current_thread() is threading.main_thread() or hasattr(_threads, "checked"):
        return
    _threads.checked = True
    try:
        asyncio.get_event_loop()  # the thread's loop, set or running: it serves
    except RuntimeError:
        _threads.own = _OwnLoop()
        asyncio.set_event_loop(_threads.own.loop)
