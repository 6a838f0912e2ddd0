"""loop.toml's [permissions], [[action_hooks]] and [subagents], as the agent takes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.assemble import session
from harness.assemble.named_models import named_model
from harness.core.errors import ConfigError
from harness.models.scripted import ScriptedModel
from harness.spec.loop_spec import LoopSpec

LOOP = """\
goal = "g"

[permissions]
allow = ["run_shell(pytest*)"]
ask = ["run_shell(pip install*)"]
deny = ["run_shell(git push*)", "write_file(tests/*)", "mcp__github__*"]
ask_timeout = 30

[[action_hooks]]
name = "lint"
when = "after"
command = "ruff check ."
tools = ["write_file", "edit_file"]

[subagents]
max_depth = 2

[subagents.profiles.searcher]
model = "scripted:child.json"
system_prompt = "You search."
tools = ["search", "read_file"]
max_steps = 7
"""


def test_the_sections_reach_the_agent_as_written(tmp_path: Path) -> None:
    (tmp_path / "child.json").write_text(json.dumps(["found it"]))
    (tmp_path / "loop.toml").write_text(LOOP)
    spec = LoopSpec.from_toml(tmp_path / "loop.toml")
    rules = session.permissions(spec)
    assert rules is not None
    assert rules.decide("run_shell", {"command": "bash -c 'git push'"}).verdict == "deny"
    assert rules.ask_timeout == 30
    (hook,) = session.action_hooks(spec)
    assert (hook.name, hook.when, hook.run, hook.tools) == (
        "lint",
        "after",
        "ruff check .",
        ("write_file", "edit_file"),
    )
    subagents = session.subagents(spec, lambda name: named_model(name, spec))
    assert subagents is not None
    assert subagents.max_depth == 2
    searcher = subagents.profiles["searcher"]
    assert isinstance(searcher.model, ScriptedModel)
    assert searcher.model.name == "scripted:child.json"
    assert (searcher.system_prompt, searcher.tools, searcher.max_steps) == (
        "You search.",
        ("search", "read_file"),
        7,
    )


def test_no_rules_and_no_subagents_give_the_agent_nothing(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text('goal = "g"\n')
    spec = LoopSpec.from_toml(tmp_path / "loop.toml")
    assert session.permissions(spec) is None
    assert session.action_hooks(spec) == ()
    assert session.subagents(spec, lambda name: ScriptedModel([])) is None


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ('[[action_hooks]]\nname = "x"\nwhen = "during"\ncommand = "true"\n', "when"),
        ("[subagents]\nmax_depth = 9\n", "max_depth"),
        ("[subagents.profiles.a]\nmax_step = 3\n", "max_step"),
        ('[permissions]\ndefault = "maybe"\n', "default"),
    ],
)
def test_mistakes_are_named(tmp_path: Path, extra: str, named: str) -> None:
    (tmp_path / "loop.toml").write_text(f'goal = "g"\n{extra}')
    with pytest.raises(ConfigError, match=named):
        LoopSpec.from_toml(tmp_path / "loop.toml")
