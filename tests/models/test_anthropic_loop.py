"""A whole outer loop through litellm's real ``anthropic/`` provider, against the local
Anthropic-compatible ``/v1/messages`` server: two rounds, a gate and a critic, every request
marked for prompt caching, and the cached tokens the server reports counted and priced lower."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Agent, Critic, LiteLLMModel, OuterLoop, PredicateGate, StopReason
from tests.anthropic_server import AnthropicServer
from tests.openai_server import Text, ToolCalls

MODEL = "anthropic/claude-sonnet-4-5"
PRICE_IN, PRICE_CACHED, PRICE_OUT = 3e-6, 0.3e-6, 15e-6  # litellm's bundled prices, per token


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with AnthropicServer(deadline=120) as running:
        yield running


def _write(call_id: str, text: str, *, prompt: int, cached: int) -> ToolCalls:
    arguments = json.dumps({"path": "out.txt", "content": text})
    return ToolCalls(
        ((call_id, "write_file", arguments),),
        prompt_tokens=prompt, completion_tokens=30, cached_tokens=cached,
    )  # fmt: skip


def _marked(blocks: Any) -> int:
    """How many content blocks carry an ephemeral cache_control."""
    if not isinstance(blocks, list):
        return 0
    return sum(block.get("cache_control") == {"type": "ephemeral"} for block in blocks)


def test_a_whole_loop_runs_through_an_anthropic_server_with_its_prefix_cached(
    server: AnthropicServer, tmp_path: Path
) -> None:
    verdict = json.dumps({"reasons": ["says yes"], "fixes": [], "score": 9})
    script = [  # (behaviour, cached tokens it reports)
        _write("toolu_1", "no\n", prompt=1500, cached=0),  # round 1: a wrong answer
        Text("Wrote no.", prompt_tokens=1600, completion_tokens=10, cached_tokens=1400),
        _write("toolu_2", "yes\n", prompt=1700, cached=1400),  # round 2: the gate's feedback
        Text("Wrote yes.", prompt_tokens=1800, completion_tokens=10, cached_tokens=1600),
        ToolCalls((("toolu_v", "verdict", verdict),), prompt_tokens=900, completion_tokens=40),
    ]
    server.queue(*script)
    options = {"api_base": server.api_base, "api_key": "sk-ant-test", "num_retries": 0}
    gate = PredicateGate(lambda ws: (ws / "out.txt").read_text() == "yes\n", name="says yes")
    result = OuterLoop(
        "out.txt must say yes",
        Agent(LiteLLMModel(MODEL, **options), max_steps=5),
        gates=[gate],
        critic=Critic(LiteLLMModel(MODEL, **options)),
        workspace=tmp_path,
        isolation="none",
        max_iterations=3,
    ).run()

    assert result.stop_reason is StopReason.PASSED, result.message
    assert [r.passed for r in result.rounds] == [False, True]
    assert (tmp_path / "out.txt").read_text() == "yes\n"
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 5
    assert all(r.path == "/v1/messages" for r in server.requests)
    for body in bodies[:4]:  # the author's: system prompt and the last message marked
        assert _marked(body["system"]) == 1
        assert _marked(body["messages"][-1]["content"]) == 1
        assert sum(_marked(m["content"]) for m in body["messages"]) == 1
        assert {tool["name"] for tool in body["tools"]} >= {"write_file", "submit"}
    assert "says yes" in json.dumps(bodies[2]["messages"][0])  # the failed gate fed back
    # The stable prefix: round 2 starts with the same system prompt and tools as round 1.
    assert bodies[2]["system"] == bodies[0]["system"]
    assert bodies[2]["tools"] == bodies[0]["tools"]

    usage = result.usage
    prompt = sum(entry.prompt_tokens for entry in script)
    cached = sum(entry.cached_tokens for entry in script)
    completion = sum(entry.completion_tokens for entry in script)
    assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (
        prompt, cached, completion,
    )  # fmt: skip
    uncached_cost = prompt * PRICE_IN + completion * PRICE_OUT
    expected = uncached_cost - cached * (PRICE_IN - PRICE_CACHED)
    assert usage.cost_usd == pytest.approx(expected)
    assert usage.cost_usd < uncached_cost * 0.6  # the cache paid for most of the prompt
