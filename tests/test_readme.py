"""The README starts with the user and names every feature: its first screen takes a newcomer
from nothing to a run on their own project with their own model, and every subcommand and every
loop.toml setting is named in it (a line pointing to its page), so a new one without a README line
fails here. The first screen's commands are run by tests/cli/test_readme_first_screen.py and
tests/test_docs_commands.py."""

from __future__ import annotations

import argparse
import re

from harness.cli.main import build_parser
from harness.spec.loop_spec import LoopSpec
from tests.test_docs_commands import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = "\n".join(README.splitlines()[:60])


def subcommands() -> list[str]:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands.choices)


def test_the_first_screen_goes_from_nothing_to_a_run_on_one_s_own_project_with_one_s_model() -> (
    None
):
    steps = [
        "python3 -m venv .venv",  # nothing installed yet
        "pip install -e '.[examples]'",
        "harness run examples/bugfix",  # a first run, offline
        "harness init bugfix",  # one's own project
        'git add -A && git commit -m "harness loop"',
        "export OPENAI_API_KEY=",  # one's own model: a key
        "harness run --model gpt-4o-mini",
        "OPENAI_API_BASE=http://localhost:8000/v1 OPENAI_API_KEY=none harness run --model",  # local
        "examples/README.md",  # where to go next
    ]
    places = [FIRST_SCREEN.find(step) for step in steps]
    assert -1 not in places, [s for s, at in zip(steps, places, strict=True) if at == -1]
    assert places == sorted(places)  # in the order a newcomer takes them
    assert "`pip install -e '.[dev]' && python -m pytest -n auto`" in FIRST_SCREEN


def test_every_subcommand_is_named() -> None:
    commands = subcommands()
    assert {"run", "status", "restore", "replay", "watch", "bench"} <= set(commands)
    assert [c for c in commands if f"harness {c}" not in README] == []


def test_every_loop_toml_setting_is_named() -> None:
    """As a key (``name =``), a section (``[agent]``, ``[[gates]]``, ``[subagents.x]``) or in
    backticks."""
    fields = list(LoopSpec.model_fields)
    assert {"agent", "fleet", "triggers", "model_options"} <= set(fields)
    named = [f for f in fields if re.search(rf"(^|\[|`){f}( =|\]|`|\.)", README, re.MULTILINE)]
    assert [f for f in fields if f not in named] == []
