"""What recording a session costs ``ScriptedModel``'s memory, by the session's length.

An ``Agent`` runs sessions of ``--steps`` tool calls (``read_file`` of a small file, then a final
answer) against a ``ScriptedModel``; after each session, the memory still held by the model (its
record of the requests, :attr:`ScriptedModel.calls`) is measured with ``tracemalloc`` as what is
freed when the model is dropped. Each length runs in a fresh process. The target: the memory per
step of the longest session at most 1.5 times that of the shortest (flat in the session's
length; a record that copies the whole history per request grows with the square of it).

    python bench/scripted_memory.py [--steps 250 500 1000]
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = 1.5
"""The most the memory per step of the longest session may be, over the shortest's."""


def measure(steps: int) -> int:
    """Bytes the model holds after a session of ``steps`` tool calls (in this process)."""
    from harness import Agent, ScriptedModel, ToolCall

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "notes.txt").write_text("".join(f"line {n}\n" for n in range(20)))
        script: list[object] = [
            ToolCall("read_file", {"path": "notes.txt", "start_line": n % 20 + 1})
            for n in range(steps)
        ]
        model = ScriptedModel([*script, "done"])
        agent = Agent(model, max_steps=steps + 1, compaction="none")
        tracemalloc.start()
        run = agent.run("read the notes", workspace=folder)
        assert run.steps >= steps, run.stop_reason
        del run, agent
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        del model
        gc.collect()
        freed = held - tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    return freed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a measuring child
    args = parser.parse_args()
    if args.one is not None:
        print(measure(args.one))
        return
    print("Memory ScriptedModel holds after one session (tracemalloc, fresh process each)")
    per_step = {}
    for steps in sorted(args.steps):
        child = [sys.executable, __file__, "--one", str(steps)]
        held = int(subprocess.run(child, capture_output=True, text=True, check=True).stdout)
        per_step[steps] = held / steps
        print(
            f"  {steps:>6} steps: {held / 2**20:8.2f} MiB  ({held / steps / 1024:7.2f} KiB a step)"
        )
    shortest, longest = min(per_step), max(per_step)
    ratio = per_step[longest] / per_step[shortest]
    mark = "met" if ratio <= TARGET else "NOT met"
    print(
        f"per step at {longest} steps / at {shortest} steps: {ratio:.2f}"
        f" (target <= {TARGET}) {mark}"
    )


if __name__ == "__main__":
    main()
