"""What recording a trajectory costs: CPU per step, and the size of a long session's file.

One agent session of ``--steps`` tool calls runs in-process over a ScriptedModel behind the
MeteredModel every run uses, once recording to a trajectory and once not. As in a run, each
session keeps an event log (``--no-events``: none), and the model's requests, the event log and
the trajectory are redacted by the same redactor. Each tool call returns
one of ``--distinct`` long observations (``--chars`` characters each) in turn, as a session that
reads the same files or runs the same tests again does.

The two sessions run side by side in two threads that take turns, ``--turn`` steps at a time
(one runs while the other waits): both meet the same moments of a shared machine's load, which
moves a whole session's CPU by ten per cent and more between one second and the next, and every
step but a turn's first follows a step of its own session, with the caches as a run leaves them.
CPU is each thread's own (``time.thread_time``). Printed, over ``--runs`` such pairs: the median
CPU per step of each, the median of the pairs' ratios (the recording's share of a step), the
recording's own CPU, timed around each of the trajectory's calls (:class:`TimedLog`; what the
difference holds beyond it is the recording's effect on the rest of the step: caches, the system
calls of its writes), and the trajectory's size (its lines, and the side folder of long texts)
for one session. Pinned to one core the pairs vary least:

    taskset -c 1 python bench/trajectory_cost.py [--steps 1000] [--runs 9] [--turn 50] \
        [--chars 8000] [--distinct 5] [--no-events]

``--one plain`` or ``--one recorded`` runs a single session of that kind and prints nothing, for
counting its CPU instructions and simulating its caches, which no other work on the machine
changes:

    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
        python bench/trajectory_cost.py --one recorded --steps 1000
    # the same with --one plain, and with --steps 0: the differences, per step, are the figures
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agent.agent import Agent, AgentStop  # noqa: E402
from harness.core.event_schema import RoundStart  # noqa: E402
from harness.core.redact import Redactor  # noqa: E402
from harness.core.sink import NULL_SINK, EventSink, Tee  # noqa: E402
from harness.models.base import ToolCall  # noqa: E402
from harness.models.budget import MeteredModel  # noqa: E402
from harness.models.scripted import ScriptedModel  # noqa: E402
from harness.observe.events import EVENTS_FILE, EventLog  # noqa: E402
from harness.observe.trajectory import BLOBS_DIR, TRAJECTORY_FILE  # noqa: E402
from harness.observe.trajectory_log import TrajectoryLog  # noqa: E402
from harness.tools import Tool, tool  # noqa: E402


class TimedLog(TrajectoryLog):
    """A trajectory that adds the time spent in its model and tool calls to ``spent``, read on
    ``clock``: by default ``time.perf_counter``, read without a system call, so the timing adds
    little to the session it times (a thread's CPU clock is a system call in a virtual machine,
    four a step); the calls never wait, so their time is the thread's CPU where no other thread
    runs meanwhile."""

    spent = 0.0
    clock = staticmethod(time.perf_counter)

    def model_call(self, *fields: Any) -> None:
        started = self.clock()
        super().model_call(*fields)
        self.spent += self.clock() - started

    def tool_call(self, *fields: Any) -> None:
        started = self.clock()
        super().tool_call(*fields)
        self.spent += self.clock() - started


class Turns:
    """Two sessions, 0 and 1, taking turns ``steps`` steps at a time, ``first`` first; one that
    ends hands the machine to the other for good."""

    def __init__(self, steps: int, first: int) -> None:
        self.steps = steps
        self._turn = first
        self._done = [False, False]
        self._changed = threading.Condition()

    def wait(self, me: int) -> None:
        """Until it is ``me``'s turn."""
        with self._changed:
            self._changed.wait_for(lambda: self._turn == me or self._done[1 - me])

    def step(self, me: int, n: int) -> None:
        """``me`` is at its ``n``-th step: at the end of a turn, the other's begins."""
        if n and n % self.steps == 0:
            self._hand_over(me)
            self.wait(me)

    def done(self, me: int) -> None:
        self._done[me] = True
        self._hand_over(me)

    def _hand_over(self, me: int) -> None:
        with self._changed:
            self._turn = 1 - me
            self._changed.notify_all()


def observation_tool(
    chars: int, distinct: int, at_step: Callable[[int], None] = lambda n: None
) -> Tool:
    """The session's one tool: the ``n``-th observation; ``at_step(n)`` is called first."""
    texts = [f"observation {i}\n" + (f"line {i} " * chars)[:chars] for i in range(distinct)]

    @tool
    def observe(n: int) -> str:
        """Return the n-th observation.

        Args:
            n: which step asks.
        """
        at_step(n)
        return texts[n % distinct]

    return observe


def session(
    steps: int,
    observe: Tool,
    trajectory: EventSink,
    redactor: Redactor,
    workspace: Path,
    events: EventSink = NULL_SINK,
) -> float:
    """CPU seconds of this thread in one session of ``steps`` tool calls and a final answer;
    recorded when ``trajectory`` is a trajectory (not :data:`NULL_SINK`), which then receives
    every event after ``events``, as a run's record sends them."""
    script: list[object] = [ToolCall("observe", {"n": n}) for n in range(steps)] + ["done"]
    sink = events if trajectory is NULL_SINK else Tee(events, trajectory)
    model = MeteredModel(
        ScriptedModel(script, context_window=10_000_000),  # type: ignore[arg-type]
        redact=redactor.redact_text,
        events=sink,
    )
    sink.emit(RoundStart(round=1, max_iterations=1))
    agent = Agent(model, [observe], max_steps=steps + 1, compaction="none", max_repeats=steps)
    started = time.thread_time()
    run = agent.run("observe every step", workspace, events=sink)
    spent = time.thread_time() - started
    assert run.stop_reason is AgentStop.ANSWERED, run.stop_message
    return spent


def event_log(events: bool, folder: Path, redactor: Redactor) -> EventSink:
    """The session's event log in ``folder``, as a run keeps one; none without ``events``."""
    return (
        EventLog(folder / EVENTS_FILE, run_id="bench", redactor=redactor) if events else NULL_SINK
    )


def side_by_side(
    steps: int, turns: Turns, observations: tuple[int, int], events: bool, folder: Path,
    workspace: Path,
) -> tuple[float, float, float]:  # fmt: skip
    """CPU seconds of an unrecorded and a recorded session run in ``turns`` (0 and 1), and the
    recording's own CPU in its calls."""
    log = TimedLog(folder / TRAJECTORY_FILE, redactor=Redactor())
    kinds: list[tuple[EventSink, Redactor]] = [
        (NULL_SINK, Redactor()),
        (log, log.redactor),
    ]
    spent = [0.0, 0.0]

    def run(me: int) -> None:
        observe = observation_tool(*observations, lambda n: turns.step(me, n))
        sink, redactor = kinds[me]
        logged = event_log(events, folder / f"session{me}", redactor)
        turns.wait(me)
        try:
            spent[me] = session(steps, observe, sink, redactor, workspace, logged)
        finally:
            turns.done(me)

    threads = [threading.Thread(target=run, args=(me,)) for me in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return spent[0], spent[1], log.spent


def one(kind: str, steps: int, observe: Tool, events: bool) -> None:
    """A warm-up and one session of ``kind``, and nothing else."""
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        session(10, observe, NULL_SINK, Redactor(), workspace)
        folder = Path(scratch) / "run"
        log = TrajectoryLog(folder / TRAJECTORY_FILE, redactor=Redactor())
        sink, redactor = (log, log.redactor) if kind == "recorded" else (NULL_SINK, Redactor())
        session(steps, observe, sink, redactor, workspace, event_log(events, folder, redactor))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--turn", type=int, default=50, help="steps a session runs at a time")
    parser.add_argument("--chars", type=int, default=8000)
    parser.add_argument("--distinct", type=int, default=5)
    parser.add_argument("--one", choices=("plain", "recorded"))
    parser.add_argument(
        "--no-events", action="store_true", help="no event log (a run always keeps one)"
    )
    args = parser.parse_args()
    events = not args.no_events
    if args.one is not None:
        one(args.one, args.steps, observation_tool(args.chars, args.distinct), events)
        return
    calls = args.steps + 1
    plain: list[float] = []
    recorded: list[float] = []
    own: list[float] = []  # the recording's CPU in its own calls
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        warm_up = observation_tool(args.chars, args.distinct)
        session(10, warm_up, NULL_SINK, Redactor(), workspace)  # the tokenizer loads once
        for run in range(args.runs):
            folder = Path(scratch) / f"run{run}"
            turns = Turns(args.turn, first=run % 2)
            observations = (args.chars, args.distinct)
            times = side_by_side(args.steps, turns, observations, events, folder, workspace)
            plain.append(times[0] / calls)
            recorded.append(times[1] / calls)
            own.append(times[2] / calls)
        size = (folder / TRAJECTORY_FILE).stat().st_size
        blobs = sum(p.stat().st_size for p in (folder / BLOBS_DIR).iterdir())
    per_plain, per_recorded = statistics.median(plain), statistics.median(recorded)
    shares = sorted(r / p - 1 for p, r in zip(plain, recorded, strict=True))
    mine = statistics.median(own)
    print(f"steps per session:            {args.steps} ({args.distinct} distinct observations "
          f"of {args.chars} characters), {'an' if events else 'no'} event log, "
          f"{args.runs} pairs in turns of {args.turn} steps")  # fmt: skip
    print(f"CPU per step, not recorded:   {per_plain * 1000:.3f} ms")
    print(f"CPU per step, recorded:       {per_recorded * 1000:.3f} ms")
    print(f"recording's share of a step:  {statistics.median(shares):+.1%} (median of the pairs; "
          f"from {shares[0]:+.1%} to {shares[-1]:+.1%}; target <= 5 %)")  # fmt: skip
    print(f"recording's own CPU per step: {mine * 1000:.3f} ms ({mine / per_plain:+.1%}; timed in "
          "its calls)")  # fmt: skip
    print(f"trajectory of one session:    {(size + blobs) / 1e6:.2f} MB "
          f"({size / 1e6:.2f} MB of lines, {blobs / 1e6:.2f} MB of stored texts; target < 10 MB)")  # fmt: skip


if __name__ == "__main__":
    main()
