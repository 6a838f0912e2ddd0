"""CPU per agent step: the harness's Agent against a bare litellm loop, same server, same replies.

A local OpenAI-compatible server (tests/openai_server.py) runs in a child process, so only the
client's CPU is measured (``time.process_time``, litellm's own logging threads included). Each
trajectory is ``--steps`` tool-call replies (``read_file`` from a different line each time) then a
final answer. The bare loop sends the same messages (the harness's system prompt, observations
in read_file's numbered format) and tool schemas through ``litellm.completion`` and reads the
lines asked for itself (the tool's work, without validation or confinement); the harness runs
``Agent`` over ``MeteredModel(LiteLLMModel)``, its tools executed for real. Trajectories
run in pairs, back to back, the first of a pair alternating between the two loops (what one
trajectory leaves behind, such as garbage to collect, lands on both equally); the medians over
``--runs`` pairs are printed, and the median of the pairs' ratios (a load change on the machine
shifts both halves of a pair).

    python bench/step_cpu.py [--steps 20] [--runs 21]

With ``--trajectory`` the pairs are the harness's Agent twice, once recording its trajectory
(:class:`~harness.observe.trajectory_log.TrajectoryLog`, redacted as in a run) and once not: the
recording's share of a step as a run through litellm pays it.

    python bench/step_cpu.py --trajectory [--steps 300] [--runs 5]

The recording's own CPU is printed too, timed in the thread around each of its calls
(``time.thread_time``): the part of the difference that is the recording's work, without what
a full garbage collection (a third of a second with litellm loaded, once or twice in a long
session, in either half of a pair) adds to whichever trajectory it falls in.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import trajectory_cost  # noqa: E402

from harness.agent.agent import DEFAULT_SYSTEM_PROMPT, Agent, AgentStop  # noqa: E402
from harness.core.event_schema import RoundStart  # noqa: E402
from harness.core.sink import NULL_SINK, EventSink  # noqa: E402
from harness.models.budget import Budget, Meter, MeteredModel  # noqa: E402
from harness.models.litellm_model import LiteLLMModel, load_litellm  # noqa: E402
from harness.observe.trajectory import TRAJECTORY_FILE  # noqa: E402
from harness.tools import Toolbox, default_tools  # noqa: E402


class TimedLog(trajectory_cost.TimedLog):
    """Timed on the thread's CPU clock: litellm's own threads take the interpreter in the middle
    of a call, and the wall clock would count their work as the recording's."""

    clock = staticmethod(time.thread_time)


MODEL = "openai/gpt-4o-mini"
SERVER = """
import sys, json
sys.path.insert(0, {root!r})
from tests.openai_server import OpenAIServer, Text, ToolCalls
server = OpenAIServer(deadline=1800).start()
for _ in range({trajectories}):
    for step in range({steps}):
        args = json.dumps({{"path": "notes.txt", "start_line": step % 40 + 1}})
        server.queue(ToolCalls(((f"call_{{step}}", "read_file", args),),
                               prompt_tokens=900 + 120 * step, completion_tokens=25))
    server.queue(Text("done", prompt_tokens=3400, completion_tokens=5))
print(server.api_base, flush=True)
sys.stdin.read()
server.stop()
"""


def bare(api_base: str, steps: int, workspace: Path) -> float:
    """CPU seconds of one trajectory through litellm alone."""
    litellm = load_litellm()
    tools = Toolbox(default_tools()).schemas()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "Read notes.txt line by line."},
    ]
    started = time.process_time()
    for _ in range(steps + 1):
        response = litellm.completion(
            model=MODEL, messages=messages, tools=tools, api_base=api_base, api_key="sk-bench",
            timeout=30, num_retries=0, max_tokens=1024,
        )  # fmt: skip
        message = response.choices[0].message
        calls = message.tool_calls or []
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ],
            }
        )
        if not calls:
            break
        for call in calls:
            start = json.loads(call.function.arguments)["start_line"]
            lines = (workspace / "notes.txt").read_text().splitlines()
            shown = lines[start - 1 :]
            observation = "\n".join(f"{start + i:6}\t{line}" for i, line in enumerate(shown))
            if start > 1:
                observation += f"\n(lines {start}-{len(lines)} of {len(lines)})"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
    return time.process_time() - started


RECORDING: list[float] = []
"""The recording's own CPU seconds per step, one entry per recorded trajectory."""


def harness(api_base: str, steps: int, workspace: Path, *, recorded: bool = False) -> float:
    """CPU seconds of one trajectory through the harness's agent (its trajectory recorded in
    a folder of its own with ``recorded``)."""
    model = LiteLLMModel(MODEL, api_base=api_base, api_key="sk-bench", timeout=30, num_retries=0)
    log = TimedLog(Path(tempfile.mkdtemp()) / TRAJECTORY_FILE) if recorded else None
    meter = Meter(Budget(tokens=100_000_000))
    metered = MeteredModel(model, meter)
    events: EventSink = NULL_SINK
    if log is not None:
        metered = MeteredModel(model, meter, redact=log.redactor.redact_text, events=log)
        log.emit(RoundStart(round=1, max_iterations=1))
        events = log
    agent = Agent(metered, max_steps=steps + 1, max_repeats=steps + 1)
    started = time.process_time()
    run = agent.run("Read notes.txt line by line.", workspace, events=events)
    elapsed = time.process_time() - started
    assert run.stop_reason is AgentStop.ANSWERED, run.stop_message
    if log is not None:
        RECORDING.append(log.spent / (steps + 1))
        shutil.rmtree(log.path.parent)
    return elapsed


def recorded(api_base: str, steps: int, workspace: Path) -> float:
    """CPU seconds of one trajectory through the harness's agent, recorded."""
    return harness(api_base, steps, workspace, recorded=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--trajectory", action="store_true", help="recorded against not")
    args = parser.parse_args()
    first, second = (harness, recorded) if args.trajectory else (bare, harness)
    trajectories = 2 * (args.runs + 1)
    code = SERVER.format(root=str(ROOT), trajectories=trajectories, steps=args.steps)
    server = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        api_base = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as folder:
            workspace = Path(folder)
            (workspace / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 41)))
            first(api_base, args.steps, workspace)  # warm up: imports, tokenizer, connections
            second(api_base, args.steps, workspace)
            cpu: dict[Any, list[float]] = {first: [], second: []}
            for run in range(args.runs):
                for loop in (first, second) if run % 2 == 0 else (second, first):
                    cpu[loop].append(loop(api_base, args.steps, workspace) / (args.steps + 1))
            bare_cpu, harness_cpu = cpu[first], cpu[second]
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    b, h = statistics.median(bare_cpu), statistics.median(harness_cpu)
    ratio = statistics.median(x / y for x, y in zip(harness_cpu, bare_cpu, strict=True))
    print(f"CPU per step, median of {args.runs} trajectories of {args.steps} tool steps + answer")
    if args.trajectory:
        print(f"  harness Agent            {b * 1000:7.3f} ms")
        print(f"  harness Agent, recorded  {h * 1000:7.3f} ms")
        print(f"  recording's share        {h / b - 1:+7.1%}   (median pair {ratio - 1:+.1%}; "
              "target <= 5 %)")  # fmt: skip
        own = statistics.median(RECORDING[1:])  # the warm-up's left out
        print(f"  recording's own CPU      {own * 1000:7.3f} ms   ({own / b:+.1%} of the unrecorded "
              "step; timed in its calls)")  # fmt: skip
        return
    print(f"  bare litellm loop   {b * 1000:7.2f} ms")
    print(f"  harness Agent       {h * 1000:7.2f} ms")
    print(f"  ratio of medians    {h / b:7.3f}x")
    print(f"  median pair ratio   {ratio:7.3f}x   (target <= 1.05x)")
    summary = {"bare_ms": round(b * 1000, 3), "harness_ms": round(h * 1000, 3)}
    print(json.dumps({**summary, "ratio": round(ratio, 4)}))


if __name__ == "__main__":
    main()
