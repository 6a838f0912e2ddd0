"""``[critic]`` with ``[[critic.panel]]`` in loop.toml: what it builds, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.assemble.build_critic import loop_critic
from harness.assemble.named_models import Overrides
from harness.core.errors import ConfigError
from harness.models.family import model_family, other_families_first
from harness.spec import LoopSpec
from harness.verify.critic import Critic
from harness.verify.human import HumanGate
from harness.verify.panel import CriticPanel

SKILL = """\
---
threshold: 7
---
# Report
## Success
Every claim cites a source.
## Critic rubric
- must: Every claim cites a source.
- It reads clearly. (weight 2)
"""


def spec(folder: Path, critic: str, *, model: str = "scripted:author.json") -> LoopSpec:
    folder.mkdir(exist_ok=True)
    for name in ("author", "a", "b", "c"):
        (folder / f"{name}.json").write_text("[]", encoding="utf-8")
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (folder / "loop.toml").write_text(
        f'goal = "A sourced report"\nmodel = "{model}"\nskill = "SKILL.md"\ngates = []\n{critic}',
        encoding="utf-8",
    )
    return LoopSpec.from_toml(folder)


PANEL = """
[critic]
aggregate = "minimum"
spread = 2.5
on_split = "person"

[[critic.panel]]
model = "scripted:a.json"
role = "editor"
instructions = "Judge the structure."

[[critic.panel]]
model = "scripted:b.json"
role = "fact-checker"

[[critic.panel]]
"""


def test_a_panel_gets_its_critics_roles_and_the_skills_criteria(tmp_path: Path) -> None:
    panel = loop_critic(spec(tmp_path, PANEL))
    assert isinstance(panel, CriticPanel)
    assert [c.model.name for c in panel.critics] == ["scripted:a.json", "scripted:b.json",
                                                      "scripted:author.json"]  # fmt: skip
    assert [c.role for c in panel.critics] == ["editor", "fact-checker", None]
    assert (panel.aggregate, panel.spread, panel.threshold) == ("minimum", 2.5, 7)
    assert isinstance(panel.referee, HumanGate)
    editor = panel.critics[0]
    assert (
        "On this review panel you are the editor.\n\nJudge the structure." in editor.system_prompt
    )
    assert [(c.text, c.must_pass, c.weight) for c in editor.rubric] == [
        ("Every claim cites a source.", True, 1.0), ("It reads clearly.", False, 2.0)
    ]  # fmt: skip
    assert panel.label == "panel of editor, fact-checker, scripted:author.json"


def test_a_lone_critic_is_built_as_before(tmp_path: Path) -> None:
    critic = loop_critic(spec(tmp_path, '[critic]\nmodel = "scripted:a.json"\n'))
    assert type(critic) is Critic
    assert (critic.model.name, critic.threshold, critic.rubric, critic.role) == (
        "scripted:a.json", 7, (), None
    )  # fmt: skip
    assert "panel" not in critic.system_prompt
    no_split = loop_critic(spec(tmp_path, PANEL.replace('on_split = "person"', "")))
    assert isinstance(no_split, CriticPanel)
    assert no_split.referee is None


def test_a_panel_seat_with_an_unknown_field_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"field .critic\.panel\[0\]\.modle.: unknown field"):
        spec(tmp_path, '[critic]\n[[critic.panel]]\nmodle = "x"\n')
    with pytest.raises(ConfigError, match=r"critic\.aggregate"):
        spec(tmp_path, '[critic]\naggregate = "mean"\n')


def test_a_seat_whose_model_is_not_set_up_is_named_by_its_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = spec(tmp_path, '[critic]\n[[critic.panel]]\nmodel = "anthropic/claude-sonnet-4-5"\n')
    with pytest.raises(ConfigError, match=r"^critic\.panel\[0\]\.model: .*ANTHROPIC_API_KEY"):
        loop_critic(config)


@pytest.mark.parametrize(
    ("name", "family"),
    [("openai/gpt-4o", "openai"), ("Anthropic/claude-sonnet-4-5", "anthropic"),
     ("gpt-4o", "gpt"), ("scripted:judge.json", "scripted"), ("ollama/llama3", "ollama")],
)  # fmt: skip
def test_a_models_family_is_its_provider_prefix(name: str, family: str) -> None:
    assert model_family(name) == family


def test_other_families_come_first_in_their_own_order() -> None:
    found = other_families_first(["openai/a", "anthropic/b", "openai/c", "gemini/d"], "openai/x")
    assert found == ["anthropic/b", "gemini/d", "openai/a", "openai/c"]


@pytest.mark.parametrize(("prefer", "chosen"), [("true", "anthropic/claude-sonnet-4-5"),
                                                ("false", "openai/gpt-4o")])  # fmt: skip
def test_a_critic_of_another_family_is_preferred_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefer: str, chosen: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    lists = '["openai/gpt-4o", "anthropic/claude-sonnet-4-5"]'
    lone = spec(tmp_path / "lone", f"[critic]\nprefer_other_family = {prefer}\nmodel = {lists}\n",
                model="openai/gpt-4o-mini")  # fmt: skip
    critic = loop_critic(lone)
    assert critic is not None
    assert critic.model.name == chosen
    seated = spec(
        tmp_path / "panel",
        f"[critic]\nprefer_other_family = {prefer}\n[[critic.panel]]\nmodel = {lists}\n",
        model="openai/gpt-4o-mini",
    )
    panel = loop_critic(seated, Overrides())
    assert isinstance(panel, CriticPanel)
    assert panel.critics[0].model.name == chosen
