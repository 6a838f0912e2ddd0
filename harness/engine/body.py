"""A loop body: the :class:`LoopContext` it receives and how it is called, sync or async."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from harness.core.errors import ConfigError, Stopped
from harness.core.stop import StopReason
from harness.engine.reference import MISSING
from harness.engine.template import render
from harness.engine.variables import Vars

if TYPE_CHECKING:
    from harness.engine.bounds import Frame

Body = Callable[["LoopContext"], Any]
T = TypeVar("T")
BODY_SIGNATURE = (
    "def body(ctx): ... with the item as ctx.item (also ctx.index, ctx.total, ctx.vars)"
)
"""How a body is written, as the errors of a body written otherwise say."""


class RoundEnded(BaseException):
    """Raised by a passing :meth:`LoopContext.validate` to end the body's round at once.

    A ``BaseException`` so that a body's ``except Exception`` does not swallow it.
    """

    def __init__(self, ctx: LoopContext, output: Any) -> None:
        super().__init__("the round's validator passed")
        self.ctx = ctx
        self.output = output


def stray(ended: RoundEnded, frame: Frame) -> BaseException:
    """What a loop raises for a pass of a round that is not its own: ``ended`` itself, for an
    enclosing loop to take, or, with no enclosing loop, a :class:`ConfigError`."""
    if frame.depth > 1:
        return ended
    return ConfigError(
        "validate() passed on the context of a round that is not running in this loop or one "
        "around it (kept from an earlier round, or another item's); call it on your own ctx"
    )


class LoopContext:
    """What a body receives: ``vars``, ``input`` (alias ``item``), ``index`` (0-based), ``total``.

    In a :class:`Loop`, ``input`` is the previous round's output (the loop's input in round
    1, or always, with ``feedback=False``) and ``total`` is ``max_iterations``; in a
    :class:`ForEach` they are the item and the number of items. ``exit()`` takes effect when
    the body returns; a passing ``validate()`` ends the round at once.
    """

    __slots__ = ("vars", "input", "index", "total", "passed", "note", "stop")

    def __init__(self, vars: Vars, input: Any, index: int, total: int) -> None:
        self.vars = vars
        self.input = input
        self.index = index
        self.total = total
        self.passed: bool | None = None
        self.note = ""
        self.stop: StopReason | None = None

    @property
    def item(self) -> Any:
        return self.input

    def exit(self, reason: str = "") -> None:
        """End the loop after this round (a ForEach starts no further item): ``EXIT``."""
        self.stop, self.note = StopReason.EXIT, reason

    def validate(self, passed: bool, reason: str = "", *, output: Any = None) -> bool:
        """Judge this round. A pass ends the round at once (the rest of the body does not run)
        and the loop with ``PASSED``; ``output`` is then the round's output. A fail returns
        ``False`` and the body goes on.
        """
        self.passed, self.note = bool(passed), reason
        if passed:
            self.stop = StopReason.PASSED
            raise RoundEnded(self, output)
        return False

    def render(self, text: str) -> str:
        """Fill ``{{loop.index}}``, ``{{loop.item}}``, ``{{loop.total}}``, ``{{input}}`` and variables."""
        return render(text, self._root)

    def _root(self, name: str) -> Any:
        if name == "loop":
            return {"index": self.index, "item": self.input, "total": self.total}
        if name in self.vars:
            return self.vars[name]
        return self.input if name == "input" else MISSING


def is_async(body: object) -> bool:
    """Whether calling ``body`` gives a coroutine (an ``async def`` or an async ``__call__``)."""
    return inspect.iscoroutinefunction(body) or (
        callable(body) and inspect.iscoroutinefunction(type(body).__call__)
    )


async def call_async(body: Body, ctx: LoopContext, frame: Frame) -> Any:
    """Await an async body, cancelled with ``TIMEOUT`` when a watchdog's time runs out."""
    left = frame.remaining()
    if left is None:
        return await body(ctx)
    scope = asyncio.timeout(max(left, 0.0))
    try:
        async with scope:
            return await body(ctx)
    except TimeoutError:
        if scope.expired():
            raise Stopped(
                StopReason.TIMEOUT, "watchdog: the run's time ran out during a body"
            ) from None
        raise


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Drive an async body from synchronous ``run()``; refused inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise ConfigError("an async body cannot be run with run() inside an event loop; await arun()")


def check_body(body: Callable[..., Any]) -> None:
    """Refuse a body that cannot be called with the one argument every body gets, the context."""
    try:
        signature = inspect.signature(body)
    except (TypeError, ValueError):  # a callable without a signature to read: let it run
        return
    try:
        signature.bind(None)
    except TypeError:
        name = getattr(body, "__name__", type(body).__name__)
        raise ConfigError(
            f"body: {name}({', '.join(signature.parameters)}) cannot take the one argument a body is given, the loop "
            f"context; write {BODY_SIGNATURE}"
        ) from None


def misused_context(exc: Exception, ctx: LoopContext) -> ConfigError | None:
    """The error for a body that used its context as if it were the item (``def f(doc)`` then
    ``doc.split()``): a mistake in the program, not a failure of one item; else None."""
    on_context = getattr(exc, "obj", None) is ctx if isinstance(exc, AttributeError) else False
    if not on_context and not (isinstance(exc, TypeError) and "'LoopContext'" in str(exc)):
        return None
    error = ConfigError(
        f"body: {describe(exc)}: the body was given the loop context, not the item; "
        f"write {BODY_SIGNATURE}"
    )
    error.__cause__ = exc
    return error


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
