"""Prompt caching through litellm's real HTTP path: Claude requests carry cache breakpoints on
the stable prefix, cached tokens the server reports are counted and priced lower."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agent.agent import Agent, AgentStop
from harness.models.budget import Meter, MeteredModel
from harness.models.litellm_model import LiteLLMModel
from tests.anthropic_server import AnthropicServer
from tests.openai_server import OpenAIServer, Text, ToolCalls

MODEL = "anthropic/claude-sonnet-4-5"  # $3 / M prompt, $0.30 / M cached, $15 / M completion


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    with AnthropicServer(deadline=60) as running:
        yield running


def _marked(blocks: Any) -> list[str]:
    """The text (or type) of every content block carrying an ephemeral cache_control."""
    if not isinstance(blocks, list):
        return []
    return [
        block.get("text") or block["type"]
        for block in blocks
        if block.get("cache_control") == {"type": "ephemeral"}
    ]


def _session(server: AnthropicServer, workspace: Path, *, cached: int, **options: Any) -> Meter:
    (workspace / "notes.txt").write_text("42\n")
    read = json.dumps({"path": "notes.txt"})
    server.queue(
        ToolCalls((("toolu_1", "read_file", read),), prompt_tokens=3000, completion_tokens=20),
        Text("It says 42.", prompt_tokens=3100, completion_tokens=10, cached_tokens=cached),
    )
    model = LiteLLMModel(MODEL, api_base=server.api_base, api_key="sk-ant-test", **options)
    meter = Meter()
    run = Agent(MeteredModel(model, meter), max_steps=4).run("What do the notes say?", workspace)
    assert run.stop_reason is AgentStop.ANSWERED
    return meter


def test_claude_requests_mark_the_system_prompt_and_the_last_message_for_caching(
    anthropic: AnthropicServer, tmp_path: Path
) -> None:
    _session(anthropic, tmp_path, cached=0)
    first, second = (r.body for r in anthropic.requests)
    assert len(_marked(first["system"])) == 1  # the system prompt, after the tool schemas
    assert _marked(first["messages"][-1]["content"]) == ["What do the notes say?"]
    assert len(_marked(second["system"])) == 1
    assert _marked(second["messages"][-1]["content"]) == ["tool_result"]
    marks = sum(len(_marked(m["content"])) for m in second["messages"])
    assert marks == 1  # breakpoints do not pile up: Anthropic accepts at most 4
    assert "cache_control_injection_points" not in second


def test_cached_tokens_are_counted_and_lower_the_cost(
    anthropic: AnthropicServer, tmp_path: Path
) -> None:
    cached = _session(anthropic, tmp_path, cached=3000).usage
    anthropic.requests.clear()
    uncached = _session(anthropic, tmp_path, cached=0).usage
    assert (cached.cached_tokens, uncached.cached_tokens) == (3000, 0)
    assert cached.prompt_tokens == uncached.prompt_tokens == 6100
    saving = 3000 * (3e-6 - 0.3e-6)
    assert uncached.cost_usd - cached.cost_usd == pytest.approx(saving)


def test_caching_can_be_turned_off_and_other_providers_get_no_breakpoints(
    anthropic: AnthropicServer, tmp_path: Path
) -> None:
    _session(anthropic, tmp_path, cached=0, prompt_caching=False)
    assert all(not _marked(r.body["system"]) for r in anthropic.requests)
    with OpenAIServer(deadline=30) as openai:
        openai.queue(Text("hi", cached_tokens=5))
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=openai.api_base, api_key="sk-test")
        reply = model.complete(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        )
        assert "cache_control" not in json.dumps(openai.requests[0].body)
    assert reply.usage.cached_tokens == 5
