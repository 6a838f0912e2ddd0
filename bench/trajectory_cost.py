"""What recording a trajectory costs: CPU per step, and the size of a long session's file.

One agent session of ``--steps`` tool calls runs in-process over a ScriptedModel behind the
MeteredModel every run uses, once recording to a trajectory and once not, in pairs, back to back
(the first of a pair alternating); CPU is ``time.process_time``. As in a run, the model's
requests and the trajectory are redacted by the same redactor. Each tool call returns one of
``--distinct`` long observations (``--chars`` characters each) in turn, as a session that reads
the same files or runs the same tests again does. Printed: the median CPU per step of each, the
recording's share of a step, and the trajectory's size (its lines, and the side folder of long
texts) for one session. The least CPU of each is printed too: on a shared machine, other work
only ever adds to a session's CPU time (through caches and shared cores), so the least is the
steadier figure there. The recording's own CPU is printed as well, timed in the thread around
each of the trajectory's calls (:class:`TimedLog`): what the difference holds beyond it is the
recording's effect on the rest of the step (caches, the system calls of its writes).

    python bench/trajectory_cost.py [--steps 1000] [--runs 3] [--chars 8000] [--distinct 5]

``--one plain`` or ``--one recorded`` runs a single session of that kind and prints nothing, for
counting its CPU instructions, which no other work on the machine changes:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python bench/trajectory_cost.py --one recorded --steps 1000
    # the same with --one plain, and with --steps 0: the differences, per step, are the figures
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.agent.agent import Agent, AgentStop  # noqa: E402
from harness.core.redact import Redactor  # noqa: E402
from harness.core.trajectory_schema import NULL_TRAJECTORY, RoundBegin, TrajectorySink  # noqa: E402
from harness.models.base import ToolCall  # noqa: E402
from harness.models.budget import MeteredModel  # noqa: E402
from harness.models.scripted import ScriptedModel  # noqa: E402
from harness.observe.trajectory import BLOBS_DIR, TRAJECTORY_FILE  # noqa: E402
from harness.observe.trajectory_log import TrajectoryLog  # noqa: E402
from harness.tools import Tool, tool  # noqa: E402


class TimedLog(TrajectoryLog):
    """A trajectory that adds the thread's CPU time in its model and tool calls to ``spent``."""

    spent = 0.0

    def model_call(self, **fields: Any) -> None:
        started = time.thread_time()
        super().model_call(**fields)
        self.spent += time.thread_time() - started

    def tool_call(self, **fields: Any) -> None:
        started = time.thread_time()
        super().tool_call(**fields)
        self.spent += time.thread_time() - started


def observation_tool(chars: int, distinct: int) -> Tool:
    texts = [f"observation {i}\n" + (f"line {i} " * chars)[:chars] for i in range(distinct)]

    @tool
    def observe(n: int) -> str:
        """Return the n-th observation.

        Args:
            n: which step asks.
        """
        return texts[n % distinct]

    return observe


def session(
    steps: int, observe: Tool, trajectory: TrajectorySink, redactor: Redactor, workspace: Path
) -> float:
    """CPU seconds of one session of ``steps`` tool calls and a final answer."""
    script: list[object] = [ToolCall("observe", {"n": n}) for n in range(steps)] + ["done"]
    model = MeteredModel(
        ScriptedModel(script, context_window=10_000_000),  # type: ignore[arg-type]
        redact=redactor.redact_text,
        trajectory=trajectory,
    )
    trajectory.record(RoundBegin(round=1))
    agent = Agent(model, [observe], max_steps=steps + 1, compaction="none", max_repeats=steps)
    started = time.process_time()
    run = agent.run("observe every step", workspace)
    spent = time.process_time() - started
    assert run.stop_reason is AgentStop.ANSWERED, run.stop_message
    return spent


def one(kind: str, steps: int, observe: Tool) -> None:
    """A warm-up and one session of ``kind``, and nothing else."""
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        session(10, observe, NULL_TRAJECTORY, Redactor(), workspace)
        log = TrajectoryLog(Path(scratch) / "run" / TRAJECTORY_FILE, redactor=Redactor())
        sink, redactor = (
            (log, log.redactor) if kind == "recorded" else (NULL_TRAJECTORY, Redactor())
        )
        session(steps, observe, sink, redactor, workspace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chars", type=int, default=8000)
    parser.add_argument("--distinct", type=int, default=5)
    parser.add_argument("--one", choices=("plain", "recorded"))
    args = parser.parse_args()
    observe = observation_tool(args.chars, args.distinct)
    if args.one is not None:
        one(args.one, args.steps, observe)
        return
    plain: list[float] = []
    recorded: list[float] = []
    own: list[float] = []  # the recording's CPU in its own calls
    size = blobs = 0
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        session(10, observe, NULL_TRAJECTORY, Redactor(), workspace)  # the tokenizer loads once
        for run in range(args.runs):
            folder = Path(scratch) / f"run{run}"
            log = TimedLog(folder / TRAJECTORY_FILE, redactor=Redactor())
            order = [("plain", NULL_TRAJECTORY, Redactor()), ("recorded", log, log.redactor)]
            for name, sink, redactor in order if run % 2 == 0 else reversed(order):
                spent = session(args.steps, observe, sink, redactor, workspace)
                (plain if name == "plain" else recorded).append(spent)
            own.append(log.spent / (args.steps + 1))
            size = (folder / TRAJECTORY_FILE).stat().st_size
            blobs = sum(p.stat().st_size for p in (folder / BLOBS_DIR).iterdir())
    per_plain = statistics.median(plain) / (args.steps + 1)
    per_recorded = statistics.median(recorded) / (args.steps + 1)
    share = (per_recorded - per_plain) / per_plain
    print(f"steps per session:            {args.steps} ({args.distinct} distinct observations "
          f"of {args.chars} characters)")  # fmt: skip
    print(f"CPU per step, not recorded:   {per_plain * 1000:.3f} ms")
    print(f"CPU per step, recorded:       {per_recorded * 1000:.3f} ms")
    print(f"recording's CPU per step:     {(per_recorded - per_plain) * 1000:.3f} ms")
    print(f"recording's share of a step:  {share:+.1%} of this scripted step (target <= 5 %)")
    mine = statistics.median(own)
    print(f"recording's own CPU per step: {mine * 1000:.3f} ms ({mine / per_plain:+.1%}; timed in "
          "its calls)")  # fmt: skip
    least_plain, least_recorded = min(plain) / (args.steps + 1), min(recorded) / (args.steps + 1)
    print(f"the least of each (a busy machine only adds): {least_plain * 1000:.3f} ms and "
          f"{least_recorded * 1000:.3f} ms a step, "
          f"{(least_recorded - least_plain) / least_plain:+.1%}")  # fmt: skip
    print(f"trajectory of one session:    {(size + blobs) / 1e6:.2f} MB "
          f"({size / 1e6:.2f} MB of lines, {blobs / 1e6:.2f} MB of stored texts; target < 10 MB)")  # fmt: skip


if __name__ == "__main__":
    main()
