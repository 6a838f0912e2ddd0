"""How many prompt tokens the first request of a round costs, for each bundled example.

Each example runs in a temporary copy with its scripted trajectory; the first request the
author's model received is counted with the gpt-4o-mini tokenizer (offline), split into the
system prompt, the task and the tool schemas.

    python bench/first_request.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.core.sink import NULL_SINK  # noqa: E402
from harness.models.scripted import ScriptedModel  # noqa: E402
from harness.models.tokens import TokenCounter  # noqa: E402
from harness.spec import LoopSpec  # noqa: E402
from harness.spec.build import Overrides, build_loop  # noqa: E402

EXAMPLES = ("bugfix", "content", "research")
TARGET = 1_500


def first_request(example: str, scratch: Path) -> tuple[int, int, int, int]:
    """(total, system, task, tools) tokens of the example's first author request."""
    folder = scratch / "examples" / example  # examples name their skill as ../../skills/...
    shutil.copytree(ROOT / "examples" / example, folder)
    config = LoopSpec.from_toml(folder).with_changes(isolation="none")  # the copy is no git repo
    script = folder / "scripted-trajectory.json"
    overrides = Overrides(model=f"scripted:{script}", restart=True)
    loop = build_loop(config, overrides=overrides, events=NULL_SINK)
    model = loop.settings.agent.model
    assert isinstance(model, ScriptedModel)
    loop.run()
    call = model.calls[0]
    counter = TokenCounter("gpt-4o-mini")
    system, task = call.messages[0], call.messages[1]
    return (
        counter.count_request(call.messages, call.tools),
        counter.count_message(system),
        counter.count_message(task),
        counter.count_tools(call.tools),
    )


def main() -> None:
    print(f"First request of round 1, prompt tokens (gpt-4o-mini tokenizer; target <= {TARGET:,})")
    print(f"  {'example':<10} {'total':>6} {'system':>7} {'task':>6} {'tools':>6}  tools share")
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(ROOT / "skills", Path(scratch) / "skills")
        for example in EXAMPLES:
            total, system, task, tools = first_request(example, Path(scratch))
            mark = "ok" if total <= TARGET else "OVER"
            print(
                f"  {example:<10} {total:>6} {system:>7} {task:>6} {tools:>6}  "
                f"{tools / total:>6.0%}  {mark}"
            )


if __name__ == "__main__":
    main()
