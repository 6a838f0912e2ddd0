"""litellm's translation as the Anthropic and Responses wires use it, on the shapes Claude Code and
Codex send: to chat-completions form and back, whole and streamed."""

from __future__ import annotations

import json

import pytest

from harness.core.usage import Usage
from harness.gateway.anthropic import AnthropicWire
from harness.gateway.responses import ResponsesWire
from harness.gateway.wire import BadRequest
from harness.models.base import Reply, ToolCall

MAX_NAME = 64  # the longest tool name OpenAI takes
LONG = "mcp__issue_tracker_of_the_whole_organisation__search_every_open_issue_by_label"
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
CLAUDE_CODE = {
    "model": "claude-sonnet-4",
    "max_tokens": 32000,
    "stream": True,
    "thinking": {"type": "adaptive"},
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2"},
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
    ],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<reminder>"}, {"type": "text", "text": "fix it"}]},
        {"role": "system", "content": [{"type": "text", "text": "# Environment"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.png"}},
                {"type": "tool_use", "id": "toolu_2", "name": LONG, "input": {"q": "bug"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                 "content": [{"type": "text", "text": "an image"}, {"type": "image", "source": PNG}]},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "none",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "go on"},
            ],
        },
    ],
    "tools": [
        {"name": "Read", "description": "Read a file", "input_schema": SCHEMA},
        {"name": LONG, "input_schema": SCHEMA, "defer_loading": True},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    ],
}  # fmt: skip


def events(stream: bytes) -> list[tuple[str, dict[str, object]]]:
    found = []
    for block in stream.decode().strip().split("\n\n"):
        event, data = block.split("\n")
        found.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return found


def test_claude_code_s_request_reaches_the_model_in_chat_form() -> None:
    request = AnthropicWire().parse(CLAUDE_CODE)
    short = next(name for name, given in request.names.items() if given == LONG)
    assert len(short) == MAX_NAME
    assert short != LONG[:MAX_NAME]
    note = "Operator note (not from the user): the following was originally a mid-conversation system-role reminder."
    assert request.messages == [  # the system blocks as parts; a system turn inside the conversation a user's
        {"role": "system", "content": CLAUDE_CODE["system"]},
        {"role": "user", "content": [{"type": "text", "text": "<reminder>"}, {"type": "text", "text": "fix it"}]},
        {"role": "user", "content": [{"type": "text", "text": note}, {"type": "text", "text": "# Environment"}]},
        {"role": "assistant", "content": "Looking.", "reasoning_content": "hmm",
         "thinking_blocks": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}],
         "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "Read", "arguments": '{"path": "a.png"}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": short, "arguments": '{"q": "bug"}'}},
        ]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": [  # the image stays in the tool's result
            {"type": "text", "text": "an image"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "none", "cache_control": {"type": "ephemeral"}},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
    ]  # fmt: skip
    assert request.tools == [  # the server tool (web search) not offered
        {"type": "function", "function": {"name": "Read", "parameters": SCHEMA, "description": "Read a file"}},
        {"type": "function", "function": {"name": short, "parameters": {**SCHEMA, "defer_loading": True}}},
    ]  # fmt: skip
    assert (request.stream, request.max_tokens, request.model) == (True, 32000, "claude-sonnet-4")


def test_an_anthropic_answer_names_the_client_s_tools_whole_and_streamed() -> None:
    wire = AnthropicWire()
    request = wire.parse(CLAUDE_CODE)
    short = next(iter(request.names))
    reply = Reply("Done.", (ToolCall(short, '{"q": "x"}', id="call_1"),), Usage(120, 9))
    answer = wire.answer(request, reply)
    assert answer["content"] == [
        {"type": "text", "text": "Done."},
        {"type": "tool_use", "id": "call_1", "name": LONG, "input": {"q": "x"}},
    ]
    assert (answer["stop_reason"], answer["usage"]) == (
        "tool_use", {"input_tokens": 120, "output_tokens": 9},
    )  # fmt: skip
    found = events(b"".join(wire.stream(request, reply)))
    assert all(name == data["type"] for name, data in found)
    assert [(name, data.get("index")) for name, data in found] == [
        ("message_start", None),
        ("content_block_start", 0), ("content_block_delta", 0), ("content_block_stop", 0),
        ("content_block_start", 1), ("content_block_delta", 1), ("content_block_stop", 1),
        ("message_delta", None), ("message_stop", None),
    ]  # fmt: skip
    assert found[4][1]["content_block"] == {
        "type": "tool_use",
        "id": "call_1",
        "name": LONG,
        "input": {},
    }
    assert found[5][1]["delta"] == {"type": "input_json_delta", "partial_json": '{"q": "x"}'}
    assert found[7][1] == {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"input_tokens": 120, "output_tokens": 9},
    }
    assert found[-1][1] == {
        "type": "message_stop",
        "usage": {"input_tokens": 120, "output_tokens": 9},
    }
    bare = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read"}]}
    (message,) = wire.parse({"model": "m", "messages": [bare]}).messages  # a call without input
    assert message["tool_calls"][0]["function"]["arguments"] == "{}"
    empty = wire.answer(request, Reply(None))
    assert (empty["content"], empty["stop_reason"]) == ([], "end_turn")
    cached = wire.answer(request, Reply("x", (), Usage(200, 30, cached_tokens=50)))["usage"]
    assert cached == {"input_tokens": 150, "output_tokens": 30, "cache_read_input_tokens": 50}


def test_a_request_its_wire_cannot_read_is_refused_naming_the_field() -> None:
    untyped = [{"role": "user", "content": [{"text": "x"}]}]  # litellm reads no message of these
    for messages in (untyped, [{"role": "tool", "content": "x"}]):
        with pytest.raises(BadRequest, match=r"^messages: no message could be read"):
            AnthropicWire().parse({"model": "m", "max_tokens": 9, "messages": messages})
    with pytest.raises(BadRequest, match=r"^messages: cannot be read as Anthropic messages: "):
        AnthropicWire().parse({"model": "m", "max_tokens": 9, "messages": ["x"]})
    with pytest.raises(BadRequest, match=r"^input: no message could be read"):
        ResponsesWire().parse({"input": [{"type": "nope"}]})
    with pytest.raises(BadRequest, match=r"^input: cannot be read as a Responses input: "):
        ResponsesWire().parse({"input": ["x"]})
    read = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}]}
    assert AnthropicWire().parse(read).messages == [{"role": "user", "content": "x"}]


CODEX = {
    "model": "gpt-5-codex",
    "instructions": "You are Codex.",
    "store": False,
    "stream": True,
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "perms"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "calc.py"},
        {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done!"},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "later"}]},
    ],
    "tools": [
        {"type": "function", "name": "exec_command", "description": "Run", "parameters": SCHEMA},
        {"type": "custom", "name": "apply_patch", "description": "Patch files.",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: hunk+"}},
        {"type": "web_search"},
    ],
}  # fmt: skip


def test_codex_s_request_reaches_the_model_in_chat_form() -> None:
    request = ResponsesWire().parse(CODEX)

    def text(value: str) -> list[dict[str, str]]:
        return [{"type": "text", "text": value}]

    assert request.messages == [  # developer messages stay so (litellm maps them per provider)
        {"role": "system", "content": "You are Codex."},
        {"role": "developer", "content": text("perms")},
        {"role": "user", "content": text("fix it")},
        {"role": "assistant", "content": text("Looking."), "tool_calls": [
            {"id": "call_1", "type": "function", "index": 0,
             "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "calc.py"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function", "index": 0,
             "function": {"name": "apply_patch", "arguments": '{"content": "*** Begin Patch"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_2", "content": "Done!"},
        {"role": "developer", "content": text("later")},
    ]  # fmt: skip
    assert request.tools is not None
    assert [tool["function"]["name"] for tool in request.tools] == ["exec_command", "apply_patch"]
    patch = request.tools[1]["function"]
    assert patch["description"] == "Patch files.\n\nFormat:\n```lark\nstart: hunk+\n```"
    assert patch["parameters"]["required"] == ["content"]
    assert ResponsesWire().parse({"input": "hi"}).messages == [{"role": "user", "content": "hi"}]
    given = [  # arguments given as an object, or not at all
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": {"x": 1}},
        {"type": "function_call", "call_id": "c2", "name": "g"},
    ]
    (message,) = ResponsesWire().parse({"input": given}).messages
    assert [call["function"]["arguments"] for call in message["tool_calls"]] == ['{"x": 1}', ""]


def test_a_responses_answer_holds_custom_and_function_calls_whole_and_streamed() -> None:
    wire = ResponsesWire()
    request = wire.parse(CODEX)
    patch = ToolCall("apply_patch", json.dumps({"content": "*** Begin Patch\n"}), id="call_3")
    shell = ToolCall("exec_command", '{"cmd": "pytest"}', id="call_4")
    reply = Reply("Patching.", (patch, shell), Usage(200, 30, cached_tokens=50))
    answer = wire.answer(request, reply)
    output = answer["output"]
    assert [item["type"] for item in output] == ["message", "custom_tool_call", "function_call"]
    assert output[0]["content"] == [{"type": "output_text", "text": "Patching.", "annotations": []}]
    assert {k: output[1][k] for k in ("call_id", "name", "input")} == {
        "call_id": "call_3", "name": "apply_patch", "input": "*** Begin Patch\n",
    }  # fmt: skip
    assert output[2]["arguments"] == '{"cmd": "pytest"}'
    assert answer["usage"]["input_tokens_details"]["cached_tokens"] == 50
    assert answer["usage"]["total_tokens"] == 230
    found = events(b"".join(wire.stream(request, reply)))
    assert [data["sequence_number"] for _, data in found] == list(range(len(found)))
    names = [name for name, _ in found]
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    assert names[2:-1] == [
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
    ]  # fmt: skip
    assert found[9][1]["delta"] == "*** Begin Patch\n"
    completed = found[-1][1]["response"]
    assert isinstance(completed, dict)
    assert completed["output"] == [
        data["item"] for name, data in found if name == "response.output_item.done"
    ]
    assert completed["id"] == found[0][1]["response"]["id"]  # type: ignore[index]
