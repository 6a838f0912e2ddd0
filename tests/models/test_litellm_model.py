"""LiteLLMModel through litellm's real HTTP path, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import ConfigError
from harness.models.base import ModelError
from harness.models.budget import Budget, Meter, MeteredModel
from harness.models.litellm_model import DEFAULT_CONTEXT_WINDOW, LiteLLMModel, load_litellm
from harness.models.provider_errors import ErrorKind
from harness.models.resolve import resolve_model
from tests.openai_server import Hang, NoChoice, OpenAIServer, Status, Text, ToolCalls

ROOT = Path(__file__).resolve().parents[2]
HELLO = [{"role": "user", "content": "hi"}]
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


@pytest.fixture(scope="module", autouse=True)
def _offline() -> Iterator[None]:
    """litellm's cost map stays local and no provider credentials are in reach."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(deadline=60) as running:
        yield running


def local(server: OpenAIServer, model: str = "openai/test-model", **kwargs: Any) -> LiteLLMModel:
    options: dict[str, Any] = {"api_key": "sk-test", "retry_backoff": 0.01, **kwargs}
    return LiteLLMModel(model, api_base=server.api_base, **options)


def test_import_and_token_counting_do_not_import_litellm() -> None:
    code = (
        "import sys, harness.models.litellm_model as m\n"
        "model = m.LiteLLMModel('openai/test-model')\n"
        "assert model.count_tokens([{'role': 'user', 'content': 'hello there'}]) > 0\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_litellm_once_loaded_is_left_out_of_every_garbage_collection() -> None:
    litellm = load_litellm()
    # Frozen objects are in no generation: a collection (and the one at exit) never walks them.
    assert gc.get_freeze_count() > 100_000
    tracked = {id(o) for o in gc.get_objects()}
    assert id(litellm.__dict__) not in tracked
    assert id(litellm.completion.__dict__) not in tracked
    made_after = {"made": ["after the load"]}
    assert id(made_after) in {id(o) for o in gc.get_objects()}


def test_text_reply_with_usage_and_pass_through_arguments(server: OpenAIServer) -> None:
    server.queue(Text("hello back", prompt_tokens=11, completion_tokens=3))
    reply = local(server, temperature=0.25).complete(HELLO, max_tokens=50)
    assert reply.content == "hello back"
    assert reply.tool_calls == ()
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 3)
    assert reply.usage.calls == 1
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == HELLO
    assert request.body["max_tokens"] == 50
    assert request.body["temperature"] == 0.25
    assert "tools" not in request.body
    assert request.headers["authorization"] == "Bearer sk-test"


def test_tool_calls_keep_id_name_and_raw_arguments(server: OpenAIServer) -> None:
    server.queue(
        ToolCalls(
            (
                ("call_a1", "read_file", '{"path": "README.md"}'),
                ("call_b2", "read_file", '{"path": "unterminated'),
            )
        )
    )
    reply = local(server, max_tokens=64).complete(HELLO, [READ_FILE])
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a1", "read_file", '{"path": "README.md"}'),
        ("call_b2", "read_file", '{"path": "unterminated'),
    ]
    assert reply.content is None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (20, 7)
    body = server.requests[0].body
    assert body["tools"] == [READ_FILE]
    assert body["max_tokens"] == 64


def test_a_metered_call_keeps_the_models_max_tokens(server: OpenAIServer) -> None:
    server.queue(Text("short", prompt_tokens=5, completion_tokens=1))
    metered = MeteredModel(local(server, max_tokens=64), Meter(Budget(tokens=500)))
    assert metered.complete(HELLO).content == "short"
    assert server.requests[0].body["max_tokens"] == 64


@pytest.mark.parametrize("status", [500, 429, 503])
def test_retryable_status_then_success_retries_once(server: OpenAIServer, status: int) -> None:
    server.queue(Status(status), Text("second time lucky"))
    reply = local(server).complete(HELLO)
    assert reply.content == "second time lucky"
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_not_retried(server: OpenAIServer, status: int) -> None:
    server.queue(Status(status), Text("never reached"))
    with pytest.raises(ModelError) as caught:
        local(server, num_retries=3).complete(HELLO)
    assert len(server.requests) == 1
    message = str(caught.value)
    assert "openai/test-model" in message
    assert f"status {status}" in message
    assert "not retryable after 1 attempt" in message


def test_context_window_error_is_not_retried(server: OpenAIServer) -> None:
    server.queue(Status(400, "This model's maximum context length is 8192 tokens."))
    with pytest.raises(ModelError, match="ContextWindowExceededError"):
        local(server, num_retries=3).complete(HELLO)
    assert len(server.requests) == 1


def test_persistent_server_error_gives_up_after_all_attempts(server: OpenAIServer) -> None:
    server.queue(Status(500), Status(500), Status(500), Text("too late"))
    with pytest.raises(ModelError, match=r"status 500\), gave up after 3 attempts"):
        local(server, num_retries=2).complete(HELLO)
    assert len(server.requests) == 3


def test_an_answer_holding_no_choice_is_a_model_error_and_is_not_sent_again() -> None:
    with NoChoice(deadline=60) as server:
        server.queue(Text("hi"), Text("hi"))
        with pytest.raises(ModelError) as caught:
            local(server, num_retries=2).complete(HELLO)
        requests = len(server.requests)
    assert str(caught.value) == (
        "model openai/test-model: server error: its answer could not be read (IndexError: list "
        "index out of range); not sent again, it may have been paid for"
    )
    assert caught.value.kind is ErrorKind.SERVER
    assert requests == 1


def test_hanging_request_times_out_and_is_retried(server: OpenAIServer) -> None:
    server.queue(Hang(60), Hang(60))
    model = local(server, timeout=1, num_retries=1, retry_backoff=0.1)
    started = time.monotonic()
    with pytest.raises(ModelError, match="Timeout.*gave up after 2 attempts"):
        model.complete(HELLO)
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 40  # two timeouts of 1 s, not a hang of 60 s
    assert len(server.requests) == 2


def test_hang_then_answer_returns_the_answer(server: OpenAIServer) -> None:
    server.queue(Hang(60), Text("awake"))
    started = time.monotonic()
    reply = local(server, timeout=1, num_retries=1).complete(HELLO)
    assert reply.content == "awake"
    assert time.monotonic() - started < 40
    assert len(server.requests) == 2


def test_unpriced_model_costs_nothing_and_says_so(server: OpenAIServer) -> None:
    server.queue(Text())
    model = local(server)
    reply = model.complete(HELLO)
    assert reply.usage.cost_usd == 0.0
    assert reply.usage.unpriced_calls == 1
    assert model.price_per_token() == (0.0, 0.0)
    assert model.context_window == DEFAULT_CONTEXT_WINDOW


def test_priced_model_is_costed_from_litellm_cost_map(server: OpenAIServer) -> None:
    server.queue(Text(prompt_tokens=1000, completion_tokens=200))
    model = local(server, "openai/gpt-4o-mini")
    price_in, price_out = model.price_per_token()
    assert price_in > 0
    assert price_out > 0
    reply = model.complete(HELLO)
    assert reply.usage.unpriced_calls == 0
    assert reply.usage.cost_usd == pytest.approx(1000 * price_in + 200 * price_out)
    assert model.context_window == 128_000


def test_missing_usage_is_counted_offline(server: OpenAIServer) -> None:
    server.queue(Text("a reply of several tokens", usage=False))
    model = local(server, "openai/gpt-4o-mini")
    reply = model.complete(HELLO, [READ_FILE])
    assert reply.usage.prompt_tokens == model.count_tokens(HELLO, [READ_FILE])
    assert reply.usage.completion_tokens > 0
    price_in, price_out = model.price_per_token()
    expected = reply.usage.prompt_tokens * price_in + reply.usage.completion_tokens * price_out
    assert reply.usage.cost_usd == pytest.approx(expected)


def test_fallbacks_pass_through_to_litellm(server: OpenAIServer) -> None:
    server.queue(Status(400, "no such model"), Text("from the fallback"))
    model = local(server, "openai/bad-model", fallbacks=["openai/test-model"])
    reply = model.complete(HELLO)
    assert reply.content == "from the fallback"
    assert [r.body["model"] for r in server.requests] == ["bad-model", "test-model"]


def test_failed_fallback_chain_is_retried_as_a_whole(server: OpenAIServer) -> None:
    server.queue(Status(401), Status(401), Status(401), Status(401))
    model = local(server, "openai/bad-model", fallbacks=["openai/test-model"], num_retries=1)
    with pytest.raises(ModelError, match="gave up after 2 attempts"):
        model.complete(HELLO)
    assert [r.body["model"] for r in server.requests] == ["bad-model", "test-model"] * 2


def test_context_window_override_wins() -> None:
    assert LiteLLMModel("openai/gpt-4o-mini", context_window=4096).context_window == 4096


def test_resolve_model_gives_a_working_litellm_model(server: OpenAIServer) -> None:
    server.queue(Text("resolved"))
    model = resolve_model("openai/test-model", api_base=server.api_base, api_key="sk-test")
    assert isinstance(model, LiteLLMModel)
    assert model.complete(HELLO).content == "resolved"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"timeout": None}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"num_retries": -1}, "num_retries"),
        ({"retry_backoff": -1.0}, "retry_backoff"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"context_window": -5}, "context_window"),
        ({"stream": True}, "stream"),
        ({"max_retries": 4}, "max_retries"),
    ],
)
def test_invalid_settings_are_refused_at_construction(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}:"):
        LiteLLMModel("openai/test-model", **kwargs)


def test_empty_model_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="^model:"):
        LiteLLMModel("  ")


@pytest.mark.parametrize(
    "name", ["openai/m\x00x", "openai/m\nx", "openai/m\x1b[2J", "openai/m\u2028"]
)
def test_a_model_name_holding_a_control_character_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        LiteLLMModel(name)
    assert str(caught.value) == f"model: {name!r} holds a character that is not printable"


def test_a_model_name_of_printable_characters_is_taken() -> None:
    assert (
        LiteLLMModel("openrouter/vendor/model-1.5:free é").name
        == "openrouter/vendor/model-1.5:free é"
    )
