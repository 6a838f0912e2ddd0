"""A failed provider call, named for what it is, and whether (and when) to try again.

litellm maps every provider's failures onto its own exception classes (``AuthenticationError``,
``RateLimitError``, ``ContextWindowExceededError``, ...); :func:`classify` reads those, plus the
cause chain for a server that cannot be reached at all (litellm reports a refused connection as
a 500). :func:`retry_delay` honours ``Retry-After`` (parsed by litellm's own helper) up to
:data:`MAX_RETRY_AFTER_SECONDS`, else backs off exponentially, and adds jitter so that parallel
runs do not retry in step.
"""

from __future__ import annotations

import random
import socket
import ssl
from collections.abc import Iterator
from enum import StrEnum
from types import ModuleType

MAX_BACKOFF_SECONDS = 30.0
"""The longest pause between two attempts when the provider does not say how long to wait."""

MAX_RETRY_AFTER_SECONDS = 60.0
"""The longest ``Retry-After`` honoured; a provider asking for more gets this much."""

JITTER = 0.25
"""Each pause is lengthened by a random share of itself, up to this much."""


class ErrorKind(StrEnum):
    """What went wrong with a model call."""

    UNREACHABLE = "cannot reach API base URL"
    AUTHENTICATION = "authentication failed"
    PERMISSION = "permission denied"
    UNKNOWN_MODEL = "unknown model"
    CONTEXT_TOO_LONG = "context too long"
    BAD_REQUEST = "bad request"
    RATE_LIMIT = "rate limited"
    TIMEOUT = "timeout"
    SERVER = "server error"

    @property
    def retryable(self) -> bool:
        """Whether the same request can succeed on a second try."""
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {ErrorKind.UNREACHABLE, ErrorKind.RATE_LIMIT, ErrorKind.TIMEOUT, ErrorKind.SERVER}
)


def classify(litellm: ModuleType, exc: BaseException) -> ErrorKind:
    """The kind of failure ``exc`` (raised by ``litellm.completion``) is."""
    if any(map(_connection_error, _chain(exc))):  # refused, unknown host, failed TLS handshake
        return ErrorKind.UNREACHABLE
    status = getattr(exc, "status_code", None)
    checks: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int, ErrorKind], ...]
    checks = (
        (litellm.ContextWindowExceededError, -1, ErrorKind.CONTEXT_TOO_LONG),
        (litellm.AuthenticationError, 401, ErrorKind.AUTHENTICATION),
        (litellm.PermissionDeniedError, 403, ErrorKind.PERMISSION),
        (litellm.NotFoundError, 404, ErrorKind.UNKNOWN_MODEL),
        (litellm.RateLimitError, 429, ErrorKind.RATE_LIMIT),
        (litellm.Timeout, 408, ErrorKind.TIMEOUT),
    )
    for classes, code, kind in checks:
        if isinstance(exc, classes) or status == code:
            return kind
    if isinstance(exc, litellm.APIConnectionError) or (isinstance(status, int) and status >= 500):
        return ErrorKind.SERVER
    return ErrorKind.BAD_REQUEST


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what caused it, and so on (a loop in the chain ends it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _connection_error(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionRefusedError | socket.gaierror | ssl.SSLError):
        return True
    return type(exc).__name__ == "ConnectError"  # httpx/httpcore: refused, DNS or TLS


def connection_failure(exc: BaseException) -> str:
    """What an unreachable provider's connection failed with, and the URL it was for:
    ``DNS lookup failed for https://api.example.com/v1/chat/completions ([Errno -2] Name or
    service not known)``. litellm reports all of it as a bare "Connection error." (status 500);
    the words are taken from the chain's own connection errors and the request they carry."""
    links = list(_chain(exc))
    failures = [link for link in links if _connection_error(link)]
    deepest = failures[-1] if failures else exc
    if any(isinstance(link, socket.gaierror) for link in failures):
        what = "DNS lookup failed"
    elif any(isinstance(link, ConnectionRefusedError) for link in failures):
        what = "connection refused"
    elif any(isinstance(link, ssl.SSLError) for link in failures):
        what = "TLS handshake failed"
    else:
        what = "connection failed"
    # The deepest request is the one sent: litellm's own errors carry a stand-in request.
    url = next((found for link in reversed(links) if (found := _request_url(link))), None)
    where = f" for {url}" if url else ""
    return f"{what}{where} ({str(deepest) or type(deepest).__name__})"


def _request_url(exc: BaseException) -> str | None:
    """The URL of the request ``exc`` carries (httpx and openai errors do), if any."""
    try:
        request = getattr(exc, "request", None)  # httpx raises when the error has none
    except RuntimeError:
        return None
    url = getattr(request, "url", None)
    return str(url) if url else None


def retry_after(litellm: ModuleType, exc: BaseException) -> float | None:
    """Seconds the provider asked to wait (``Retry-After``), if it did."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if headers is None:
        return None
    from litellm.utils import _get_retry_after_from_exception_header

    seconds = _get_retry_after_from_exception_header(headers)
    return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None


def retry_delay(
    attempt: int, backoff: float, asked: float | None, *, rng: random.Random | None = None
) -> float:
    """The pause before attempt ``attempt + 1``: what the provider ``asked`` for (at most
    :data:`MAX_RETRY_AFTER_SECONDS`), else ``backoff * 2**(attempt - 1)`` (at most
    :data:`MAX_BACKOFF_SECONDS`), plus up to :data:`JITTER` of itself at random."""
    if asked is not None:
        base = min(asked, MAX_RETRY_AFTER_SECONDS)
    else:
        base = min(backoff * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)
    return base * (1 + JITTER * (rng or random).random())
