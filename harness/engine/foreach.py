"""ForEach: the same body once per item, one at a time or up to eight at once, order kept.

The items are a list (or another iterable), or a reference (``"files"``, ``"input.files"``)
into the value given to ``run(input)`` — the previous step's output; with no items at all that
value itself is the array.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

from pydantic import Field

from harness.core.errors import ConfigError, Stopped
from harness.core.section import check_value
from harness.engine.body import (
    Body,
    LoopContext,
    RoundEnded,
    call_async,
    check_body,
    describe,
    is_async,
    misused_context,
    run_blocking,
    stray,
)
from harness.engine.bounds import Frame, Watchdog, enter_loop
from harness.engine.reference import MISSING, parse_reference, resolve, step
from harness.engine.result import ForEachResult
from harness.engine.variables import NO_VARS

MAX_CONCURRENCY = 8
Concurrency = Annotated[int, Field(ge=1, le=MAX_CONCURRENCY, strict=True)]
"""How many items (loops, attempts) run at once: the type of every ``concurrency``."""
PARALLEL_CONCURRENCY = 4
"""How many items run at once with ``parallel=True`` and no ``concurrency`` given."""


class ForEach:
    """Call ``body(ctx)`` for every item; ``run()`` returns the outputs in the items' order.

    ``items`` is an iterable, a reference into ``run(input)`` (``"files"``, ``"input.files"``),
    or ``None`` for the input itself. The body sees ``ctx.item`` (also ``ctx.input``),
    ``ctx.index`` and ``ctx.total``. ``parallel=True`` runs :data:`PARALLEL_CONCURRENCY` items
    at once unless ``concurrency`` says otherwise; sync bodies run in threads, async bodies as
    tasks; never more run at once. By default the first failure starts no further item (an
    async sibling still running is cancelled) and is re-raised with a note naming the item;
    with ``continue_on_error`` a failing item's output is ``{"error": "Type: message"}``.
    ``ctx.exit()`` or a passing ``ctx.validate()`` starts no further item: the result then
    holds the items started so far. A :class:`Stopped` (e.g. a watchdog's ``TIMEOUT``) always
    propagates. The result is a :class:`ForEachResult`: a list with ``succeeded``/``total``.
    A body is ``def body(ctx)``: one that cannot take that one argument is refused here, and one
    that uses the context as the item (``def f(doc): doc.split()``) fails with a
    :class:`ConfigError` saying so, even with ``continue_on_error``.
    """

    def __init__(
        self,
        body: Body,
        items: Iterable[Any] | str | None = None,
        *,
        concurrency: int | None = None,
        parallel: bool = False,
        continue_on_error: bool = False,
        watchdog: Watchdog | None = None,
    ) -> None:
        if not callable(body):
            raise ConfigError(f"body: must be callable, got {type(body).__name__}")
        check_body(body)
        if isinstance(items, str):
            try:
                parse_reference(items)
            except ConfigError as exc:
                raise ConfigError(f"items: {exc}") from None
        elif items is not None and (
            isinstance(items, bytes | Mapping) or not isinstance(items, Iterable)
        ):
            raise ConfigError(
                "items: must be a list or another iterable of items, or a reference into "
                f"run()'s input such as 'files', got {type(items).__name__}"
            )
        if concurrency is None:
            concurrency = PARALLEL_CONCURRENCY if parallel else 1
        check_value(Concurrency, concurrency, "concurrency")
        self.body = body
        self.source: str | None = None
        self.items: tuple[Any, ...] = ()
        if isinstance(items, str) or items is None:
            self.source = items or "input"
        else:
            self.items = tuple(items)
        self.concurrency = concurrency
        self.parallel = parallel or concurrency > 1
        self.continue_on_error = continue_on_error
        self.watchdog = watchdog
        self._async = is_async(body)

    def run(self, input: Any = None) -> ForEachResult:
        """Run every item; ``input`` is what a reference in ``items`` reads from."""
        if self._async:
            return run_blocking(self.arun(input))
        items = self._items(input)
        with enter_loop(self.watchdog, "ForEach") as frame:
            batch = _Batch(self, items, frame)
            workers = min(self.concurrency, len(items))
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

    async def arun(self, input: Any = None) -> ForEachResult:
        """``run()`` for async code; sync bodies run in worker threads."""
        if not self._async:
            return await asyncio.to_thread(self.run, input)
        items = self._items(input)
        with enter_loop(self.watchdog, "ForEach") as frame:
            batch = _Batch(self, items, frame)
            workers = min(self.concurrency, len(items))
            tasks = [asyncio.create_task(batch.awork()) for _ in range(workers)]
            try:
                await asyncio.gather(*tasks)
            except (Exception, RoundEnded):
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            return batch.outputs()

    def _items(self, input: Any) -> tuple[Any, ...]:
        """The items of this run: given, or read from ``input`` by reference."""
        name = self.source
        if name is None:
            return self.items
        if name == "input" and input is None:
            raise ConfigError("items: none given, and run() got no input to iterate")

        def root(first: str) -> Any:
            return input if first == "input" else step(input, first)

        found = resolve(root, name)
        if found is MISSING:
            raise ConfigError(f"items: {name!r} does not resolve in run()'s input {input!r:.80}")
        if isinstance(found, str | bytes | Mapping) or not isinstance(found, Iterable):
            raise ConfigError(
                f"items: {name!r} must name an array in run()'s input, got {type(found).__name__}"
            )
        return tuple(found)


class _Batch:
    """One run of a ForEach: hands out items in order, collects outputs, keeps the first failure.

    A passing ``validate()`` of an enclosing loop's context, called from inside an item, ends
    the batch like a failure does and reaches that loop.
    """

    def __init__(self, each: ForEach, items: tuple[Any, ...], frame: Frame) -> None:
        self._each = each
        self._items = items
        self._frame = frame
        self._outputs: list[Any] = [None] * len(items)
        self._failed_at: list[int] = []
        self._taken = 0
        self._halted = False
        self._failure: BaseException | None = None
        self._lock = threading.Lock()

    def work(self) -> None:
        body = self._each.body
        while (ctx := self._next()) is not None:
            try:
                output = body(ctx)
            except (Exception, RoundEnded) as exc:
                if not self._settled(ctx, exc):
                    return
            else:
                self._done(ctx, output)

    async def awork(self) -> None:
        while (ctx := self._next()) is not None:
            try:
                output = await call_async(self._each.body, ctx, self._frame)
            except (Exception, RoundEnded) as exc:
                if not self._settled(ctx, exc):
                    raise
            else:
                self._done(ctx, output)

    def outputs(self) -> ForEachResult:
        if isinstance(self._failure, RoundEnded):
            raise stray(self._failure, self._frame) from None
        if self._failure is not None:
            raise self._failure
        taken, failed = self._taken, tuple(sorted(self._failed_at))
        return ForEachResult(
            self._outputs[:taken],
            succeeded=taken - len(failed),
            total=len(self._items),
            failed=failed,
            parallel=self._each.parallel,
        )

    def _next(self) -> LoopContext | None:
        items = self._items
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
        return LoopContext(NO_VARS, items[index], index, len(items))

    def halt(self) -> None:
        """Start no further item."""
        with self._lock:
            self._halted = True

    def _done(self, ctx: LoopContext, output: Any) -> None:
        self._outputs[ctx.index] = output
        if ctx.stop is not None:
            self.halt()

    def _settled(self, ctx: LoopContext, exc: Exception | RoundEnded) -> bool:
        """Settle an item the body left by raising ``exc``; whether the worker goes on with the
        next one. The item's own passing ``validate()`` gives its output; an enclosing round's
        ends the batch. A failing item is recorded when continuing on error, but a body that
        took its context for the item fails the run."""
        if isinstance(exc, RoundEnded):
            if exc.ctx is not ctx:
                self._fail(exc)
                return False
            self._done(ctx, exc.output)
            return True
        misuse = misused_context(exc, ctx)
        if misuse is not None:
            exc = misuse
        elif self._each.continue_on_error and not isinstance(exc, Stopped):
            with self._lock:
                self._outputs[ctx.index] = {"error": describe(exc)}
                self._failed_at.append(ctx.index)
            return True
        exc.add_note(f"raised in ForEach item at index {ctx.index} of {ctx.total}")
        self._fail(exc)
        return False

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            self._halted = True
            self._failure = self._failure or exc
