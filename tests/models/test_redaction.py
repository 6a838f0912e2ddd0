"""Every request to a model is redacted at the one door it leaves by, each message once."""

from __future__ import annotations

import json
import operator
from pathlib import Path

import pytest

from harness import Agent, Critic, ScriptedModel, ToolCall
from harness.core.redact import Redactor
from harness.models.base import Message
from harness.models.budget import MeteredModel
from harness.models.redaction import RequestRedactor

SECRET = "canary-" + "5Jq8Xw2Lm7Rt"  # the value of a secret-named variable
QUOTED = 'pass"word\\canary-77'  # a marked value that JSON escapes


class Counting:
    """A redactor that counts the texts it is asked to redact."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._redactor = Redactor(
            env={"CANARY_API_KEY": SECRET, "PLAIN": QUOTED}, secret_env=["PLAIN"]
        )

    def __call__(self, text: str) -> str:
        self.texts.append(text)
        return self._redactor.redact_text(text)


def _call(arguments: str) -> dict[str, object]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": "run_shell", "arguments": arguments},
    }


def test_every_text_a_model_reads_is_redacted_and_nothing_else_changes() -> None:
    messages: list[Message] = [
        {"role": "system", "content": f"key {SECRET}"},
        {"role": "user", "content": [{"type": "text", "text": f"task {SECRET}"}, {"type": "x"}]},
        {"role": "assistant", "content": None, "tool_calls": [_call(json.dumps({"command": f"echo {SECRET}"}))]},
        {"role": "tool", "tool_call_id": "c1", "content": f"out {SECRET}"},
        {"role": "assistant", "content": "", "tool_calls": [_call(f'{{"command": "echo {SECRET}')]},
    ]  # fmt: skip
    before = json.dumps(messages)

    sent = RequestRedactor(Counting()).redact(messages)

    assert sent == [
        {"role": "system", "content": "key [REDACTED]"},
        {"role": "user", "content": [{"type": "text", "text": "task [REDACTED]"}, {"type": "x"}]},
        {"role": "assistant", "content": None, "tool_calls": [_call('{"command": "echo [REDACTED]"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "out [REDACTED]"},
        {"role": "assistant", "content": "", "tool_calls": [_call('{"command": "echo [REDACTED]')]},
    ]  # fmt: skip
    assert json.dumps(messages) == before  # the session's own history is not changed


def test_a_secret_escaped_inside_tool_call_arguments_is_found_by_its_value() -> None:
    arguments = json.dumps({"command": f"login {QUOTED}"})
    assert QUOTED not in arguments  # only its escaped spelling is in the JSON text

    (sent,) = RequestRedactor(Counting()).redact(
        [{"role": "assistant", "content": None, "tool_calls": [_call(arguments)]}]
    )

    assert json.loads(sent["tool_calls"][0]["function"]["arguments"]) == {
        "command": "login [REDACTED]"
    }


def test_a_growing_history_is_redacted_one_new_message_at_a_time() -> None:
    redact = Counting()
    requests = RequestRedactor(redact)
    history: list[Message] = [{"role": "system", "content": "rules"}]
    sent: list[list[Message]] = []
    for step in range(50):
        history.append({"role": "tool", "tool_call_id": f"c{step}", "content": f"{step} {SECRET}"})
        sent.append(requests.redact(history))

    # each message's strings once (its role, call id and content), not once per request
    assert len(redact.texts) == 2 + 3 * 50
    assert sent[-1][0] is history[0]  # nothing to redact: the very same object is sent
    assert all(a is b for a, b in zip(sent[-2], sent[-1], strict=False))  # same redacted objects
    assert SECRET not in json.dumps(sent[-1])


def test_a_message_changed_in_place_or_dropped_and_resent_is_redacted_again() -> None:
    redact = Counting()
    requests = RequestRedactor(redact)
    message: Message = {"role": "user", "content": "clean"}
    other: Message = {"role": "user", "content": "other"}
    requests.redact([message])
    message["content"] = f"now {SECRET}"

    assert requests.redact([message]) == [{"role": "user", "content": "now [REDACTED]"}]
    requests.redact([other])  # only the latest request's messages are remembered
    requests.redact([message])
    contents = [text for text in redact.texts if text != "user"]  # each role is redacted too
    assert contents == ["clean", f"now {SECRET}", "other", f"now {SECRET}"]


def test_a_history_decoded_anew_has_its_arguments_looked_up_not_parsed_again() -> None:
    """The gateway decodes each request's history anew: new objects, the same texts."""
    redact = Counting()
    requests = RequestRedactor(redact)
    said = {"command": f"echo {SECRET}", "then": "ls"}

    def history() -> list[Message]:
        return json.loads(json.dumps([
            {"role": "assistant", "content": None, "tool_calls": [_call(json.dumps(said))]},
            {"role": "tool", "tool_call_id": "c1", "content": "clean output"},
        ]))  # fmt: skip

    first = requests.redact(history())
    walked = list(redact.texts)
    again = history()
    second = requests.redact(again)

    expected = json.dumps({"command": "echo [REDACTED]", "then": "ls"})
    assert first == second
    assert second[0]["tool_calls"] == [_call(expected)]
    arguments = ["command", f"echo {SECRET}", "then", "ls"]
    assert [walked.count(text) for text in arguments] == [1] * 4
    assert {"run_shell", "c1", "clean output"} <= set(walked)  # every field is redacted
    # the messages' other fields again (the run's redactor looks them up); the arguments are
    # looked up here, not parsed again
    assert not set(arguments) & set(redact.texts[len(walked) :])
    assert "clean output" in redact.texts[len(walked) :]
    assert second[1] is again[1]  # nothing to redact: the very same message


def test_a_secret_in_a_tool_calls_id_or_name_or_odd_arguments_alone_is_found() -> None:
    """Each field of a call on its own: clean arguments do not let the call through as it was."""
    clean = json.dumps({"command": "ls"})

    def call(call_id: str = "c1", name: str = "run_shell", arguments: object = clean) -> object:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    said = [
        {"role": "assistant", "content": None, "tool_calls": [call(call_id=f"c-{SECRET}")]},
        {"role": "assistant", "content": None, "tool_calls": [call(name=f"run_{SECRET}")]},
        {"role": "assistant", "content": None, "tool_calls": [call(arguments={"c": SECRET})]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c9", "function": SECRET}]},
    ]

    sent = RequestRedactor(Counting()).redact(json.loads(json.dumps(said)))

    assert sent == [
        {"role": "assistant", "content": None, "tool_calls": [call(call_id="c-[REDACTED]")]},
        {"role": "assistant", "content": None, "tool_calls": [call(name="run_[REDACTED]")]},
        {"role": "assistant", "content": None, "tool_calls": [call(arguments={"c": "[REDACTED]"})]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c9", "function": "[REDACTED]"}],
        },
    ]
    assert SECRET not in json.dumps(sent)


def test_what_holds_no_secret_is_passed_on_as_the_very_same_objects() -> None:
    """Numbers, flags and a clean call are kept exactly, and nothing clean is made anew."""
    messages: list[Message] = [
        {"role": "assistant", "content": None, "tool_calls": [_call(json.dumps({"n": 1}))]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "index": 3, "cached": True, "weight": 0.5}],
        },
    ]

    sent = RequestRedactor(Counting()).redact(json.loads(json.dumps(messages)))
    again = json.loads(json.dumps(messages))
    second = RequestRedactor(Counting()).redact(again)

    assert sent == messages
    assert all(map(operator.is_, second, again))


def test_the_names_chat_messages_use_are_not_looked_up_and_any_other_name_is() -> None:
    names = ("role", "content", "tool_calls", "tool_call_id", "name", "id", "type", "function",
             "arguments", "text", "image_url", "url", "cache_control", "thinking_blocks",
             "thinking", "signature", "reasoning_content")  # fmt: skip
    redact = Counting()

    RequestRedactor(redact).redact([{**dict.fromkeys(names, 1), "extra": 2}])

    assert redact.texts == ["extra"]


def test_tool_schemas_are_redacted_and_walked_again_only_when_their_text_changes() -> None:
    redact = Counting()
    requests = RequestRedactor(redact)

    def schemas(description: str) -> list[dict[str, object]]:  # a fresh copy, as decoded
        parameters = {"type": "object", "properties": {"command": {"type": "string"}}}
        return [{"type": "function", "function": {
            "name": "run_shell", "description": description, "parameters": parameters}}]  # fmt: skip

    clean = schemas("Run a command.")
    sent = requests.tools(clean)
    assert sent == clean  # nothing to redact
    walked = len(redact.texts)
    assert walked == 14  # every key (9) and string value (5)
    assert requests.tools(schemas("Run a command.")) is sent  # equal schemas: the same list
    assert len(redact.texts) == walked  # the same text: not walked again
    clean[0]["type"] = "changed by its caller"
    assert requests.tools(schemas("Run a command.")) is sent
    assert sent == schemas("Run a command.")  # a copy of its own: the caller's change is not in it
    secret = requests.tools(schemas(f"Run it with {SECRET}."))
    assert secret == schemas("Run it with [REDACTED].")
    assert requests.tools(schemas(f"Run it with {SECRET}.")) == secret
    assert len(redact.texts) == 2 * walked
    assert requests.tools(None) is None


def test_a_metered_model_sends_the_wrapped_model_only_redacted_requests() -> None:
    inner = ScriptedModel(["ok"])
    model = MeteredModel(inner, redact=Counting())
    tool = {"type": "function", "function": {"name": "run_shell", "description": f"as {SECRET}"}}
    model.complete([{"role": "user", "content": f"use {SECRET}"}], [tool])
    critic_view = model.for_role("critic", ScriptedModel(["ok"]))
    critic_view.complete([{"role": "user", "content": f"judge {SECRET}"}])

    assert inner.calls[0].messages == [{"role": "user", "content": "use [REDACTED]"}]
    assert inner.calls[0].tools == [
        {"type": "function", "function": {"name": "run_shell", "description": "as [REDACTED]"}}
    ]  # the tool schemas too
    assert critic_view.inner.calls[0].messages == [  # type: ignore[attr-defined]
        {"role": "user", "content": "judge [REDACTED]"}
    ]


def test_an_agent_on_a_bare_model_echoes_no_secret_back_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANARY_API_KEY", SECRET)
    (tmp_path / "notes.txt").write_text(f"the key is {SECRET}\n")
    model = ScriptedModel(
        [ToolCall("read_file", {"path": "notes.txt"}), ToolCall("submit", {"summary": SECRET})]
    )

    run = Agent(model).run(f"task mentioning {SECRET}", tmp_path)

    assert run.steps == 2
    second = json.dumps(model.calls[1].messages)
    assert "the key is [REDACTED]" in second  # the file was read, and redacted on the way out
    assert SECRET not in json.dumps([call.messages for call in model.calls])
    assert SECRET in run.messages[1]["content"]  # the session itself keeps what it was given


def test_a_critic_on_a_bare_model_is_sent_a_redacted_artifact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CANARY_API_KEY", SECRET)
    model = ScriptedModel([json.dumps({"score": 9, "reasons": [], "fixes": []})])

    verdict = Critic(model).review(f"goal {SECRET}", f"+DATABASE_PASSWORD={SECRET}")

    assert verdict.score == 9
    assert "+DATABASE_PASSWORD=[REDACTED]" in model.calls[0].messages[1]["content"]
    assert SECRET not in json.dumps(model.calls[0].messages)
