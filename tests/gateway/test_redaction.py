"""Secrets through the gateway, in each wire format, whole and streamed: the request that goes on
to the model holds none of the agent's (messages and tool schemas), and the answer the agent
reads holds none of the model's. (A Responses answer echoes the agent's own instructions and
tools back to it: its own text, never sent on.)"""

from __future__ import annotations

import http.client
import json

import pytest

from harness import ScriptedModel, ToolCall
from harness.core.redact import Redactor
from harness.gateway import Gateway
from harness.models.budget import MeteredModel

TOKEN = "harness-redaction-token"
SENT = "tok-" + "Qx7" * 10
"""A secret in the agent's request, known to the redactor by value (no pattern finds it)."""
SAID = "tok-" + "Rv2" * 10
"""A secret in the model's reply, known to the redactor by value."""


def requests(secret: str) -> dict[str, tuple[str, dict[str, object]]]:
    """A request of each wire holding ``secret`` in its system prompt, the task, a tool's result
    and a tool's description."""
    schema = {"type": "object", "properties": {"cmd": {"type": "string"}}}
    return {
        "chat": ("/v1/chat/completions", {
            "model": "m",
            "messages": [
                {"role": "system", "content": f"key {secret}"},
                {"role": "user", "content": f"use {secret}"},
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "c1", "type": "function",
                    "function": {"name": "sh", "arguments": json.dumps({"cmd": secret})}}]},
                {"role": "tool", "tool_call_id": "c1", "content": f"out {secret}"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "sh", "description": f"run {secret}", "parameters": schema}}],
        }),
        "anthropic": ("/v1/messages", {
            "model": "m", "max_tokens": 100, "system": f"key {secret}",
            "messages": [
                {"role": "user", "content": f"use {secret}"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "sh", "input": {"cmd": secret}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": f"out {secret}"}]},
            ],
            "tools": [{"name": "sh", "description": f"run {secret}", "input_schema": schema}],
        }),
        "responses": ("/v1/responses", {
            "model": "m", "instructions": f"key {secret}", "store": False,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": f"use {secret}"}]},
                {"type": "function_call", "call_id": "c1", "name": "sh",
                 "arguments": json.dumps({"cmd": secret})},
                {"type": "function_call_output", "call_id": "c1", "output": f"out {secret}"},
            ],
            "tools": [{"type": "function", "name": "sh", "description": f"run {secret}",
                       "parameters": schema}],
        }),
    }  # fmt: skip


def replies(secret: str) -> ScriptedModel:
    """Two replies that say ``secret``: in text, and in a tool call's arguments."""
    return ScriptedModel(
        [f"the key is {secret}", ToolCall("sh", {"cmd": f"echo {secret}"}, id="c2")]
    )


def ask(gateway: Gateway, path: str, body: dict[str, object]) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    connection.request("POST", path, json.dumps(body), {"x-api-key": TOKEN})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    assert response.status == 200, text
    return text


def sent(model: ScriptedModel) -> str:
    """All the model was sent: every request's messages and tool schemas."""
    return json.dumps([(call.messages, call.tools) for call in model.calls])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses"])
def test_the_run_s_redactor_holds_both_ways_in_every_wire(wire: str, stream: bool) -> None:
    inner = replies(SAID)
    model = MeteredModel(inner, redact=Redactor(values=[SENT, SAID]).redact_text)
    path, body = requests(SENT)[wire]
    with Gateway(model, token=TOKEN) as gateway:
        answers = [ask(gateway, path, {**body, "stream": stream}) for _ in range(2)]
    assert len(inner.calls) == 2
    assert SENT not in sent(inner)
    assert sent(inner).count("[REDACTED]") == 2 * 5  # the prompt, task, call, result, description
    assert SAID not in "".join(answers)
    assert "the key is [REDACTED]" in answers[0]
    assert "echo [REDACTED]" in answers[1].replace("\\", "")  # arguments are JSON in JSON


@pytest.mark.parametrize("wire", ["chat", "anthropic", "responses"])
def test_a_model_not_yet_metered_is_served_behind_the_environment_s_redactor(
    wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TEST_API_KEY", SENT)
    monkeypatch.setenv("HARNESS_TEST_TOKEN", SAID)
    inner = replies(SAID)
    path, body = requests(SENT)[wire]
    with Gateway(inner, token=TOKEN) as gateway:
        answer = ask(gateway, path, body)
    assert SENT not in sent(inner)
    assert sent(inner).count("[REDACTED]") == 5
    assert SAID not in answer
    assert "the key is [REDACTED]" in answer
