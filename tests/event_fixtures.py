"""A realistic run's events, emitted through any sink, for the event, report and live tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.core.sink import EventSink
from tests.conftest import event

START = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
CALLS = {  # role: (model, prompt tokens, completion tokens, cost)
    "author": ("gpt-4o-mini", 1200, 150, 0.0021),
    "critic": ("claude-3-5-haiku", 800, 60, 0.0009),
    "summariser": ("gpt-4o-mini", 3000, 200, 0.0030),
}
STEPS = 3


@dataclass
class Tally:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, prompt: int, completion: int, cost: float) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cost_usd += cost
        self.calls += 1

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class _Emitter:
    sink: EventSink
    now: datetime
    run: Tally = field(default_factory=Tally)
    round: Tally = field(default_factory=Tally)
    per_round: list[Tally] = field(default_factory=list)

    def emit(self, kind: str, after: float, **data: Any) -> None:
        self.now += timedelta(seconds=after)
        self.sink.emit(event(kind, ts=self.now, **data))

    def model_call(self, role: str) -> None:
        model, prompt, completion, cost = CALLS[role]
        self.emit("model_call", 2, role=role, model=model, prompt_tokens=prompt,
                  completion_tokens=completion, cost_usd=cost, latency=1.8)  # fmt: skip
        self.run.add(prompt, completion, cost)
        self.round.add(prompt, completion, cost)


@dataclass(frozen=True)
class SampleRun:
    """What the emitted run adds up to."""

    usage: Tally
    per_round: list[Tally]
    rounds: int
    duration: float


def emit_sample_run(
    sink: EventSink,
    *,
    run_id: str = "20260301-093000-abc123",
    rounds: int = 3,
    passes: bool = False,
    start: datetime = START,
    tool_output_note: str = "",
) -> SampleRun:
    """A bug-fix run: pytest fails in round 1, then the critic scores 6.5, 7.5, ...

    Round 2 compacts its context. With ``passes`` the last verdict is 9 and the run passes;
    otherwise it stops at MAX_ITERATIONS and escalates. Each round opens with a budget_check (a
    refused call) so every kind appears, though a real run would stop after one.
    ``tool_output_note`` goes into each shell call's arguments preview (to plant secrets).
    """
    shell = '{"command": "pytest -q"}' + (f" {tool_output_note}" if tool_output_note else "")
    out = _Emitter(sink, start)
    sink.emit(
        event("run_start", ts=start, run_id=run_id, goal="Fix the failing test in calc.py",
        loop_name="bugfix", model="gpt-4o-mini", critic_model="claude-3-5-haiku",
        max_iterations=rounds, budget={"tokens": 200000, "cost_usd": 1.0, "seconds": 900},
        workspace="/tmp/calc", branch="harness/fix-calc"),
    )  # fmt: skip
    for round_ in range(1, rounds + 1):
        out.round = Tally()
        if round_ == 2:  # a cascade's next model takes over (the calls stay on one model)
            out.emit("model_switch", 0, round=round_, previous=CALLS["author"][0],
                     model=CALLS["author"][0], reason="1 failed round", spent_usd=0.0)  # fmt: skip
        out.emit("round_start", 1, round=round_, max_iterations=rounds)
        if round_ == 2:
            out.emit("note", 0, round=round_, text="the division test is the one that matters")
        out.emit("budget_check", 0.1, role="critic", estimated_tokens=2860, estimated_cost=0.0031,
                 reason="cost budget: $0.9990 used + up to $0.0031 for the next call would exceed $1.0000")  # fmt: skip
        out.emit("session_start", 0, role="author", model=CALLS["author"][0])
        for step in range(1, STEPS + 1):
            out.model_call("author")
            if round_ == 1 and step == 1:
                out.emit("tool_start", 0.0, name="read_file",
                         arguments_preview='{"path": "calc.py"}', step=step)  # fmt: skip
            out.emit(
                "tool_call", 0.5, name="read_file" if step == 1 else "run_shell",
                arguments_preview='{"path": "calc.py"}' if step == 1 else shell,
                exit_code=1 if round_ == 1 and step == STEPS else 0, duration=0.4,
                output_chars=812, step=step,
            )  # fmt: skip
            if round_ == 2 and step == 2:
                out.model_call("summariser")
                out.emit("compaction", 0.2, strategy="summarize", tokens_before=52000,
                         tokens_after=11000, duration=2.1, dropped=["messages 2-14"],
                         trigger="hard", attempts=1, model_tokens=3200)  # fmt: skip
        out.emit("session_end", 0)
        gates_pass = round_ > 1
        out.emit("checks_start", 0.1, round=round_, gates=["pytest", "ruff"], critic=True)
        out.emit(
            "gate_report", 3, round=round_, name="pytest", passed=gates_pass,
            summary="12 passed" if gates_pass else "3 failed, 9 passed",
            failures=[] if gates_pass else ["test_add", "test_sub", "test_div_zero"], duration=2.9,
        )  # fmt: skip
        out.emit("gate_report", 0.5, round=round_, name="ruff", passed=True, summary="clean",
                 duration=0.3)  # fmt: skip
        passed, outcome = False, "failed: pytest"
        if gates_pass:
            out.emit("session_start", 0, role="critic", model=CALLS["critic"][0])
            out.model_call("critic")
            out.emit("session_end", 0)
            score = 9.0 if passes and round_ == rounds else min(4.5 + round_, 7.5)
            passed, outcome = (
                score >= 8,
                "passed" if score >= 8 else f"failed: critic {score:.1f}/10",
            )
            out.emit("critic_verdict", 0.1, round=round_, score=score, passed=passed,
                     reasons=["fix is minimal" if passed else "division by zero unhandled"],
                     fixes=[] if passed else ["raise ZeroDivisionError in div()"],
                     threshold=8.0)  # fmt: skip
        if round_ == 2:  # a person was asked (in a real run only after the critic passed)
            out.emit("approval", 0, round=round_, outcome="rejected", note="handle zero",
                     waited=42.0)  # fmt: skip
        out.per_round.append(out.round)
        out.emit("round_end", 0.2, round=round_, passed=passed, outcome=outcome, duration=14.5,
                 usage=out.round.as_dict())  # fmt: skip
        if round_ == 1:
            out.emit("hook_failed", 0, hook="on_round", round=round_, error="exit code 7: ")
            out.emit("permission", 0, tool="run_shell", subject="git push", verdict="deny",
                     decision="denied", rule="run_shell(git push*)")  # fmt: skip
            out.emit("action_hook", 0, hook="lint", when="after", tool="write_file",
                     outcome="observed", detail="exit code 1")  # fmt: skip
            out.emit("subagent", 0, profile="searcher", depth=1, model="scripted",
                     stop_reason="answered", steps=2, tokens=300, files=["notes.md"])  # fmt: skip
            out.emit("connector", 0, connector="pull_request", occasion="round", ok=False,
                     detail="POST /repos/acme/widgets/pulls: HTTP 502")  # fmt: skip
            out.emit("trigger", 0, trigger="schedule", loop_name="fix-calc", started=False,
                     reason="still running (this watcher)", issue=None, started_run=None)  # fmt: skip
    reason = "PASSED" if passes else "MAX_ITERATIONS"
    out.emit("stop", 0.1, reason=reason,
             message="gates and critic passed" if passes else f"{rounds} of {rounds} rounds used")  # fmt: skip
    if not passes:
        out.emit("escalation", 0.1, reason=reason, report_path="progress/fix-calc.escalation.md")
    duration = (out.now - start).total_seconds() + 0.1
    out.emit("run_end", 0.1, run_id=run_id, stop_reason=reason, passed=passes, iterations=rounds,
             usage=out.run.as_dict(), duration=duration)  # fmt: skip
    return SampleRun(usage=out.run, per_round=out.per_round, rounds=rounds, duration=duration)
