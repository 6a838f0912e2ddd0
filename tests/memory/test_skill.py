"""SKILL.md: front matter, headed sections, synonyms, rendering, errors, shipped skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.memory.skill import Skill
from harness.memory.text_fields import Section

SKILLS = Path(__file__).resolve().parents[2] / "skills"


def test_front_matter_only() -> None:
    skill = Skill.parse(
        "---\n"
        "name: lint\n"
        "description: 'Make ruff clean'\n"
        "success: ruff check exits 0\n"
        "threshold: 7.5\n"
        "rules:\n"
        "  - fix the cause\n"
        "  - keep the diff small\n"
        "# a comment\n"
        "prohibitions: [noqa comments, config changes]\n"
        "hints: run ruff --fix first\n"
        "max_files: 3\n"
        "---\n"
    )

    assert skill.name == "lint"
    assert skill.description == "Make ruff clean"
    assert skill.success == "ruff check exits 0"
    assert skill.threshold == 7.5
    assert skill.rules == ("fix the cause", "keep the diff small")
    assert skill.prohibitions == ("noqa comments", "config changes")
    assert skill.hints == ("run ruff --fix first",)
    assert skill.meta == {"max_files": "3"}
    assert skill.extra == ()


def test_sections_only_with_title_intro_and_prose() -> None:
    skill = Skill.parse(
        "# Date fixes\n\nFix date handling.\n\n"
        "## Success\n\nAll of `pytest -q` passes.\n\nNo warnings.\n\n"
        "## Rules\n\n- first rule\n  continues here\n* second rule\n1. third rule\n\n"
        "## Hints\n\nA prose hint.\n\nAnother one.\n",
        source="skills/dates/SKILL.md",
    )

    assert skill.name == "Date fixes"
    assert skill.description == "Fix date handling."
    assert skill.success == "All of `pytest -q` passes.\n\nNo warnings."
    assert skill.rules == ("first rule\ncontinues here", "second rule", "third rule")
    assert skill.hints == ("A prose hint.", "Another one.")
    assert skill.source == Path("skills/dates/SKILL.md")


def test_front_matter_and_sections_combine_front_first() -> None:
    skill = Skill.parse(
        "---\nname: both\nrules: [from front]\nsuccess: [tests pass, lint clean]\n---\n"
        "# Ignored title\n\n## Rules\n- from body\n\n## Success\nreviewed\n"
    )

    assert skill.name == "both"
    assert skill.rules == ("from front", "from body")
    assert skill.success == "- tests pass\n- lint clean\n\nreviewed"


def test_unknown_sections_are_kept_verbatim_in_order() -> None:
    skill = Skill.parse(
        "## Context\n\nThe service is *old*.\n\n### Detail\n  indented\n\n"
        "## Rules\n- r\n\n"
        "## Glossary\n\n| term | meaning |\n|---|---|\n| TZ | time zone |\n",
        source="skills/svc/SKILL.md",
    )

    assert skill.name == "svc"
    assert skill.extra == (
        Section(heading="Context", body="The service is *old*.\n\n### Detail\n  indented"),
        Section(heading="Glossary", body="| term | meaning |\n|---|---|\n| TZ | time zone |"),
    )
    agent = skill.render_for_agent()
    assert agent.index("## Context") < agent.index("## Glossary")
    assert "### Detail\n  indented" in agent


def test_scalar_fields_read_from_sections_as_from_front_matter() -> None:
    skill = Skill.parse("# Demo\n\n## Passing score\n\n8\n")
    titled = Skill.parse("# Heading title\n\n## Title\n\nReal name\n\n## Threshold\n7.5\n")

    assert skill.threshold == 8
    assert skill.name == "Demo"
    assert skill.extra == ()
    assert titled.name == "Real name"
    assert titled.threshold == 7.5
    assert titled.extra == ()


def test_a_threshold_section_that_is_not_a_number_names_its_line() -> None:
    with pytest.raises(ConfigError, match=r"^skill\.md:5: threshold must be a number, got 'high'"):
        Skill.parse("# Demo\n\n## Threshold\n\nhigh\n", source="skill.md")


@pytest.mark.parametrize(
    ("heading", "field"),
    [
        ("Success criteria", "success"),
        ("DEFINITION OF DONE", "success"),
        ("Done when:", "success"),
        ("성공의 정의", "success"),
        ("Constraints", "rules"),
        ("Don't", "prohibitions"),
        ("Don’t", "prohibitions"),
        ("Do not", "prohibitions"),
        ("never", "prohibitions"),
        ("금지 사항", "prohibitions"),
        ("Tips", "hints"),
        ("Critic rubric", "rubric"),
    ],
)
def test_heading_synonyms(heading: str, field: str) -> None:
    skill = Skill.parse(f"## {heading}\n\n- the item\n")

    value = getattr(skill, field)
    assert value in ("- the item", ("the item",))
    assert skill.extra == ()


def test_the_seed_example_parses() -> None:
    skill = Skill.parse(
        "# SKILL.md: 매 세션이 참조하는 기준\n## 성공의 정의\n모든 테스트 통과, 린트 경고 0 이면 완료로 본다.\n"
        "## 금지 사항\n@Query 직접 사용 금지, 커밋 메시지에 이모지 금지\n"
    )

    assert skill.success == "모든 테스트 통과, 린트 경고 0 이면 완료로 본다."
    assert skill.prohibitions == ("@Query 직접 사용 금지, 커밋 메시지에 이모지 금지",)


def test_critic_sees_criteria_and_rules_but_not_hints_or_extra() -> None:
    skill = Skill.parse(
        "---\nthreshold: 8\n---\n# demo\n\nIntro.\n\n## Success\nall green\n## Rules\n- rule one\n"
        "## Prohibitions\n- no skipping\n## Hints\n- secret hint\n## Rubric\n- accuracy\n"
        "## Background\nold code\n"
    )

    agent = skill.render_for_agent()
    critic = skill.render_for_critic()

    for text in ("all green", "rule one", "no skipping", "accuracy", "passes at 8"):
        assert text in agent
        assert text in critic
    for text in ("secret hint", "## Background", "old code"):
        assert text in agent
        assert text not in critic
    assert agent.startswith("# Skill: demo\n\nIntro.\n\n## Success criteria\n\nall green\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "skill.md: skill file is empty"),
        ("  \n\n", "skill.md: skill file is empty"),
        ("---\nname: x\n", "skill.md:1: front matter opened with '---' is never closed"),
        ("---\nname: x\n  nested: y\n---\n", "skill.md:3: expected 'key: value'"),
        ("---\nname: x\njust words\n---\n", "skill.md:3: expected 'key: value'"),
        ("---\nsuccess: |\n---\n", "skill.md:2: block scalars"),
        ("---\nthreshold: high\n---\n", "skill.md:2: threshold must be a number"),
        ("---\nname: [a, b]\n---\n", "skill.md:2: 'name' takes a single value"),
        ("---\nthreshold: 11\n---\n", "skill.md: threshold: Input should be less than"),
    ],
)
def test_bad_skill_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "skill.md"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        Skill.load(path)

    assert str(caught.value).startswith(str(tmp_path / message))


def test_unreadable_skill_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        Skill.load(tmp_path / "nope.md")
    assert str(missing.value) == (
        f"{tmp_path / 'nope.md'}: cannot read skill file: No such file or directory"
    )
    with pytest.raises(ConfigError) as folder:
        Skill.load(tmp_path)
    assert str(folder.value) == f"{tmp_path}: cannot read skill file: Is a directory"


@pytest.mark.parametrize("name", ["bugfix", "content", "research"])
def test_shipped_skills_parse_with_success_rules_and_prohibitions(name: str) -> None:
    skill = Skill.load(SKILLS / name / "SKILL.md")

    assert skill.name == name
    assert skill.description
    assert skill.success.count("\n- ") >= 2
    assert len(skill.rules) >= 3
    assert len(skill.prohibitions) >= 3
    assert skill.hints
    assert skill.extra == ()
    assert skill.success in skill.render_for_critic()


def test_shipped_skills_carry_their_specific_criteria() -> None:
    bugfix = Skill.load(SKILLS / "bugfix" / "SKILL.md")
    content = Skill.load(SKILLS / "content" / "SKILL.md")
    research = Skill.load(SKILLS / "research" / "SKILL.md")

    assert "No test file is created, edited" in bugfix.success
    assert any("skip" in p for p in bugfix.prohibitions)
    assert any("network" in p for p in bugfix.prohibitions)
    assert any(h.startswith("Run only the failing test") for h in bugfix.hints)
    assert content.threshold == research.threshold == 8
    assert content.meta == {"min_words": "300", "max_words": "600", "facts_file": "facts.md"}
    assert content.rubric[0].startswith("Accuracy to the facts file")
    assert "300 to 600 words" in content.success
    assert research.meta["min_sources"] == "3"
    assert "exact, verbatim quote" in research.success
    assert "Contradictions" in research.success
