"""The event log: schema, totals, torn lines, concurrency, redaction."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.core.errors import ConfigError
from harness.core.event_schema import (
    EVENT_MODELS,
    SCHEMA_VERSION,
    ModelCall,
    RoundEnd,
    RoundStart,
    RunEnd,
    ToolCallEvent,
    parse_event,
)
from harness.core.redact import REDACTED, Redactor
from harness.core.sink import NULL_SINK, Tee
from harness.observe.events import EventLog, read_events
from harness.observe.live import LiveProgress
from tests.conftest import event as new_event
from tests.conftest import make_repo, verdict_call
from tests.event_fixtures import emit_sample_run

SECRET = "sk-test-9f8e7d6c5b4a39281706fedcba"
PLAIN_SECRET = "correct-horse-battery"  # no key shape: only the environment says it is secret


def _log(tmp_path: Path, **kwargs: object) -> EventLog:
    redactor = Redactor(env={"OPENAI_API_KEY": SECRET, "DEPLOY_TOKEN": PLAIN_SECRET})
    return EventLog(tmp_path / "events.jsonl", run_id="r1", redactor=redactor, **kwargs)  # type: ignore[arg-type]


def test_sample_run_has_every_kind_and_round_trips(tmp_path: Path) -> None:
    log = _log(tmp_path)
    emit_sample_run(log, run_id="r1")
    events = read_events(log.path)
    assert {event.kind for event in events} == set(EVENT_MODELS)
    assert all(event.v == SCHEMA_VERSION and event.run_id == "r1" for event in events)
    lines = log.path.read_text().splitlines()
    assert len(lines) == len(events)
    for line, event in zip(lines, events, strict=True):
        assert json.loads(line)["kind"] == event.kind
        assert parse_event(event.model_dump_json()) == event
    tool = next(event for event in events if isinstance(event, ToolCallEvent))
    assert tool.model_extra is None  # no field beyond the schema's is kept


def test_model_call_tokens_add_up_to_the_reported_usage(tmp_path: Path) -> None:
    log = _log(tmp_path)
    sample = emit_sample_run(log, rounds=4)
    events = read_events(log.path)
    calls = [event for event in events if isinstance(event, ModelCall)]
    run_end = next(event for event in events if isinstance(event, RunEnd))
    assert sum(call.prompt_tokens for call in calls) == run_end.usage.prompt_tokens
    assert sum(call.completion_tokens for call in calls) == run_end.usage.completion_tokens
    assert sum(call.cost_usd for call in calls) == pytest.approx(run_end.usage.cost_usd)
    assert len(calls) == run_end.usage.calls == sample.usage.calls
    assert {call.role for call in calls} == {"author", "critic", "summariser"}
    in_round = 0
    for event in events:
        if isinstance(event, RoundStart):
            in_round = 0
        elif isinstance(event, ModelCall):
            in_round += event.prompt_tokens
        elif isinstance(event, RoundEnd):
            assert in_round == event.usage.prompt_tokens
    assert [e.round for e in events if isinstance(e, RoundStart)] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (
            {"role": "author", "model": "m", "prompt_tokens": "many", "completion_tokens": 1},
            "prompt_tokens",
        ),
        ({"role": "judge", "model": "m", "prompt_tokens": 1, "completion_tokens": 1}, "role"),
        (
            {
                "role": "author",
                "model": "m",
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "tokens": 2,
            },
            "tokens",
        ),
        ({"role": "author", "model": "m", "prompt_tokens": 1}, "completion_tokens"),
    ],
)
def test_a_bad_field_fails_where_the_event_is_built_whatever_the_sink(
    tmp_path: Path, data: dict[str, object], field: str
) -> None:
    log = _log(tmp_path)
    for sink in (log, NULL_SINK):
        with pytest.raises(ValidationError, match=field):
            sink.emit(ModelCall(**data))  # type: ignore[arg-type]
    assert not log.path.exists()
    log.emit(ModelCall(role="author", model="m", prompt_tokens=1, completion_tokens=1))
    assert [e.kind for e in read_events(log.path)] == ["model_call"]


def test_torn_last_line_is_skipped_but_a_bad_middle_line_is_an_error(tmp_path: Path) -> None:
    log = _log(tmp_path)
    emit_sample_run(log)
    complete = len(read_events(log.path))
    with log.path.open("a") as file:
        file.write(
            '{"kind": "tool_call", "v": 1, "ts": "2026-03-01T09:31:00Z", "run_id": "r1", "na'
        )
    assert len(read_events(log.path)) == complete
    lines = log.path.read_text().splitlines()
    lines[3] = lines[3][:20]
    log.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"events.jsonl:4: not a valid event"):
        read_events(log.path)
    log.path.write_bytes(b'{"kind": "stop"}\n\xff\xfe\n')
    with pytest.raises(ConfigError, match=r"events.jsonl:2: not UTF-8 text"):
        read_events(log.path)


CHILD = """
import sys
from harness.core.event_schema import ToolCallEvent
from harness.observe.events import EventLog
from harness.core.redact import Redactor
log = EventLog(sys.argv[1], run_id="killed", redactor=Redactor(env={}))
i = 0
while True:
    i += 1
    log.emit(ToolCallEvent(name="run_shell", arguments_preview="x" * 5000, step=i))
"""


def test_a_killed_writer_leaves_a_readable_log(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], cwd=Path(__file__).parents[2]
    )
    try:
        deadline = time.monotonic() + 20
        while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    events = read_events(path)
    assert len(events) >= 30
    assert [event.step for event in events if isinstance(event, ToolCallEvent)] == list(
        range(1, len(events) + 1)
    )


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    log = _log(tmp_path)

    def write(worker: int) -> None:
        for step in range(150):
            log.emit(
                new_event("tool_call", name=f"w{worker}", arguments_preview="y" * 300, step=step)
            )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = read_events(log.path)
    assert len(events) == 900
    assert sorted({e.name for e in events if isinstance(e, ToolCallEvent)}) == [
        f"w{n}" for n in range(6)
    ]


def test_planted_secrets_never_reach_the_log_or_its_echo(tmp_path: Path) -> None:
    echoed = io.StringIO()
    log = _log(tmp_path, echo=LiveProgress(echoed, mode="json"))
    emit_sample_run(log, tool_output_note=f"OPENAI_API_KEY={SECRET} token {PLAIN_SECRET}")
    log.emit(new_event("critic_verdict", score=2, passed=False,
                       messages=[{"role": "user", "api_key": "short"}]))  # fmt: skip
    log.emit(new_event("tool_call", name="run_shell",
                       arguments_preview=f'{{"command": "echo {SECRET}"}}'))  # fmt: skip
    text = log.path.read_text()
    for output in (text, echoed.getvalue()):
        assert SECRET not in output
        assert PLAIN_SECRET not in output
        assert "short" not in output
        assert REDACTED in output
    last = read_events(log.path)[-1]
    assert isinstance(last, ToolCallEvent)
    assert last.arguments_preview == '{"command": "echo [REDACTED]"}'


@pytest.mark.parametrize("secret", [SECRET, PLAIN_SECRET], ids=["key-shape", "environment"])
def test_a_long_preview_is_cut_after_redaction_so_no_part_of_a_secret_is_left(
    tmp_path: Path, secret: str
) -> None:
    echoed = io.StringIO()
    log = _log(tmp_path, echo=LiveProgress(echoed, mode="json"))
    preview = ("a" * 185 + secret).ljust(4_000, "b")
    log.emit(new_event("tool_call", name="write_file", arguments_preview=preview))
    (event,) = read_events(log.path)
    assert isinstance(event, ToolCallEvent)
    assert event.arguments_preview == "a" * 185 + (REDACTED + "b" * 10)[:15]
    for output in (log.path.read_text(), echoed.getvalue()):
        assert secret[:8] not in output
        assert secret[-8:] not in output


def test_default_redactor_reads_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_TEST_API_KEY", "planted-value-123")
    log = EventLog(tmp_path / "events.jsonl", run_id="r1")
    log.emit(new_event("stop", reason="ERROR", message="auth failed with planted-value-123"))
    assert "planted-value-123" not in log.path.read_text()
    assert read_events(log.path)[0].message == f"auth failed with {REDACTED}"  # type: ignore[union-attr]


def test_redactor_patterns_and_names() -> None:
    env = {
        "OPENAI_API_KEY": SECRET,
        "GITHUB_TOKEN": "ghp_" + "a" * 36,
        "DB_PASSWORD": "tiny",  # too short to be treated as a secret
        "TIKTOKEN_CACHE_DIR": "/opt/tiktoken-cache",
        "HOME": "/home/someone",
    }
    redactor = Redactor(patterns=[r"corp-[0-9]{6}"], env=env)
    text = f"{SECRET} ghp_{'a' * 36} corp-123456 tiny /opt/tiktoken-cache Bearer {'b' * 24} sk-ant-{'c' * 20}"
    assert redactor.redact_text(text) == (
        f"{REDACTED} {REDACTED} {REDACTED} tiny /opt/tiktoken-cache Bearer {REDACTED} {REDACTED}"
    )
    data = {
        "args": [f"x {SECRET}", 3],
        "headers": {"Authorization": "Bearer " + "d" * 20},
        "n": None,
    }
    assert redactor.redact(data) == {
        "args": [f"x {REDACTED}", 3],
        "headers": {"Authorization": f"Bearer {REDACTED}"},
        "n": None,
    }
    with pytest.raises(ConfigError, match=r"patterns\[0\]"):
        Redactor(patterns=["(unclosed"], env={})


def test_tee_fans_out_and_null_sink_discards(tmp_path: Path) -> None:
    first, second = _log(tmp_path / "a"), _log(tmp_path / "b")
    tee = Tee(first, NULL_SINK, second)
    tee.emit(new_event("stop", reason="PASSED"))
    assert (
        [e.kind for e in read_events(first.path)]
        == [e.kind for e in read_events(second.path)]
        == ["stop"]
    )
    assert os.path.getsize(first.path) == os.path.getsize(second.path)


def test_docs_describe_every_kind_and_field() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "events.md").read_text(encoding="utf-8")
    sections = dict(
        re.findall(r"^### `(\w+)`\n(.*?)(?=^### |^## |\Z)", docs, re.MULTILINE | re.DOTALL)
    )
    assert set(sections) == set(EVENT_MODELS)
    common = {"kind", "v", "ts", "run_id"}
    for field in common:
        assert f"| `{field}` |" in docs
    for kind, model in EVENT_MODELS.items():
        documented = set(re.findall(r"^\| `(\w+)` \|", sections[kind], re.MULTILINE))
        logged = {name for name, field in model.model_fields.items() if not field.exclude}
        assert documented == logged - common, kind  # the trajectory's own: trajectories.md


def test_a_scripted_outer_loop_run_logs_consistent_redacted_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import Agent, Critic, OuterLoop, PytestGate, ScriptedModel, ToolCall
    from harness.observe.report import render_text
    from harness.observe.report_html import render_html
    from harness.observe.run_summary import load_run

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n",
                     "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"})  # fmt: skip
    author = ScriptedModel([
        ToolCall("run_shell", {"command": f"echo {SECRET}"}), "looked around",
        ToolCall("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}), "fixed",
    ])  # fmt: skip
    critic = ScriptedModel([verdict_call(9, ["minimal fix"])])
    run_dir = repo / ".harness" / "runs" / "scripted"
    log = EventLog(run_dir / "events.jsonl", run_id="scripted")
    result = OuterLoop("fix add", Agent(author), gates=[PytestGate()], critic=Critic(critic),
                       max_iterations=3, workspace=repo, events=log, run_id="scripted", ).run()  # fmt: skip

    events = read_events(log.path)
    kinds = {event.kind for event in events}
    assert {"run_start", "round_start", "model_call", "tool_call", "gate_report", "critic_verdict",
            "round_end", "stop", "run_end"} <= kinds  # fmt: skip
    calls = [event for event in events if isinstance(event, ModelCall)]
    assert sum(c.prompt_tokens for c in calls) == result.usage.prompt_tokens
    assert sum(c.completion_tokens for c in calls) == result.usage.completion_tokens
    assert len(calls) == result.usage.calls
    summary = load_run(run_dir)
    assert (summary.outcome, len(summary.rounds)) == (result.stop_reason.value, result.iterations)
    for text in (log.path.read_text(), render_text(summary), render_html(summary)):
        assert SECRET not in text
    assert f"echo {REDACTED}" in log.path.read_text()


def test_secrets_never_reach_progress_or_the_escalation_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import Agent, CommandGate, OuterLoop, ScriptedModel, ToolCall

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    workspace = tmp_path / "work"
    workspace.mkdir()
    author = ScriptedModel([
        ToolCall("update_progress", {"resume_point": f"key is {SECRET}", "add": [f"rotate {SECRET}"]}),
        f"I printed {SECRET} and gave up.",
    ])  # fmt: skip
    progress_path = tmp_path / "progress" / "leak.md"
    result = OuterLoop(
        "never passes", Agent(author), gates=[CommandGate(f"echo {SECRET}; false", name="leaky")],
        max_iterations=1, workspace=workspace, isolation="none", progress=progress_path,
    ).run()  # fmt: skip
    assert result.escalation is not None
    for path in (progress_path, result.escalation):
        text = path.read_text()
        assert SECRET not in text
        assert REDACTED in text


def test_the_rendered_task_of_each_round_is_in_the_log(tmp_path: Path) -> None:
    from harness import Agent, CommandGate, OuterLoop, ScriptedModel

    workspace = tmp_path / "work"
    workspace.mkdir()
    log = EventLog(tmp_path / "events.jsonl", run_id="task")
    model = ScriptedModel(["nothing yet", "still nothing"])
    OuterLoop(
        "say yes", Agent(model), gates=[CommandGate("false", name="never")], max_iterations=2,
        workspace=workspace, events=log, patience=5, ).run()  # fmt: skip
    starts = [e for e in read_events(log.path) if e.kind == "round_start"]
    assert [e.task for e in starts] == [c.messages[1]["content"] for c in model.calls]
    assert "round 2 of at most 2" in starts[1].task
