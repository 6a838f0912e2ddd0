"""Provider failures named for what they are, each with its retry policy, through litellm's real
HTTP path against OpenAI- and Anthropic-compatible servers on 127.0.0.1."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from harness.models.base import ModelError
from harness.models.litellm_model import LiteLLMModel
from harness.models.provider_errors import (
    JITTER,
    MAX_BACKOFF_SECONDS,
    MAX_RETRY_AFTER_SECONDS,
    ErrorKind,
    retry_delay,
)
from tests.anthropic_server import AnthropicServer
from tests.openai_server import OpenAIServer, Status, Text

HELLO = [{"role": "user", "content": "hi"}]


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Iterator[OpenAIServer]:
    kind = AnthropicServer if request.param == "anthropic" else OpenAIServer
    with kind(deadline=60) as running:
        yield running


def _model(server: OpenAIServer, **kwargs: Any) -> LiteLLMModel:
    prefix = "anthropic" if isinstance(server, AnthropicServer) else "openai"
    options: dict[str, Any] = {"api_key": "sk-test", "retry_backoff": 0.01, **kwargs}
    return LiteLLMModel(f"{prefix}/test-model", api_base=server.api_base, **options)


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (401, "invalid x-api-key", ErrorKind.AUTHENTICATION),
        (403, "not allowed for this key", ErrorKind.PERMISSION),
        (404, "model: test-model not found", ErrorKind.UNKNOWN_MODEL),
        (400, "prompt is too long: 300000 tokens > 200000 maximum", ErrorKind.CONTEXT_TOO_LONG),
        (400, "messages: field required", ErrorKind.BAD_REQUEST),
    ],
)
def test_errors_that_cannot_succeed_on_a_retry_fail_after_one_request(
    server: OpenAIServer, status: int, message: str, kind: ErrorKind
) -> None:
    server.queue(Status(status, message), Text("never reached"))
    with pytest.raises(ModelError) as caught:
        _model(server, num_retries=3).complete(HELLO)
    assert len(server.requests) == 1
    assert caught.value.kind is kind
    assert f": {kind.value}: " in str(caught.value)
    assert f"status {status}), not retryable after 1 attempt" in str(caught.value)


@pytest.mark.parametrize("status", [500, 503, 529])
def test_server_errors_are_retried(server: OpenAIServer, status: int) -> None:
    server.queue(Status(status), Status(status), Text("third time"))
    assert _model(server, num_retries=2).complete(HELLO).content == "third time"
    assert len(server.requests) == 3


def test_a_rate_limit_waits_as_long_as_retry_after_asks(server: OpenAIServer) -> None:
    server.queue(Status(429, "slow down", (("Retry-After", "2"),)), Text("thanks for waiting"))
    reply = _model(server, num_retries=1).complete(HELLO)
    assert reply.content == "thanks for waiting"
    first, second = server.requests
    gap = second.at - first.at
    assert 2.0 <= gap < 15  # never sooner (the jitter's bound: retry_delay's own test below)


def test_a_rate_limit_without_retry_after_backs_off_briefly(server: OpenAIServer) -> None:
    server.queue(Status(429, "slow down"), Text("ok"))
    assert _model(server, num_retries=1, retry_backoff=0.05).complete(HELLO).content == "ok"
    first, second = server.requests
    assert second.at - first.at < 10  # not a Retry-After-like wait of its own


def test_a_rate_limit_that_persists_is_named() -> None:
    with OpenAIServer(deadline=30) as server:
        server.queue(*[Status(429, "quota exceeded")] * 3)
        with pytest.raises(ModelError) as caught:
            _model(server, num_retries=2).complete(HELLO)
    assert caught.value.kind is ErrorKind.RATE_LIMIT
    assert "rate limited: RateLimitError (status 429), gave up after 3 attempts" in str(
        caught.value
    )
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_server_that_is_down_is_named_unreachable_with_its_url(provider: str) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens on this port now
    api_base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    model = LiteLLMModel(
        f"{provider}/test-model", api_base=api_base, api_key="sk-test", num_retries=1,
        retry_backoff=0.01, timeout=5,
    )  # fmt: skip
    with pytest.raises(ModelError) as caught:
        model.complete(HELLO)
    assert caught.value.kind is ErrorKind.UNREACHABLE
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    assert str(caught.value) == (
        f"model {provider}/test-model: cannot reach API base URL {api_base}: connection refused "
        f"for http://127.0.0.1:{port}{path} ([Errno 111] Connection refused), gave up after 2 "
        "attempts"
    )


def test_retry_delay_honours_the_ask_up_to_a_cap_and_adds_bounded_jitter() -> None:
    rng = random.Random(7)
    delays = [retry_delay(1, 1.0, 2.0, rng=rng) for _ in range(200)]
    assert min(delays) >= 2.0
    assert max(delays) <= 2.0 * (1 + JITTER)
    assert len({round(d, 6) for d in delays}) > 150  # jittered, not one fixed pause
    assert retry_delay(1, 1.0, 3600.0, rng=rng) <= MAX_RETRY_AFTER_SECONDS * (1 + JITTER)
    assert retry_delay(1, 1.0, 3600.0, rng=rng) >= MAX_RETRY_AFTER_SECONDS
    backoff = [retry_delay(n, 1.0, None, rng=random.Random(0)) for n in (1, 2, 3, 10)]
    assert 1.0 <= backoff[0] <= 1.25
    assert 2.0 <= backoff[1] <= 2.5
    assert 4.0 <= backoff[2] <= 5.0
    assert MAX_BACKOFF_SECONDS <= backoff[3] <= MAX_BACKOFF_SECONDS * (1 + JITTER)


def test_only_transient_kinds_are_retryable() -> None:
    assert {k for k in ErrorKind if k.retryable} == {
        ErrorKind.UNREACHABLE,
        ErrorKind.RATE_LIMIT,
        ErrorKind.TIMEOUT,
        ErrorKind.SERVER,
    }
