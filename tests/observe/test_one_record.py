"""One record of a run: each moment is emitted once, by one call, and both files are written
from that call under one kind name.

A real loop (two rounds, a gate failed then passed, a subagent, a critic; scripted models) runs
with its event log and trajectory behind an instrumented sink: each line either file writes is
traced to the one emit call that wrote it. No line may be written outside an emit, an emit may
write at most one line to each file and under its own kind, and no moment (a round's start or
end, a gate's report, a verdict, a step) may be emitted twice. The checker is shown failing on
a moment written twice and on a trajectory line written beside the emit path. Then the package's
source: only the run's record makes the two writers, and only the trajectory's writer builds its
records. Last, the work of one emit for both files: each text of a step is redacted once.
"""

from __future__ import annotations

import ast
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from harness.agent.agent import Agent
from harness.assemble.build import build_loop
from harness.core.event_schema import EventBase, GateReportEvent, RoundStart
from harness.core.redact import REDACTED, Redactor
from harness.core.stop import StopReason
from harness.models.base import ToolCall
from harness.models.budget import MeteredModel
from harness.models.scripted import ScriptedModel
from harness.observe.events import EVENTS_FILE, EventLog, read_events
from harness.observe.record import run_record
from harness.observe.trajectory import TRAJECTORY_FILE
from harness.observe.trajectory_log import TrajectoryLog
from harness.spec.loop_spec import LoopSpec
from harness.tools import tool
from tests.conftest import make_repo, verdict_entry
from tests.replay.test_replay import LOOP

PACKAGE = Path(__file__).parents[2] / "harness"


class _Trajectory(TrajectoryLog):
    """A trajectory that notes, for each line it writes, the emit call it is inside."""

    def __init__(self, path: Path, moments: Moments) -> None:
        super().__init__(path, redactor=moments.redactor)
        self.moments = moments

    def _write(self, data: dict[str, Any]) -> None:
        self.moments.wrote(data["kind"])
        super()._write(data)


class Moments:
    """The run's one sink, instrumented: every event to the event log, then the trajectory, as
    :func:`harness.observe.record.run_record` sends it; each emit call numbered."""

    def __init__(self, folder: Path) -> None:
        self.redactor = Redactor()
        self.log = EventLog(folder / EVENTS_FILE, run_id="r1", redactor=self.redactor)
        self.trajectory = _Trajectory(folder / TRAJECTORY_FILE, self)
        self.emitted: list[EventBase] = []
        self.lines: list[tuple[int | None, str]] = []  # (the emit call, the kind), per line
        self._current = threading.local()
        self._lock = threading.Lock()

    def emit(self, event: EventBase) -> None:
        with self._lock:
            self.emitted.append(event)
            number = len(self.emitted) - 1
        self._current.number = number
        try:
            self.log.emit(event)
            self.trajectory.emit(event)
        finally:
            self._current.number = None

    def wrote(self, kind: str) -> None:
        self.lines.append((getattr(self._current, "number", None), kind))


UNIQUE = ("run_start", "round_start", "round_end", "gate_report", "critic_verdict", "tool_call",
          "run_end", "checks_start")  # fmt: skip
"""The kinds of moment that happen once each: their number is not checked against another."""


def _moments(emitted: list[EventBase]) -> Counter[tuple[str, tuple[object, ...]]]:
    """How many times each moment of a kind in :data:`UNIQUE` was emitted: a moment is its kind,
    the round it happened in, and what it names (a gate, a tool and its step)."""
    seen: Counter[tuple[str, tuple[object, ...]]] = Counter()
    current = None
    for event in emitted:
        if isinstance(event, RoundStart):
            current = event.round
        if event.kind in UNIQUE:
            names = tuple(getattr(event, name, None) for name in ("name", "step", "role"))
            seen[event.kind, (getattr(event, "round", current), *names)] += 1
    return seen


def violations(moments: Moments, log: Path) -> list[str]:
    """Every way the record broke "one moment, one call, one kind"."""
    found = []
    logged = [event.kind for event in read_events(log)]
    if logged != [event.kind for event in moments.emitted]:
        found.append(f"the event log is not one line per emit: {logged}")
    per_call = Counter(number for number, _ in moments.lines)
    for number, kind in moments.lines:
        if number is None:
            found.append(f"a {kind} line written outside any emit")
        elif kind != moments.emitted[number].kind:
            found.append(f"a {kind} line written for a {moments.emitted[number].kind} event")
        elif per_call[number] > 1:
            found.append(f"emit {number} ({kind}) wrote {per_call[number]} trajectory lines")
    seen = _moments(moments.emitted)
    found += [f"{kind} {key} emitted {n} times" for (kind, key), n in seen.items() if n > 1]
    return found


def _project(tmp_path: Path) -> Path:
    rounds = {
        "1": [
            {"name": "subagent", "arguments": {"task": "what goes in out.txt?", "profile": "aide"}},
            {"name": "write_file", "arguments": {"path": "out.txt", "content": "no\n"}},
            "out.txt written",
        ],
        "2": [
            {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes\n"}},
            {"name": "run_shell", "arguments": {"command": "cat out.txt"}},
            "out.txt says yes",
            verdict_entry(9, ["it says yes"]),
        ],
    }
    return make_repo(
        tmp_path / "project",
        {
            "loop.toml": LOOP + '[subagents.profiles.aide]\nmodel = "scripted:aide.json"\n',
            "script.json": json.dumps({"rounds": rounds}),
            "aide.json": json.dumps(["the word yes"]),
            ".gitignore": ".harness/\nprogress/\n",
        },
    )


def test_a_run_writes_each_moment_by_one_call_under_one_kind(tmp_path: Path) -> None:
    root = _project(tmp_path)
    moments = Moments(tmp_path / "record")
    result = build_loop(LoopSpec.from_toml(root / "loop.toml"), events=moments, run_id="r1").run()
    assert result.stop_reason is StopReason.PASSED, result.message
    assert violations(moments, tmp_path / "record" / EVENTS_FILE) == []
    kinds = Counter(kind for _, kind in moments.lines)
    assert kinds == {  # every moment the trajectory keeps, each once
        "run_start": 1,
        "round_start": 2,
        "session_start": 4,  # the author's twice, the subagent's, the critic's
        "model_call": 3 + 1 + 3 + 1,  # round 1 (author, aide), round 2 (author, critic)
        "tool_call": 2 + 2,
        "gate_report": 2,
        "critic_verdict": 1,
        "round_end": 2,
    }
    written = [json.loads(line) for line in (tmp_path / "record" / TRAJECTORY_FILE).open()]
    assert [line["kind"] for line in written] == [kind for _, kind in moments.lines]
    assert {line["v"] for line in written} == {2}
    emitted = Counter(event.kind for event in moments.emitted)
    assert emitted["session_end"] == emitted["session_start"] == 4
    assert emitted["model_call"] == kinds["model_call"]  # each reached the trajectory


def test_the_checker_finds_a_moment_written_twice(tmp_path: Path) -> None:
    moments = Moments(tmp_path)
    moments.emit(RoundStart(round=1, max_iterations=2))
    gate = GateReportEvent(round=1, name="pytest", passed=True)
    moments.emit(gate)
    assert violations(moments, tmp_path / EVENTS_FILE) == []
    moments.emit(gate)  # the same moment, emitted by a second call
    assert violations(moments, tmp_path / EVENTS_FILE) == [
        "gate_report (1, 'pytest', None, None) emitted 2 times"
    ]


def test_the_checker_finds_a_line_written_beside_the_emit_path(tmp_path: Path) -> None:
    moments = Moments(tmp_path)
    moments.emit(RoundStart(round=1, max_iterations=2))
    moments.trajectory.emit(GateReportEvent(round=1, name="pytest", passed=True))  # no emit
    assert violations(moments, tmp_path / EVENTS_FILE) == [
        "a gate_report line written outside any emit"
    ]


WRITERS = {"EventLog", "TrajectoryLog"}
RECORDS = {"RunBegin", "RoundBegin", "SessionBegin", "ModelStep", "ToolStep", "GateStep",
           "VerdictStep", "RoundFinish"}  # fmt: skip


def _calls(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_only_the_run_record_makes_the_writers_and_only_the_trajectory_builds_records() -> None:
    makers: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).as_posix()
        calls = _calls(path)
        for name in calls & (WRITERS | RECORDS | {"model_call", "tool_call", "_record"}):
            makers.setdefault(name, set()).add(module)
    assert makers["EventLog"] == {
        "harness/observe/record.py",
        "harness/cli/watch.py",  # `harness watch`'s own log of its triggers, no run's record
    }
    assert makers["TrajectoryLog"] == {"harness/observe/record.py"}
    for name in RECORDS:  # the trajectory's records, built from events in one place
        assert makers.get(name, set()) <= {"harness/core/trajectory_schema.py"}, name
    assert makers["model_call"] == makers["tool_call"] == {"harness/observe/trajectory_log.py"}


class _Counting(Redactor):
    """The run's redactor, noting each text and each JSON text it scans (rather than finds in
    its memo)."""

    def __init__(self, secret: str) -> None:
        self.scanned: Counter[str] = Counter()
        self.parsed: Counter[str] = Counter()
        super().__init__(env={"MY_API_KEY": secret})

    def _scan(self, text: str) -> str:
        self.scanned[text] += 1
        return super()._scan(text)

    def _scan_json(self, raw: str) -> str:
        self.parsed[raw] += 1
        return super()._scan_json(raw)


def test_each_text_of_a_moment_is_redacted_once_for_both_files(tmp_path: Path) -> None:
    """A tool call's arguments reach the record three times (the reply that made the call, its
    ``tool_start``, its ``tool_call``) and its observation twice (the step, the next request):
    each is scanned once for the event log and the trajectory together. The stamps of a step's
    events (kind, time, run id) are the harness's own and are not scanned at all."""
    secret = "hunter2-hunter2-xyz"
    redactor = _Counting(secret)
    sink = run_record(tmp_path / "run", run_id="r1", redactor=redactor)

    @tool
    def echo(text: str) -> str:
        """Say it back.

        Args:
            text: what to say.
        """
        return f"said {text}"

    call = ToolCall("echo", {"text": f"the key {secret}"})
    model = MeteredModel(ScriptedModel([call, "done"]), redact=redactor.redact_text, events=sink)
    sink.emit(RoundStart(round=1, max_iterations=1))
    Agent(model, [echo]).run("echo the key", tmp_path, events=sink)
    assert redactor.parsed == {call.arguments_json: 1}
    assert redactor.scanned[f"said the key {secret}"] == 1
    events = read_events(tmp_path / "run" / EVENTS_FILE)
    step = [e for e in events if e.kind in ("model_call", "tool_start", "tool_call")]
    assert len(step) == 4
    stamps = {e.ts.isoformat().replace("+00:00", "Z") for e in step}
    assert not [text for text in redactor.scanned if any(s in text for s in stamps)]
    assert not [text for text in redactor.scanned if text in ("r1", "model_call", "tool_call")]
    written = "".join(p.read_text() for p in (tmp_path / "run").iterdir() if p.is_file())
    assert secret not in written
    assert f"said the key {REDACTED}" in written
