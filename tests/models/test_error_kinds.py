"""Each provider failure litellm raises, named for what it is, and when to try again.

The exceptions are litellm's own classes, made as litellm makes them; the HTTP path that raises
them is exercised in test_provider_errors.py.
"""

from __future__ import annotations

import random
import socket
import ssl
from types import ModuleType

import httpx
import pytest

from harness.models.litellm_model import load_litellm
from harness.models.provider_errors import (
    JITTER,
    MAX_BACKOFF_SECONDS,
    MAX_RETRY_AFTER_SECONDS,
    ErrorKind,
    classify,
    connection_failure,
    retry_after,
    retry_delay,
)


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    return load_litellm()


def response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    return httpx.Response(status, headers=headers or {}, request=request)


def raised(
    litellm: ModuleType, name: str, status: int | None = None, **kwargs: object
) -> BaseException:
    cls = getattr(litellm, name)
    if name in ("Timeout", "APIConnectionError"):
        return cls(message="m", model="x", llm_provider="openai", **kwargs)
    return cls(
        message="m", model="x", llm_provider="openai", response=response(status or 400), **kwargs
    )


@pytest.mark.parametrize(
    ("name", "status", "kind"),
    [("ContextWindowExceededError", 400, ErrorKind.CONTEXT_TOO_LONG),
     ("AuthenticationError", 401, ErrorKind.AUTHENTICATION),
     ("PermissionDeniedError", 403, ErrorKind.PERMISSION),
     ("NotFoundError", 404, ErrorKind.UNKNOWN_MODEL),
     ("RateLimitError", 429, ErrorKind.RATE_LIMIT),
     ("Timeout", None, ErrorKind.TIMEOUT),
     ("APIConnectionError", None, ErrorKind.SERVER),
     ("InternalServerError", 500, ErrorKind.SERVER),
     ("ServiceUnavailableError", 503, ErrorKind.SERVER),
     ("BadRequestError", 400, ErrorKind.BAD_REQUEST),
     ("UnprocessableEntityError", 422, ErrorKind.BAD_REQUEST)],
)  # fmt: skip
def test_each_litellm_error_class_has_its_kind(
    litellm: ModuleType, name: str, status: int | None, kind: ErrorKind
) -> None:
    assert classify(litellm, raised(litellm, name, status)) is kind


class StatusOnly(Exception):
    """A failure that carries only the HTTP status (a provider litellm maps loosely)."""

    def __init__(self, status: object) -> None:
        super().__init__(f"status {status}")
        self.status_code = status


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, ErrorKind.AUTHENTICATION), (403, ErrorKind.PERMISSION), (404, ErrorKind.UNKNOWN_MODEL),
     (429, ErrorKind.RATE_LIMIT), (408, ErrorKind.TIMEOUT), (500, ErrorKind.SERVER),
     (502, ErrorKind.SERVER), (499, ErrorKind.BAD_REQUEST), (400, ErrorKind.BAD_REQUEST),
     (0, ErrorKind.BAD_REQUEST), (-2, ErrorKind.BAD_REQUEST), (None, ErrorKind.BAD_REQUEST),
     ("503", ErrorKind.BAD_REQUEST)],
)  # fmt: skip
def test_the_status_code_names_the_kind_when_the_class_does_not(
    litellm: ModuleType, status: object, kind: ErrorKind
) -> None:
    assert classify(litellm, StatusOnly(status)) is kind


def chained(*causes: BaseException, context: bool = False) -> BaseException:
    """The first exception, raised from the next, and so on."""
    for outer, inner in zip(causes, causes[1:], strict=False):
        if context:
            outer.__context__ = inner
        else:
            outer.__cause__ = inner
    return causes[0]


class ConnectError(Exception):
    """Named as httpx and httpcore name a refused connection, a DNS or TLS failure."""


@pytest.mark.parametrize(
    "cause",
    [ConnectionRefusedError(111, "refused"), socket.gaierror(-2, "Name or service not known"),
     ssl.SSLError(1, "handshake failed"), ConnectError("all connection attempts failed")],
)  # fmt: skip
def test_a_server_that_cannot_be_reached_is_unreachable_anywhere_in_the_chain(
    litellm: ModuleType, cause: BaseException
) -> None:
    outer = StatusOnly(500)  # litellm reports a refused connection as a 500
    assert (
        classify(litellm, chained(outer, RuntimeError("wrapped"), cause)) is ErrorKind.UNREACHABLE
    )
    assert classify(litellm, chained(StatusOnly(500), cause, context=True)) is ErrorKind.UNREACHABLE
    assert classify(litellm, cause) is ErrorKind.UNREACHABLE


def test_a_dns_failure_is_named_with_the_url_not_as_a_status_500(litellm: ModuleType) -> None:
    """The chain litellm raises for a host that does not resolve: its own 500 over openai's
    "Connection error." over httpx's ConnectError (which carries the request) over gaierror."""
    url = "https://api.example.invalid/v1/chat/completions"
    request = httpx.Request("POST", url)
    top = chained(
        litellm.InternalServerError("OpenAIException - Connection error.", "openai", "m"),
        RuntimeError("Connection error."),
        httpx.ConnectError("[Errno -2] Name or service not known", request=request),
        socket.gaierror(-2, "Name or service not known"),
    )
    assert classify(litellm, top) is ErrorKind.UNREACHABLE
    assert connection_failure(top) == (
        f"DNS lookup failed for {url} ([Errno -2] Name or service not known)"
    )
    refused = chained(StatusOnly(500), ConnectionRefusedError(111, "Connection refused"))
    assert connection_failure(refused) == "connection refused ([Errno 111] Connection refused)"
    tls = connection_failure(chained(StatusOnly(500), ssl.SSLError(1, "handshake failed")))
    assert tls == "TLS handshake failed (handshake failed)"


def test_a_chain_without_a_connection_failure_or_with_a_loop_is_not_unreachable(
    litellm: ModuleType,
) -> None:
    assert classify(litellm, chained(StatusOnly(500), OSError("disk"))) is ErrorKind.SERVER
    first, second = StatusOnly(429), ValueError("loop")
    first.__cause__, second.__cause__ = second, first
    assert classify(litellm, first) is ErrorKind.RATE_LIMIT  # and it returns


class WithHeaders(Exception):
    def __init__(self, headers: object = None, response: object = None) -> None:
        super().__init__("rate limited")
        if headers is not None:
            self.litellm_response_headers = headers
        if response is not None:
            self.response = response


def test_retry_after_is_read_from_litellms_headers_or_the_response(litellm: ModuleType) -> None:
    assert retry_after(litellm, WithHeaders(httpx.Headers({"retry-after": "7"}))) == 7.0
    assert retry_after(litellm, WithHeaders(response=response(429, {"retry-after": "3"}))) == 3.0
    both = WithHeaders(httpx.Headers({"retry-after": "2"}), response(429, {"retry-after": "9"}))
    assert retry_after(litellm, both) == 2.0
    assert retry_after(litellm, WithHeaders(response=response(429))) is None
    assert retry_after(litellm, WithHeaders(httpx.Headers({"retry-after": "1"}))) == 1.0
    assert retry_after(litellm, WithHeaders(httpx.Headers({"retry-after": "0"}))) is None
    assert retry_after(litellm, WithHeaders(httpx.Headers({"retry-after": "soon"}))) is None
    assert retry_after(litellm, WithHeaders()) is None
    assert retry_after(litellm, WithHeaders(response=object())) is None
    assert isinstance(retry_after(litellm, WithHeaders(httpx.Headers({"retry-after": "7"}))), float)


class Fixed(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(
    ("attempt", "backoff", "asked", "share", "delay"),
    [(1, 2.0, None, 0.0, 2.0), (2, 2.0, None, 0.0, 4.0), (3, 2.0, None, 1.0, 8.0 * (1 + JITTER)),
     (5, 2.0, None, 0.0, MAX_BACKOFF_SECONDS), (4, 2.0, None, 0.0, 16.0),
     (1, 2.0, 5.0, 0.5, 5.0 * (1 + JITTER / 2)), (3, 2.0, 0.5, 0.0, 0.5),
     (1, 2.0, 600.0, 0.0, MAX_RETRY_AFTER_SECONDS), (1, 2.0, 60.0, 0.0, 60.0)],
)  # fmt: skip
def test_the_pause_is_what_was_asked_or_the_backoff_capped_plus_jitter(
    attempt: int, backoff: float, asked: float | None, share: float, delay: float
) -> None:
    assert retry_delay(attempt, backoff, asked, rng=Fixed(share)) == pytest.approx(delay)


def test_the_caps_and_jitter_are_the_documented_ones() -> None:
    assert (MAX_BACKOFF_SECONDS, MAX_RETRY_AFTER_SECONDS, JITTER) == (30.0, 60.0, 0.25)
    assert 1.0 <= retry_delay(1, 1.0, None) <= 1.25  # without an rng: the module's own


def test_only_the_transient_kinds_are_retried() -> None:
    retried = {kind for kind in ErrorKind if kind.retryable}
    assert retried == {ErrorKind.UNREACHABLE, ErrorKind.RATE_LIMIT, ErrorKind.TIMEOUT,
                       ErrorKind.SERVER}  # fmt: skip
    assert [kind.value for kind in ErrorKind if not kind.retryable] == [
        "authentication failed", "permission denied", "unknown model", "context too long",
        "bad request",
    ]  # fmt: skip
