"""Anthropic Messages and OpenAI Responses through the gateway, read by real clients' rules:
translated by litellm's own code both ways, whole and streamed."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from harness import ScriptedModel, ToolCall
from harness.gateway import Gateway

TOKEN = "harness-wire-token"
ANTHROPIC = {
    "model": "claude-sonnet-4",
    "max_tokens": 300,
    "system": "You fix bugs.",
    "messages": [
        {"role": "user", "content": "fix calc.py"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "calc.py"}],
        },
    ],
    "tools": [
        {
            "name": "bash",
            "description": "Run a command",
            "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        }
    ],
}
RESPONSES = {
    "model": "gpt-5-codex",
    "instructions": "You fix bugs.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "fix calc.py"}]},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "shell",
            "arguments": '{"cmd":"ls"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "calc.py"},
    ],
    "tools": [
        {
            "type": "function",
            "name": "shell",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
            "strict": False,
        }
    ],
    "store": False,
    "max_output_tokens": 300,
}
EDIT = ToolCall("bash", {"cmd": "sed -i s/-/+/ calc.py"}, id="call_9")


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel([EDIT, "fixed it", EDIT, "fixed it"])


@pytest.fixture
def gateway(model: ScriptedModel) -> Iterator[Gateway]:
    with Gateway(model, token=TOKEN) as served:
        yield served


def post(gateway: Gateway, path: str, body: object) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    connection.request("POST", path, json.dumps(body), {"x-api-key": TOKEN})
    response = connection.getresponse()
    return response.status, response.read().decode()


def events(text: str) -> list[tuple[str, dict[str, object]]]:
    found = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_anthropic_messages_reach_the_model_in_chat_form_and_come_back_anthropic(
    gateway: Gateway, model: ScriptedModel
) -> None:
    status, text = post(gateway, "/v1/messages?beta=true", ANTHROPIC)
    assert status == 200
    answer = json.loads(text)
    assert answer["type"] == "message"
    assert answer["model"] == "claude-sonnet-4"
    assert answer["stop_reason"] == "tool_use"
    assert answer["content"] == [
        {
            "type": "tool_use",
            "id": "call_9",
            "name": "bash",
            "input": {"cmd": "sed -i s/-/+/ calc.py"},
        }
    ]
    assert answer["usage"]["input_tokens"] > 0
    (call,) = model.calls
    assert call.messages[0] == {"role": "system", "content": "You fix bugs."}
    assert call.messages[2]["tool_calls"][0]["function"] == {
        "name": "bash",
        "arguments": '{"cmd": "ls"}',
    }
    assert call.messages[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "calc.py"}
    assert call.tools is not None
    assert call.tools[0]["function"]["name"] == "bash"
    status, text = post(gateway, "/v1/messages", ANTHROPIC)
    assert json.loads(text)["content"] == [{"type": "text", "text": "fixed it"}]
    assert json.loads(text)["stop_reason"] == "end_turn"


def test_anthropic_messages_stream_as_its_events(gateway: Gateway) -> None:
    status, text = post(gateway, "/v1/messages", {**ANTHROPIC, "stream": True})
    assert status == 200
    found = events(text)
    names = [name for name, _ in found]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in found)
    deltas = [data["delta"] for name, data in found if name == "content_block_delta"]
    assert {
        "type": "input_json_delta",
        "partial_json": '{"cmd": "sed -i s/-/+/ calc.py"}',
    } in deltas
    assert found[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_anthropic_count_tokens_counts_without_a_model_request(
    gateway: Gateway, model: ScriptedModel
) -> None:
    status, text = post(gateway, "/v1/messages/count_tokens", ANTHROPIC)
    assert status == 200
    assert json.loads(text)["input_tokens"] > 20
    assert model.calls == []
    assert gateway.requests == 0


def test_anthropic_errors_are_in_anthropic_form(gateway: Gateway) -> None:
    status, text = post(gateway, "/v1/messages", {"model": "m", "max_tokens": 10})
    assert status == 400
    assert json.loads(text) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "messages: must be a non-empty list"},
    }


def test_openai_responses_are_read_by_the_openai_client_whole_and_streamed(
    gateway: Gateway, model: ScriptedModel
) -> None:
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{gateway.port}/v1", api_key=TOKEN)
    body = {key: value for key, value in RESPONSES.items() if key != "model"}
    response = client.responses.create(model="gpt-5-codex", **body)  # type: ignore[call-overload]
    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_9", "bash", '{"cmd": "sed -i s/-/+/ calc.py"}')
    ]
    (call,) = model.calls
    assert call.messages[0] == {"role": "system", "content": "You fix bugs."}
    assert call.messages[-1] == {"role": "tool", "content": "calc.py", "tool_call_id": "call_1"}
    stream = client.responses.create(model="gpt-5-codex", stream=True, **body)  # type: ignore[call-overload]
    kinds = [event.type for event in stream]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    streamed = client.responses.create(model="gpt-5-codex", stream=True, **body)  # type: ignore[call-overload]
    completed = [event for event in streamed if event.type == "response.completed"]
    assert [item.type for item in completed[0].response.output] == ["function_call"]


def test_a_previous_response_id_is_refused_naming_it(gateway: Gateway) -> None:
    status, text = post(gateway, "/v1/responses", {**RESPONSES, "previous_response_id": "resp_1"})
    assert status == 400
    assert json.loads(text)["error"]["message"].startswith("previous_response_id: ")


def test_chat_completions_stream_is_read_by_the_openai_client(gateway: Gateway) -> None:
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{gateway.port}/v1", api_key=TOKEN)
    stream = client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": "go"}], stream=True
    )
    chunks = list(stream)
    calls = chunks[1].choices[0].delta.tool_calls
    assert calls is not None
    assert calls[0].function is not None
    assert calls[0].function.name == "bash"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
