"""Budgets hold across processes and inside calls: re-runs cannot spend past the cap, and a hung
model, a hung provider or a sleeping command is cut at the time budget."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import (
    Agent,
    Budget,
    CommandGate,
    LiteLLMModel,
    OuterLoop,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from harness.core.errors import ConfigError
from harness.memory.spend import read_spent, spend_path
from harness.models.base import Message, ToolSchema
from harness.outer.rules import Earlier
from tests.conftest import make_repo
from tests.openai_server import Hang, OpenAIServer

CAP = 12_000


def _loop(repo: Path, progress: Path, *, earlier: Earlier = "resume", **budget: float) -> OuterLoop:
    busy = [ToolCall("run_shell", {"command": "echo trying"}) for _ in range(40)]
    return OuterLoop(
        "make the gate pass",
        Agent(ScriptedModel(busy), max_tokens=200),
        gates=[CommandGate("false", name="never")],
        workspace=repo,
        progress=progress,
        budget=Budget(**budget),  # type: ignore[arg-type]
        max_iterations=50,
        patience=50,
        earlier=earlier,
    )


def test_three_re_runs_after_a_budget_stop_spend_at_most_the_cap(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"x.txt": "x\n"})
    progress = tmp_path / "progress" / "loop.md"

    results = [_loop(repo, progress, tokens=CAP).run() for _ in range(4)]

    assert [r.stop_reason for r in results] == [StopReason.BUDGET_TOKENS] * 4
    spent = sum(r.usage.total_tokens for r in results)
    assert results[0].usage.total_tokens > CAP // 2  # the first run did spend most of it
    assert spent <= CAP
    assert results[-1].usage.total_tokens < CAP // 4  # only scraps were left
    recorded = read_spent(spend_path(progress))
    assert recorded.usage.total_tokens == spent
    assert "token budget" in results[-1].message


def test_restart_starts_a_new_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"x.txt": "x\n"})
    progress = tmp_path / "progress" / "loop.md"
    first = _loop(repo, progress, tokens=CAP).run()

    again = _loop(repo, progress, tokens=CAP, earlier="restart").run()

    assert again.stop_reason is StopReason.BUDGET_TOKENS
    assert again.usage.total_tokens > CAP // 2
    assert read_spent(spend_path(progress)).usage.total_tokens == again.usage.total_tokens
    previous = spend_path(progress).with_suffix(".previous.json")
    assert json.loads(previous.read_text())["prompt_tokens"] == first.usage.prompt_tokens


def test_a_damaged_spend_record_is_named_not_reset(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"x.txt": "x\n"})
    progress = tmp_path / "progress" / "loop.md"
    _loop(repo, progress, tokens=CAP).run()
    spend_path(progress).write_text('{"prompt_tokens": -5}')

    with pytest.raises(ConfigError, match="not a spend record") as caught:
        _loop(repo, progress, tokens=CAP).run()
    assert str(caught.value).startswith(f"{spend_path(progress)}: not a spend record")


# --- the time budget inside one call --------------------------------------------------------


def _hung_model(seconds: float) -> ScriptedModel:
    def hang(messages: list[Message], tools: list[ToolSchema] | None) -> str:
        time.sleep(seconds)
        return "too late"

    return ScriptedModel([hang])


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(deadline=60) as running:
        yield running


def _timed_run(tmp_path: Path, agent: Agent) -> tuple[StopReason, str, float]:
    repo = make_repo(tmp_path / "repo", {"x.txt": "x\n"})
    started = time.monotonic()
    result = OuterLoop(
        "make the gate pass",
        agent,
        gates=[CommandGate("false", name="never")],
        workspace=repo,
        budget=Budget(seconds=5),
        max_iterations=3,
    ).run()
    return result.stop_reason, result.message, time.monotonic() - started


def test_a_hung_model_is_cut_at_the_time_budget(tmp_path: Path) -> None:
    stop, message, took = _timed_run(tmp_path, Agent(_hung_model(30)))

    assert stop is StopReason.TIMEOUT
    assert "a model call was cut off" in message
    assert took < 25  # the budget's 5 s, not the hang's 30 s


def test_a_sleeping_command_is_cut_at_the_time_budget(tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("run_shell", {"command": "sleep 30"}), "done"])

    stop, message, took = _timed_run(tmp_path, Agent(model))

    assert stop is StopReason.TIMEOUT
    assert message.startswith("time budget of 5s used")
    assert took < 25  # the budget's 5 s, not the hang's 30 s
    assert len(model.calls) == 1  # no model call after the budget ran out


def test_a_provider_that_never_answers_is_cut_at_the_time_budget(
    tmp_path: Path, server: OpenAIServer
) -> None:
    server.queue(Hang(seconds=30))
    model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.api_base, api_key="sk-test")
    model.count_tokens([{"role": "user", "content": "warm up"}])  # litellm's import (seconds)
    model.price_per_token()  # is not what this test times

    stop, message, took = _timed_run(tmp_path, Agent(model))

    assert stop is StopReason.TIMEOUT
    assert "a model call was cut off" in message
    assert took < 25  # the budget's 5 s, not the hang's 30 s
    assert len(server.requests) == 1


def test_the_spend_record_is_written_after_every_call_and_flushed_to_disk_once_a_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    progress = tmp_path / "progress" / "loop.md"
    synced: list[str] = []
    fsync = os.fsync

    def watched(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", watched)
    writes: list[int] = []
    calls = [ToolCall("run_shell", {"command": "true"}), ToolCall("list_files", {}), "done"]

    def count_then(reply: object) -> object:
        def entry(messages: list[Message], tools: list[ToolSchema]) -> object:
            writes.append(read_spent(spend_path(progress)).calls)  # the calls recorded so far
            return reply

        return entry

    result = OuterLoop(
        "make the gate pass",
        Agent(ScriptedModel([count_then(c) for c in calls * 2])),
        gates=[CommandGate("false", name="never")],
        workspace=workspace, progress=progress, isolation="none", max_iterations=2,
    ).run()  # fmt: skip

    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert writes == [0, 1, 2, 3, 4, 5]  # each call was on file before the next began
    assert read_spent(spend_path(progress)).usage == result.usage
    spend_syncs = [p for p in synced if p.startswith(str(progress.parent / ".loop.spend.json."))]
    assert len(spend_syncs) == 3  # the end of each round, and of the run: not each of 6 calls
