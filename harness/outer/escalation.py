"""The report a person receives when a run stops without success, and the hook that sends it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core.atomic import atomic_write_text
from harness.core.stop import StopReason
from harness.core.text import inert, one_line, shown_name
from harness.core.usage import Usage
from harness.memory.progress_items import Attempt
from harness.outer.decision import RoundReport
from harness.outer.hooks import run_hook
from harness.outer.settings import Settings

NEXT_STEPS = {
    StopReason.MAX_ITERATIONS: "Read the last round's failures below; sharpen the goal or the "
    "skill's hints, or run again with a higher --max-iterations if the score was still rising.",
    StopReason.NO_PROGRESS: "The agent repeated itself. Fix the blocker by hand or add a hint to "
    "the skill describing it, then resume.",
    StopReason.BUDGET_TOKENS: "Raise budget.tokens or use a cheaper model, then resume.",
    StopReason.BUDGET_COST: "Raise budget.cost_usd or use a cheaper model, then resume.",
    StopReason.TIMEOUT: "Raise budget.seconds, then resume.",
    StopReason.ERROR: "An internal or provider error stopped the run; see the message, fix the "
    "cause, then resume.",
    StopReason.CANCELLED: "The run was cancelled; resume it when ready.",
}


@dataclass(frozen=True)
class Escalation:
    """Everything the report says."""

    goal: str
    reason: StopReason
    message: str
    rounds: Sequence[RoundReport]
    usage: Usage
    branch: str | None
    worktree: Path | None
    progress_path: Path | None
    earlier: tuple[Attempt, ...] = ()  # rounds of earlier sessions, as progress.md recorded them
    unsandboxed: str | None = None  # why the agent's commands ran without a sandbox, if they did
    best: str = ""  # the best round: which, where it is kept, how to restore it
    models: tuple[str, ...] = ()  # a cascade's moves, then each model's cost


def render_escalation(e: Escalation) -> str:
    lines = [
        f"# Escalation: {e.reason.value}",
        "",
        f"**Goal:** {e.goal}",
        f"**Why it stopped:** {e.message}",
        f"**Rounds:** {len(e.earlier) + len(e.rounds)}",
        f"**Usage:** {e.usage.total_tokens} tokens ({e.usage.prompt_tokens} prompt, "
        f"{e.usage.completion_tokens} completion), ${e.usage.cost_usd:.4f} in "
        f"{e.usage.calls} model calls",
        *([f"**Not sandboxed:** {e.unsandboxed}"] if e.unsandboxed else []),
        "",
        "## Where the work is",
        "",
    ]
    if e.branch:
        lines.append(f"- Branch: `{e.branch}` (one commit per round)")
    if e.worktree:
        lines.append(f"- Worktree: `{e.worktree}`")
    if e.progress_path:
        lines.append(f"- Progress: `{e.progress_path}`")
    if e.best:
        lines += ["", "## Best round", "", e.best]
    if e.models:
        lines += ["", "## Models", "", *(f"- {line}" for line in e.models)]
    lines += [
        "",
        "## Suggested next step",
        "",
        NEXT_STEPS.get(e.reason, "Review the rounds below."),
        "",
    ]
    lines += ["## Rounds", ""]
    for attempt in e.earlier:
        lines += _earlier_round(attempt)
    for report in e.rounds:
        lines += _round(report)
    last_verdict = next((r.verdict for r in reversed(e.rounds) if r.verdict is not None), None)
    if last_verdict is not None:
        lines += ["## Critic's last verdict", "", f"Score {last_verdict.score:.1f}/10", ""]
        lines.extend(f"- {_line(r)}" for r in last_verdict.reasons)
        lines.append("")
    return inert("\n".join(lines))  # agent text, shown on a terminal or in an editor


def _earlier_round(attempt: Attempt) -> list[str]:
    lines = [f"### Round {attempt.round}: {attempt.outcome} (an earlier session)", ""]
    lines += [f"- Gate {_line(g if isinstance(g, str) else g.render())}" for g in attempt.gates]
    if attempt.critic_score is not None:
        lines.append(f"- Critic: {attempt.critic_score:.1f}/10")
    if attempt.summary:
        lines.append(f"- Agent said: {_line(attempt.summary)}")
    if attempt.commit:
        lines.append(f"- Commit: `{attempt.commit[:12]}`")
    return [*lines, ""]


def _round(report: RoundReport) -> list[str]:
    lines = [f"### Round {report.round}: {report.outcome}", ""]
    if report.agent_summary:
        lines.append(f"- Agent said: {_line(report.agent_summary.strip()[:500])}")
    lines.append(f"- Session: {report.steps} steps, ended: {report.agent_stop.value}")
    for gate in report.gates:
        state = "passed" if gate.passed else "FAILED"
        lines.append(f"- Gate {gate.name}: {state} — {_line(gate.summary)}")
        if gate.failures:
            lines.append("  - Failing: " + ", ".join(map(_line, gate.failures)))
    if report.protected_violations:
        shown = ", ".join(map(shown_name, report.protected_violations))
        lines.append("- Protected files changed: " + shown)
    if report.approval is not None:
        approval = report.approval
        note = f": {_line(approval.note)}" if approval.note else ""
        lines.append(
            f"- A person: {approval.outcome.replace('_', ' ')} after {approval.waited:.1f}s "
            f"(not counted against budget.seconds){note}"
        )
    if report.verdict is not None:
        lines.append(f"- Critic: {report.verdict.score:.1f}/10")
        lines += [f"  - Reason: {_line(r)}" for r in report.verdict.reasons]
        lines += [f"  - Fix: {_line(f)}" for f in report.verdict.fixes]
    if report.commit:
        lines.append(f"- Commit: `{report.commit[:12]}`")
    return [*lines, ""]


def _line(text: str) -> str:
    """Text the harness did not write, inert and on one line: it cannot begin a line of the
    report (a round, a gate, a heading of its own)."""
    return one_line(inert(text))


def escalate(escalation: Escalation, path: Path, settings: Settings) -> Path:
    """Write the report atomically to ``path``, redacted, and run the ``on_escalate`` hook with
    its path (a command as :func:`~harness.outer.hooks.run_hook` runs it, the report's folder
    standing for a workspace that is no folder; refused, once the report is written, when a
    pinned file changed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, settings.redact(render_escalation(escalation)))
    hook = settings.on_escalate
    if callable(hook):
        hook(path)
    elif hook:
        command = f"{hook} {shlex.quote(str(path))}"
        run_hook(
            settings, command, env={"HARNESS_ESCALATION_REPORT": str(path)}, fallback=path.parent
        )
    return path
