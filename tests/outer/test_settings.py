"""An outer loop's keywords, checked together as its one frozen Settings is made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness import Agent, Budget, CommandGate, HumanGate, OuterLoop, ScriptedModel
from harness.core.errors import ConfigError


def settings(tmp_path: Path, **keywords: object) -> object:
    gates = keywords.pop("gates", [CommandGate("true")])
    return OuterLoop(
        "say yes", Agent(ScriptedModel(["yes"])), gates=gates, workspace=tmp_path, **keywords
    ).settings


def test_no_budget_or_none_is_the_rules_default_and_a_given_one_is_kept(tmp_path: Path) -> None:
    default = settings(tmp_path).budget  # type: ignore[attr-defined]
    assert default == Budget()
    assert settings(tmp_path, budget=None).budget == default  # type: ignore[attr-defined]
    given = Budget(tokens=500)
    assert settings(tmp_path, budget=given).budget == given  # type: ignore[attr-defined]


def test_a_human_gate_among_the_gates_is_the_person_and_not_a_check(tmp_path: Path) -> None:
    human = HumanGate(interactive=False)
    check = CommandGate("true")
    made = settings(tmp_path, gates=[check, human])
    assert made.gates == (check,)  # type: ignore[attr-defined]
    assert made.human is human  # type: ignore[attr-defined]


def test_a_run_id_not_given_or_empty_is_a_new_one(tmp_path: Path) -> None:
    ids = [settings(tmp_path, **given).run_id for given in ({}, {"run_id": ""}, {"run_id": None})]  # type: ignore[attr-defined]
    assert all(re.fullmatch(r"[0-9a-f]{8}", run_id) for run_id in ids)
    assert len(set(ids)) == 3
    assert settings(tmp_path, run_id="0000abcd").run_id == "0000abcd"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        ({"patients": 2}, "patients: unknown field"),
        ({"earlier": "fresh"}, "earlier: Input should be 'resume', 'restart', 'carry' or 'reopen', got 'fresh'"),
        ({"patience": 1}, "patience: "),
        ({"gates": []}, "gates/critic: give at least one gate or a critic"),
        ({"gates": [HumanGate(interactive=False), HumanGate(interactive=False)]}, "gates: give at most one HumanGate"),
    ],
)  # fmt: skip
def test_a_bad_keyword_is_refused_naming_it(
    tmp_path: Path, keywords: dict[str, object], said: str
) -> None:
    with pytest.raises((ConfigError, ValidationError)) as caught:
        settings(tmp_path, **keywords)
    assert str(caught.value).startswith(said)


def test_an_empty_goal_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="^goal: must not be empty$"):
        OuterLoop("  ", Agent(ScriptedModel(["yes"])), gates=[CommandGate("true")],
                  workspace=tmp_path)  # fmt: skip
