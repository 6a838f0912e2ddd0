"""ForEach: the same body once per item, one at a time or up to eight at once, order kept."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.core.errors import ConfigError, Stopped
from harness.engine.body import Body, LoopContext, call_async, describe, is_async, run_blocking
from harness.engine.bounds import Frame, Watchdog, enter_loop
from harness.engine.variables import Vars

MAX_CONCURRENCY = 8
_NO_VARS = Vars({}, {})


class ForEach:
    """Call ``body(ctx)`` for every item; ``run()`` returns the outputs in the items' order.

    The body sees ``ctx.item`` (also ``ctx.input``), ``ctx.index`` and ``ctx.total``. With
    ``concurrency`` above 1, sync bodies run in that many threads and async bodies as that
    many tasks; never more run at once. By default the first failure starts no further item
    (an async sibling still running is cancelled) and is re-raised with a note naming the
    item; with ``continue_on_error`` a failing item's output is ``{"error": "Type: message"}``.
    ``ctx.exit()`` or a passing ``ctx.validate()`` starts no further item: the result then
    holds the items started so far. A :class:`Stopped` (e.g. a watchdog's ``TIMEOUT``)
    always propagates.
    """

    def __init__(
        self,
        body: Body,
        items: Iterable[Any],
        *,
        concurrency: int = 1,
        continue_on_error: bool = False,
        watchdog: Watchdog | None = None,
    ) -> None:
        if not callable(body):
            raise ConfigError(f"body: must be callable, got {type(body).__name__}")
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise ConfigError(
                f"items: must be a list or another iterable of items, got {type(items).__name__}"
            )
        if (
            isinstance(concurrency, bool)
            or not isinstance(concurrency, int)
            or not 1 <= concurrency <= MAX_CONCURRENCY
        ):
            raise ConfigError(
                f"concurrency: must be an integer from 1 to {MAX_CONCURRENCY}, got {concurrency!r}"
            )
        self.body = body
        self.items = tuple(items)
        self.concurrency = concurrency
        self.continue_on_error = continue_on_error
        self.watchdog = watchdog
        self._async = is_async(body)

    def run(self) -> list[Any]:
        if self._async:
            return run_blocking(self.arun())
        with enter_loop(self.watchdog, "ForEach") as frame:
            batch = _Batch(self, frame)
            workers = min(self.concurrency, len(self.items))
            if workers <= 1:
                batch.work()
            else:
                contexts = [contextvars.copy_context() for _ in range(workers)]
                with ThreadPoolExecutor(workers, thread_name_prefix="foreach") as pool:
                    futures = [pool.submit(context.run, batch.work) for context in contexts]
                    try:
                        for future in futures:
                            future.result()
                    finally:  # an interrupt here must not wait for every remaining item
                        batch.halt()
            return batch.outputs()

    async def arun(self) -> list[Any]:
        """``run()`` for async code; sync bodies run in worker threads."""
        if not self._async:
            return await asyncio.to_thread(self.run)
        with enter_loop(self.watchdog, "ForEach") as frame:
            batch = _Batch(self, frame)
            workers = min(self.concurrency, len(self.items))
            tasks = [asyncio.create_task(batch.awork()) for _ in range(workers)]
            try:
                await asyncio.gather(*tasks)
            except Exception:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            return batch.outputs()


class _Batch:
    """One run of a ForEach: hands out items in order, collects outputs, keeps the first failure."""

    def __init__(self, each: ForEach, frame: Frame) -> None:
        self._each = each
        self._frame = frame
        self._outputs: list[Any] = [None] * len(each.items)
        self._taken = 0
        self._halted = False
        self._failure: Exception | None = None
        self._lock = threading.Lock()

    def work(self) -> None:
        body = self._each.body
        while (ctx := self._next()) is not None:
            try:
                output = body(ctx)
            except Exception as exc:
                if not self._failed(ctx, exc):
                    return
            else:
                self._done(ctx, output)

    async def awork(self) -> None:
        while (ctx := self._next()) is not None:
            try:
                output = await call_async(self._each.body, ctx, self._frame)
            except Exception as exc:
                if not self._failed(ctx, exc):
                    raise
            else:
                self._done(ctx, output)

    def outputs(self) -> list[Any]:
        if self._failure is not None:
            raise self._failure
        return self._outputs[: self._taken]

    def _next(self) -> LoopContext | None:
        items = self._each.items
        with self._lock:
            if self._halted or self._taken == len(items):
                return None
            index = self._taken
            self._taken += 1
        try:
            self._frame.admit()
        except Stopped as stop:
            self._fail(stop)
            return None
        return LoopContext(_NO_VARS, items[index], index, len(items))

    def halt(self) -> None:
        """Start no further item."""
        with self._lock:
            self._halted = True

    def _done(self, ctx: LoopContext, output: Any) -> None:
        self._outputs[ctx.index] = output
        if ctx.stop is not None:
            self.halt()

    def _failed(self, ctx: LoopContext, exc: Exception) -> bool:
        """Record a failing item; whether the worker goes on with the next one."""
        if self._each.continue_on_error and not isinstance(exc, Stopped):
            self._outputs[ctx.index] = {"error": describe(exc)}
            return True
        exc.add_note(f"raised in ForEach item at index {ctx.index} of {ctx.total}")
        self._fail(exc)
        return False

    def _fail(self, exc: Exception) -> None:
        with self._lock:
            self._halted = True
            self._failure = self._failure or exc
