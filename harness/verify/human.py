"""A person approves or rejects a round that the gates and the critic passed.

On a terminal :class:`HumanGate` asks inline. Unattended, it posts a request in the loop's
:class:`~harness.memory.inbox.Inbox` and waits for ``harness approve LOOP [--reject NOTE]`` from
another process, up to ``timeout`` seconds; then the loop escalates. A rejection's note is the
next round's feedback.
"""

from __future__ import annotations

import select
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, TextIO

from harness.core.section import check_field
from harness.core.validation import positive_finite
from harness.memory.approval import ApprovalRequest
from harness.memory.inbox import Inbox
from harness.verify.gate_config import APPROVAL_SECONDS, HumanGateConfig

Outcome = Literal["approved", "rejected", "timed_out"]

PROMPT = "Approve round {round}? [y]es / [n]o (then a note for the next round): "


@dataclass(frozen=True)
class Approval:
    """A person's answer: ``approved``, ``rejected`` (with ``note``) or ``timed_out``."""

    outcome: Outcome
    note: str = ""
    waited: float = 0.0

    @property
    def approved(self) -> bool:
        return self.outcome == "approved"


@dataclass(kw_only=True, eq=False)
class HumanGate:
    """Ask a person to approve each round that passed everything else.

    ``interactive`` None asks inline when stdin and stderr are terminals, else waits for
    ``harness approve``. ``timeout`` bounds the wait in either mode.
    """

    name: ClassVar[str] = "human"
    timeout: float = APPROVAL_SECONDS
    interactive: bool | None = None
    poll_interval: float = 0.5
    stdin: TextIO | None = None
    stdout: TextIO | None = None

    def __post_init__(self) -> None:
        check_field(HumanGateConfig, "timeout", self.timeout)
        positive_finite("poll_interval", self.poll_interval)

    def review(self, request: ApprovalRequest, inbox: Inbox) -> Approval:
        """The person's answer to ``request``, or ``timed_out``."""
        stdin, stdout = self.stdin or sys.stdin, self.stdout or sys.stderr
        interactive = self.interactive
        if interactive is None:
            interactive = _is_tty(stdin) and _is_tty(stdout)
        if interactive:
            return self._ask_inline(request, stdin, stdout)
        return self._wait(request, inbox, stdout)

    def _ask_inline(self, request: ApprovalRequest, stdin: TextIO, stdout: TextIO) -> Approval:
        started = time.monotonic()
        deadline = started + self.timeout
        stdout.write(f"\n{request.summary.rstrip()}\n")
        while True:
            stdout.write(PROMPT.format(round=request.round))
            stdout.flush()
            line = _read_line(stdin, deadline)
            if not line:  # no answer in time, or the input ended: nobody is there
                stdout.write("\n")
                return Approval("timed_out", waited=time.monotonic() - started)
            word, _, rest = line.strip().partition(" ")
            if word.lower() in ("y", "yes"):
                return Approval("approved", waited=time.monotonic() - started)
            if word.lower() in ("n", "no"):
                note = rest.strip()
                while not note:
                    stdout.write("What should the next round change? ")
                    stdout.flush()
                    reply = _read_line(stdin, deadline)
                    if not reply:
                        break
                    note = reply.strip()
                return Approval("rejected", note=note, waited=time.monotonic() - started)

    def _wait(self, request: ApprovalRequest, inbox: Inbox, stdout: TextIO) -> Approval:
        started = time.monotonic()
        inbox.ask(request)
        what = f"action {request.action!r} of round" if request.action else "round"
        stdout.write(
            f"{what} {request.round} waits for a person: harness approve {request.loop} "
            f'[--reject "note"] (up to {self.timeout:g}s)\n'
        )
        stdout.flush()
        try:
            while (waited := time.monotonic() - started) < self.timeout:
                answer = inbox.answer_for(request.round)
                if answer is not None:
                    return Approval(answer.decision, note=answer.note, waited=waited)
                time.sleep(min(self.poll_interval, max(self.timeout - waited, 0.01)))
            return Approval("timed_out", waited=time.monotonic() - started)
        finally:
            inbox.close()


def inbox_asker(inbox: Inbox, loop: str, round_number: int) -> Callable[[str, float], Outcome]:
    """Asks a person to allow one of the agent's actions (a permission rule's ``ask``) through
    ``inbox``, which ``harness approve LOOP [--reject NOTE]`` answers; waits up to the timeout
    it is given, then answers ``timed_out``."""

    def ask(question: str, timeout: float) -> Outcome:
        gate = HumanGate(timeout=timeout, interactive=False, poll_interval=0.25)
        request = ApprovalRequest(loop=loop, round=round_number, summary=question, action=question)
        return gate.review(request, inbox).outcome

    return ask


def _read_line(stream: TextIO, deadline: float) -> str:
    """A line of ``stream``, or "" when it ends or ``deadline`` passes first."""
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream.readline()  # an in-memory stream answers at once
    ready, _, _ = select.select([fileno], [], [], max(deadline - time.monotonic(), 0))
    return stream.readline() if ready else ""


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
