"""A model cascade: rounds start on the cheap model and move to the strong one after
``escalate_after`` failed rounds, told what failed; the switch and each model's cost are in the
events, ``harness report`` and the escalation report. Run as a person runs it: ``harness run``
on a git repository, with scripted models that cost something per token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.observe.events import read_events
from harness.observe.live import format_cost
from harness.outer.cascade import Cascade
from harness.spec import LoopSpec
from tests.cli.test_cli import harness_here
from tests.conftest import git, make_repo

CHEAP, STRONG = (1e-6, 2e-6), (1e-5, 3e-5)  # dollars a prompt token, a completion token


def _writes(text: str) -> list[object]:
    return [{"name": "write_file", "arguments": {"path": "out.txt", "content": text}}, "Done."]


def _script(rounds: dict[int, str], price: tuple[float, float]) -> str:
    script = {str(n): _writes(text) for n, text in rounds.items()}
    return json.dumps({"rounds": script, "cost_per_token": list(price)})


def _repo(tmp_path: Path, strong: dict[int, str], *, rounds: int = 4) -> Path:
    loop = f"""\
name = "climb"
goal = "out.txt must say yes"
max_iterations = {rounds}
[agent]
models = ["scripted:cheap", "scripted:strong"]
escalate_after = 2
[critic]
enabled = false
[[gates]]
type = "command"
name = "says yes"
cmd = "grep -qx yes out.txt"
"""
    return make_repo(
        tmp_path / "repo",
        {
            "loop.toml": loop,
            "cheap": _script({1: "no\n", 2: "maybe\n", 3: "yes\n"}, CHEAP),
            "strong": _script(strong, STRONG),
        },
    )


def test_two_failed_rounds_on_the_cheap_model_move_round_three_to_the_strong_one(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path, {3: "yes\n"})
    result = harness_here("run", "--quiet", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    branch = git(repo, "branch", "--list", "harness/*", "--format=%(refname:short)")
    assert git(repo, "show", f"{branch}:out.txt") == "yes"  # the strong model's round 3
    [run] = (repo / ".harness" / "runs").iterdir()
    events = read_events(run / "events.jsonl")
    assert [e.round for e in events if e.kind == "round_start"] == [1, 2, 3]
    calls = [e.model for e in events if e.kind == "model_call"]
    assert calls == ["scripted:cheap"] * 4 + ["scripted:strong"] * 2
    [switch] = [e for e in events if e.kind == "model_switch"]
    assert (switch.round, switch.previous, switch.model) == (3, "scripted:cheap", "scripted:strong")
    assert switch.reason == (
        "2 failed rounds on scripted:cheap (round 1 failed: says yes; round 2 failed: says yes)"
    )
    cheap_cost = sum(
        e.cost_usd for e in events if e.kind == "model_call" and e.model.endswith("cheap")
    )
    assert switch.spent_usd == pytest.approx(cheap_cost)
    assert cheap_cost > 0
    round_three = next(e for e in events if e.kind == "round_start" and e.round == 3)
    assert "ran on another model (scripted:cheap) and did not pass" in round_three.task
    assert "round 2 failed: says yes" in round_three.task  # what failed is carried
    first = next(e for e in events if e.kind == "round_start" and e.round == 1)
    assert "another model" not in first.task

    report = harness_here("report", run.name, cwd=repo)
    assert report.returncode == 0, report.stderr
    strong_cost = sum(
        e.cost_usd for e in events if e.kind == "model_call" and e.model.endswith("strong")
    )
    assert strong_cost > cheap_cost
    assert (
        f"cost by model: scripted:cheap {format_cost(cheap_cost)} (4 calls) · "
        f"scripted:strong {format_cost(strong_cost)} (2 calls)"
    ) in report.stdout
    assert (
        "round 3: scripted:cheap -> scripted:strong: 2 failed rounds on scripted:cheap"
    ) in report.stdout


def test_the_escalation_report_names_the_switch_and_each_models_cost(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {3: "no\n"}, rounds=3)
    result = harness_here("run", "--quiet", cwd=repo)
    assert result.returncode == 3, result.stdout + result.stderr
    escalation = next((repo / "progress").glob("*.escalation.md")).read_text()
    models = escalation.split("## Models\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in models.splitlines() if line]
    assert lines[0] == (
        "- round 3: scripted:cheap -> scripted:strong: 2 failed rounds on scripted:cheap "
        "(round 1 failed: says yes; round 2 failed: says yes)"
    )
    assert lines[1].startswith("- scripted:cheap: $0.0")
    assert lines[1].endswith(" in 4 calls")
    assert lines[2].startswith("- scripted:strong: $0.0")
    assert len(lines) == 3


@pytest.mark.parametrize(
    ("agent", "top", "said"),
    [
        ("models = []", "", "field 'agent.models': List should have at least 1 item"),
        ('models = ["a", "a"]', "", "field 'agent.models': Value error, 'a' is listed twice"),
        ('models = ["a", "b"]\nescalate_after = 0', "", "field 'agent.escalate_after': must be"),
        ("escalate_after = 2", "", "field 'agent.escalate_after': Value error, applies to a cascade"),
        ('models = ["a", "b"]', 'model = "c"\n', "field 'agent.models': a cascade replaces the"),
        ('models = ["a", "b"]\nrunner = "aider"', "", "a cascade needs runner 'harness'"),
    ],
)  # fmt: skip
def test_a_bad_cascade_names_its_field(tmp_path: Path, agent: str, top: str, said: str) -> None:
    (tmp_path / "loop.toml").write_text(
        f'goal = "g"\n{top}[agent]\n{agent}\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    with pytest.raises(
        ConfigError, match="^" + str(tmp_path / "loop.toml").replace("\\", "\\\\")
    ) as found:
        LoopSpec.from_toml(tmp_path)
    assert said in str(found.value)


def test_a_cascade_rounds_model_follows_from_the_round_number() -> None:
    from harness import ScriptedModel

    models = tuple(ScriptedModel(name=n) for n in ("a", "b", "c"))
    cascade = Cascade(models, escalate_after=2)
    assert [cascade.rung(n) for n in range(1, 9)] == [0, 0, 1, 1, 2, 2, 2, 2]
    with pytest.raises(ConfigError, match="^escalate_after: "):
        Cascade(models, escalate_after=0)
    with pytest.raises(ConfigError, match="^models: give at least one model"):
        Cascade(())
