"""Cost accounting never ends a run: whole agent sessions through litellm's real HTTP path.

An Anthropic-compatible ``/v1/messages`` server and an OpenAI-compatible one on 127.0.0.1
answer a tool call, then a final answer; the session completes whether litellm prices the model
or not, and unpriced calls are counted as such.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent.agent import Agent, AgentRun, AgentStop
from harness.models.budget import Budget, Meter, MeteredModel
from harness.models.litellm_model import LiteLLMModel
from harness.models.pricing import cost_budget_warning, is_priced
from harness.models.scripted import ScriptedModel
from tests.anthropic_server import AnthropicServer
from tests.openai_server import OpenAIServer, Text, ToolCalls

PRICED = "anthropic/claude-sonnet-4-5"
UNPRICED = "anthropic/claude-3-5-sonnet-latest"  # litellm's map no longer knows it


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    with AnthropicServer(deadline=60) as running:
        yield running


@pytest.fixture
def openai() -> Iterator[OpenAIServer]:
    with OpenAIServer(deadline=60) as running:
        yield running


def _session(server: OpenAIServer, model: LiteLLMModel, workspace: Path) -> tuple[Meter, AgentRun]:
    (workspace / "notes.txt").write_text("the answer is 42\n")
    server.queue(
        ToolCalls((("toolu_1", "read_file", json.dumps({"path": "notes.txt"})),),
                  prompt_tokens=1000, completion_tokens=20),
        Text("The notes say 42.", prompt_tokens=1100, completion_tokens=10),
    )  # fmt: skip
    meter = Meter(Budget(tokens=100_000))
    run = Agent(MeteredModel(model, meter), max_steps=5).run("What do the notes say?", workspace)
    return meter, run


def test_a_priced_anthropic_model_completes_a_session_at_litellms_price(
    anthropic: AnthropicServer, tmp_path: Path
) -> None:
    model = LiteLLMModel(PRICED, api_base=anthropic.api_base, api_key="sk-ant-test")
    meter, run = _session(anthropic, model, tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED
    assert run.final == "The notes say 42."
    assert [r.path for r in anthropic.requests] == ["/v1/messages", "/v1/messages"]
    tool_result = anthropic.requests[1].body["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["tool_use_id"] == "toolu_1"
    assert "the answer is 42" in json.dumps(tool_result["content"])
    usage = meter.usage
    assert (usage.calls, usage.unpriced_calls) == (2, 0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (2100, 30)
    # $3 per million prompt tokens, $15 per million completion tokens
    assert usage.cost_usd == pytest.approx(2100 * 3e-6 + 30 * 15e-6)
    assert model.pricing_error is None


def test_an_unpriced_anthropic_model_completes_a_session_with_its_calls_counted_unpriced(
    anthropic: AnthropicServer, tmp_path: Path
) -> None:
    model = LiteLLMModel(UNPRICED, api_base=anthropic.api_base, api_key="sk-ant-test")
    meter, run = _session(anthropic, model, tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED
    assert run.final == "The notes say 42."
    assert len(anthropic.requests) == 2
    assert anthropic.requests[0].body["model"] == "claude-3-5-sonnet-latest"
    usage = meter.usage
    assert (usage.calls, usage.unpriced_calls, usage.cost_usd) == (2, 2, 0.0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (2100, 30)
    assert model.pricing_error is not None
    assert model.price_per_token() == (0.0, 0.0)


def test_an_openai_compatible_model_litellm_does_not_know_completes_a_session(
    openai: OpenAIServer, tmp_path: Path
) -> None:
    model = LiteLLMModel("openai/my-finetune-v3", api_base=openai.api_base, api_key="sk-test")
    meter, run = _session(openai, model, tmp_path)
    assert run.stop_reason is AgentStop.ANSWERED
    assert run.final == "The notes say 42."
    assert [r.body["model"] for r in openai.requests] == ["my-finetune-v3"] * 2
    usage = meter.usage
    assert (usage.calls, usage.unpriced_calls, usage.cost_usd) == (2, 2, 0.0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (2100, 30)


def test_a_reply_without_usage_is_counted_offline_and_priced_by_the_given_name(
    openai: OpenAIServer,
) -> None:
    openai.queue(Text("hello", usage=False))
    model = LiteLLMModel("openai/gpt-4o-mini", api_base=openai.api_base, api_key="sk-test")
    reply = model.complete([{"role": "user", "content": "hi"}])
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.completion_tokens > 0
    assert reply.usage.unpriced_calls == 0
    expected = reply.usage.prompt_tokens * 1.5e-7 + reply.usage.completion_tokens * 6e-7
    assert reply.usage.cost_usd == pytest.approx(expected)


def test_a_cost_budget_over_unpriced_models_is_named_as_not_enforceable() -> None:
    unpriced = LiteLLMModel(UNPRICED)
    priced = LiteLLMModel(PRICED)
    warning = cost_budget_warning(Budget(cost_usd=1.0), [priced, unpriced, unpriced])
    assert warning is not None
    assert UNPRICED in warning
    assert PRICED not in warning
    assert "budget.cost_usd" in warning
    assert "budget.tokens" in warning  # what to use instead
    assert cost_budget_warning(Budget(cost_usd=1.0), [priced]) is None
    assert cost_budget_warning(Budget(tokens=1000), [unpriced]) is None
    assert cost_budget_warning(Budget(), [unpriced]) is None
    free = ScriptedModel(["done"])
    assert "scripted" in (cost_budget_warning(Budget(cost_usd=1.0), [free]) or "")


DOCS = ("README.md", "examples/README.md", "docs/models.md", "docs/cli.md")
_HOSTED = re.compile(r"(?<![\w/.-])((?:anthropic|gemini)/[\w.-]+|gpt-[\w.-]+)")


def test_every_hosted_model_string_in_the_docs_is_priced_by_the_installed_litellm() -> None:
    root = Path(__file__).resolve().parents[2]
    names = {m for doc in DOCS for m in _HOSTED.findall((root / doc).read_text())}
    assert {"gpt-4o-mini", "anthropic/claude-sonnet-4-5"} <= names
    unpriced = sorted(name for name in names if not is_priced(LiteLLMModel(name)))
    assert unpriced == []
