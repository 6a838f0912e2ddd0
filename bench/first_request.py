"""How many prompt tokens the first request of a round costs, for each bundled example.

Each example runs in a temporary git checkout (its own worktree and branch, as a user's run has
them) with its scripted trajectory; the first request the author's model received is counted with
the gpt-4o-mini tokenizer (offline), split into the system prompt, the task and the tool schemas.

    python bench/first_request.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.assemble.build import build_loop  # noqa: E402
from harness.assemble.named_models import Overrides  # noqa: E402
from harness.core.sink import NULL_SINK  # noqa: E402
from harness.models.scripted import ScriptedModel  # noqa: E402
from harness.models.tokens import TokenCounter  # noqa: E402
from harness.spec import LoopSpec  # noqa: E402

EXAMPLES = ("bugfix", "content", "research", "web-research")
TARGET = 1_500
_LEFTOVERS = shutil.ignore_patterns(".harness", "__pycache__", ".pytest_cache", ".ruff_cache")


def first_request(example: str, scratch: Path) -> tuple[int, int, int, int]:
    """(total, system, task, tools) tokens of the example's first author request."""
    folder = scratch / "examples" / example  # examples name their skill as ../../skills/...
    shutil.copytree(ROOT / "examples" / example, folder, ignore=_LEFTOVERS)
    _commit(scratch, f"the {example} example")
    config = LoopSpec.from_toml(folder)
    script = folder / "scripted-trajectory.json"
    overrides = Overrides(model=f"scripted:{script}", earlier="restart")
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


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


def main() -> None:
    print(f"First request of round 1, prompt tokens (gpt-4o-mini tokenizer; target <= {TARGET:,})")
    print(f"  {'example':<12} {'total':>6} {'system':>7} {'task':>6} {'tools':>6}  tools share")
    with tempfile.TemporaryDirectory() as parent:  # the runs' worktrees are made beside repo
        repo = Path(parent) / "repo"
        shutil.copytree(ROOT / "skills", repo / "skills")
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "config", "user.email", "bench@example.com")
        _git(repo, "config", "user.name", "Bench")
        _commit(repo, "skills")
        for example in EXAMPLES:
            total, system, task, tools = first_request(example, repo)
            mark = "ok" if total <= TARGET else "OVER"
            print(
                f"  {example:<12} {total:>6} {system:>7} {task:>6} {tools:>6}  "
                f"{tools / total:>6.0%}  {mark}"
            )


if __name__ == "__main__":
    main()
