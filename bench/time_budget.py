"""How far a run overshoots ``Budget(seconds=...)`` when the time runs out inside a call.

Three cases, each a full outer loop with a 5 s time budget: a scripted model that hangs for 30 s,
a ``sleep 30`` through ``run_shell``, and a provider on 127.0.0.1 that never answers (litellm's
real HTTP path; its import is done before the clock starts). Each is run ``--repeat`` times and
the median wall time and overshoot (wall time minus the budget) are printed.

Run from the repository root: ``python -m bench.time_budget [--repeat 3] [--budget 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' server, when run as a script

from harness import Agent, Budget, CommandGate, LiteLLMModel, OuterLoop, ScriptedModel, ToolCall  # noqa: E402
from harness.models.base import Message, Model, ToolSchema  # noqa: E402
from tests.openai_server import Hang, OpenAIServer  # noqa: E402


def _repo(folder: Path) -> Path:
    folder.mkdir()
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "base")):
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=folder, check=True
        )
    return folder


def _hung_model() -> Model:
    def hang(messages: list[Message], tools: list[ToolSchema] | None) -> str:
        time.sleep(30)
        return "too late"

    return ScriptedModel([hang])


def _sleeping_shell() -> Model:
    return ScriptedModel([ToolCall("run_shell", {"command": "sleep 30"}), "done"])


def _timed(model: Model, budget: float) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        result = OuterLoop(
            "make the gate pass",
            Agent(model),
            gates=[CommandGate("false")],
            workspace=_repo(Path(tmp) / "repo"),
            budget=Budget(seconds=budget),
            max_iterations=3,
        ).run()
        return time.monotonic() - started, result.stop_reason.value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=5.0)
    args = parser.parse_args()
    with OpenAIServer(deadline=600) as server:

        def provider() -> Model:
            server.queue(Hang(seconds=30))
            model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.api_base, api_key="sk-x")
            model.count_tokens([{"role": "user", "content": "warm up"}])
            model.price_per_token()
            return model

        cases: dict[str, Callable[[], Model]] = {
            "hung scripted model": _hung_model,
            "sleep 30 in run_shell": _sleeping_shell,
            "provider that never answers": provider,
        }
        print(f"time budget {args.budget:g}s, {args.repeat} runs each (median)")
        for name, make in cases.items():
            runs = [_timed(make(), args.budget) for _ in range(args.repeat)]
            wall = statistics.median(took for took, _ in runs)
            stops = sorted({stop for _, stop in runs})
            print(
                f"{name:30} wall {wall:5.2f}s  overshoot {wall - args.budget:5.2f}s  "
                f"stop {', '.join(stops)}"
            )


if __name__ == "__main__":
    main()
