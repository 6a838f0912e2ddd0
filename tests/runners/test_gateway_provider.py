"""A program driven through the gateway by litellm's real HTTP path to a local provider: the
provider hears only the gateway, with the provider's key; the session's token never leaves."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import LiteLLMModel, OuterLoop, PytestGate, StopReason
from harness.runners.command import CommandRunner
from harness.sandbox.bwrap import bwrap_problem
from tests.conftest import make_repo
from tests.openai_server import OpenAIServer, Text, ToolCalls

pytestmark = pytest.mark.slow

AGENT = Path(__file__).with_name("chat_agent.py")
KEY = "sk-provider-" + "Q7x" * 10
BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX = '{"path": "calc.py", "content": "def add(a, b):\\n    return a + b\\n"}'


@pytest.mark.skipif(bwrap_problem() is not None, reason="needs the bwrap sandbox")
def test_the_provider_hears_only_the_gateway_with_the_provider_s_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    repo = make_repo(tmp_path / "repo", {"calc.py": BUGGY, "tests/test_calc.py": TESTS})
    with OpenAIServer() as provider:
        provider.queue(ToolCalls((("call_1", "write_file", FIX),)), Text("fixed"))
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=provider.api_base, num_retries=0)
        runner = CommandRunner(model, [sys.executable, str(AGENT)])
        result = OuterLoop(
            "make the tests pass", runner, gates=[PytestGate("tests")], workspace=repo
        ).run()
    assert result.stop_reason is StopReason.PASSED, result.message
    assert len(provider.requests) == 2
    for request in provider.requests:  # the gateway's own requests, with the provider's key
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert "harness-" not in request.raw.decode()  # the session's token never leaves
    first = provider.requests[0].body["messages"]
    assert first[0]["role"] == "user"
    assert "# Goal\nmake the tests pass" in first[0]["content"]
    assert provider.requests[1].body["messages"][-1]["role"] == "tool"
    assert (result.usage.calls, result.usage.prompt_tokens) == (2, 20 + 11)  # as the provider said
