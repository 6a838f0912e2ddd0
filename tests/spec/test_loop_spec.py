"""LoopSpec: one definition, read from loop.toml or built in Python, checked the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from harness import Agent, CommandGate, OuterLoop, ScriptedModel
from harness.assemble.build import build_loop
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.core.sink import NULL_SINK
from harness.outer.options import ArtifactFile, LoopOptions
from harness.spec import LoopSpec

GOOD = (
    'goal = "fix it"\nmodel = "scripted:replies.json"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
)


def _toml(folder: Path, text: str) -> Path:
    (folder / "loop.toml").write_text(text, encoding="utf-8")
    (folder / "replies.json").write_text("[]", encoding="utf-8")
    return folder


def test_from_toml_keeps_the_folder_its_paths_start_from(tmp_path: Path) -> None:
    spec = LoopSpec.from_toml(_toml(tmp_path, GOOD))
    assert spec.root == tmp_path.resolve()
    assert spec.source == tmp_path / "loop.toml"
    assert spec.progress_path() == tmp_path.resolve() / "progress" / "loop.md"


def test_a_python_spec_starts_its_paths_at_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = LoopSpec(goal="fix it", name="dates")
    assert (spec.root, spec.source) == (tmp_path, "LoopSpec")
    assert spec.progress_path() == tmp_path / "progress" / "dates.md"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("patience = 1", "patience"),
        ("patience = true", "patience"),
        ('rollback = "sometimes"', "rollback"),
        ("max_iterations = 101", "max_iterations"),
        ('name = "../up"', "name"),
    ],
)
def test_a_bad_value_names_the_file_and_the_field(tmp_path: Path, line: str, field: str) -> None:
    _toml(tmp_path, GOOD.replace("[[gates]]", f"{line}\n[[gates]]"))
    with pytest.raises(ConfigError) as caught:
        LoopSpec.from_toml(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'loop.toml'}: field '{field}'")


def test_fields_that_disagree_are_named_in_python_too() -> None:
    with pytest.raises(ValidationError, match=r"field 'critic.file': required"):
        LoopSpec(goal="g", critic={"artifact": "file"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"field 'gates': give at least one gate"):
        LoopSpec(goal="g", critic={"enabled": False})  # type: ignore[arg-type]


def test_every_problem_of_a_file_is_named_on_its_own_line(tmp_path: Path) -> None:
    text = GOOD.replace("[[gates]]", "merge = true\nattempts = 2\n[[gates]]")
    text += '[critic]\nartifact = "file"\n'
    with pytest.raises(ConfigError) as caught:
        LoopSpec.from_toml(_toml(tmp_path, text))
    assert str(caught.value).splitlines() == [
        f"{tmp_path / 'loop.toml'}: field 'critic.file': required when critic.artifact = 'file'",
        f"{tmp_path / 'loop.toml'}: field 'merge': cannot merge with attempts > 1; "
        "the winner's branch is named",
    ]


def test_with_changes_checks_the_changes_and_keeps_the_root(tmp_path: Path) -> None:
    spec = LoopSpec.from_toml(_toml(tmp_path, GOOD))
    changed = spec.with_changes(name="other", max_iterations=4)
    assert (changed.name, changed.max_iterations, changed.root) == ("other", 4, spec.root)
    assert spec.name == "loop"  # the original is untouched
    with pytest.raises(ConfigError, match=r"loop\.toml: field 'max_iterations'"):
        spec.with_changes(max_iterations=0)


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("max_iterations = 0", "field 'max_iterations': must be an integer from 1 to 100, got 0"),
        ("max_iterations = 3.0", "field 'max_iterations': must be an integer from 1 to 100, got 3.0"),
        ("attempts = 9", "field 'attempts': must be an integer from 1 to 8, got 9"),
        ("[budget]\ntokens = 0", "field 'budget.tokens': must be a positive integer, got 0"),
        ("[agent]\nmax_steps = 0", "field 'agent.max_steps': must be an integer from 1 to 10000, got 0"),
        ("[agent]\ncontext_window = 999", "field 'agent.context_window': must be an integer at least 1000, got 999"),
        ("[critic]\nthreshold = 11", "field 'critic.threshold': must be between 0 and 10, got 11"),
        ("[agent]\nmax_stepz = 3", "field 'agent.max_stepz': unknown field"),
        ('[fleet]\nsubtasks = ["a"]\n[[fleet.evaluate]]\ntype = "pytest"\ntimeout = 0',
         "field 'fleet.evaluate[0].timeout': Input should be greater than 0"),
    ],
)  # fmt: skip
def test_a_number_out_of_bounds_is_said_with_the_bounds_its_field_declares(
    tmp_path: Path, toml: str, said: str
) -> None:
    text = GOOD + toml if toml.startswith("[") else f"{toml}\n{GOOD}"  # a table goes last
    with pytest.raises(ConfigError) as caught:
        LoopSpec.from_toml(_toml(tmp_path, text))
    assert str(caught.value) == f"{tmp_path / 'loop.toml'}: {said}"


def _loop(**settings: object) -> OuterLoop:
    return OuterLoop("fix it", Agent(ScriptedModel([])), gates=[CommandGate("true")], **settings)


def test_the_loop_s_keywords_say_a_bound_as_loop_toml_does() -> None:
    with pytest.raises(ConfigError) as caught:
        _loop(patience=1, patients=3)
    assert str(caught.value).splitlines() == [
        "patience: must be an integer from 2 to 100, got 1",
        "patients: unknown field",
    ]
    with pytest.raises(TypeError):  # keywords only, as before
        LoopOptions("x")  # type: ignore[misc]


def test_a_budget_given_by_position_names_the_field() -> None:
    assert Budget(5, 0.5) == Budget(tokens=5, cost_usd=0.5)
    with pytest.raises(
        ConfigError, match=r"^budget\.cost_usd: must be a finite number above 0, got -1$"
    ):
        Budget(5, -1)
    with pytest.raises(ConfigError, match="^budget.tokens: Got multiple values"):
        Budget(5, tokens=6)  # type: ignore[misc]


def test_the_critic_judges_a_named_file_as_a_typed_choice(tmp_path: Path) -> None:
    text = GOOD + '[critic]\nartifact = "file"\nfile = "draft.md"\n'
    loop = build_loop(LoopSpec.from_toml(_toml(tmp_path, text)), events=NULL_SINK)
    assert loop.settings.critic_artifact == ArtifactFile("draft.md")
    plain = build_loop(LoopSpec.from_toml(_toml(tmp_path, GOOD)), events=NULL_SINK)
    assert plain.settings.critic_artifact == "diff"


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"patience": 1}, "patience"),
        ({"patience": 101}, "patience"),
        ({"rollback": "never"}, "rollback"),
        ({"name": "a b"}, "name"),
        ({"on_round": "  "}, "on_round"),
        ({"critic_artifact": "the draft"}, "critic_artifact"),
        ({"protect": ["/etc/passwd"]}, "protect"),
        ({"patients": 3}, "patients"),
    ],
)
def test_the_loop_s_keywords_refuse_what_loop_toml_refuses(
    given: dict[str, object], field: str
) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}\b"):
        _loop(**given)


def test_the_loop_s_settings_keep_what_they_are_given() -> None:
    settings = _loop(patience=2, rollback="failed", protect=("tests/**",), name="x.y-1").settings
    assert (settings.patience, settings.rollback, settings.protect, settings.name) == (
        2, "failed", ("tests/**",), "x.y-1",
    )  # fmt: skip
    assert _loop(patience=100).settings.patience == 100


def test_a_rule_set_in_loop_toml_reaches_the_driver(tmp_path: Path) -> None:
    text = GOOD.replace("[[gates]]", "keep_worktree = true\npatience = 5\n[[gates]]")
    loop = build_loop(LoopSpec.from_toml(_toml(tmp_path, text)), events=NULL_SINK)
    assert (loop.settings.keep_worktree, loop.settings.patience) == (True, 5)
    plain = build_loop(LoopSpec.from_toml(_toml(tmp_path, GOOD)), events=NULL_SINK)
    assert plain.settings.keep_worktree is False


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ('[env]\npyton = "python3"', "env.pyton"),
        ('[env]\nsetup = ""', "env.setup"),
        ("[env]\nsetup_timeout = 0", "env.setup_timeout"),
        ('[env]\npython = "python3"\n[sandbox]\nbackend = "docker"\nimage = "python:3.12"', "env"),
    ],
)
def test_a_bad_env_table_names_the_field(tmp_path: Path, table: str, field: str) -> None:
    _toml(tmp_path, f"{GOOD}{table}\n")
    with pytest.raises(ConfigError) as caught:
        LoopSpec.from_toml(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'loop.toml'}: field '{field}'")


def test_an_env_python_that_cannot_run_is_named_when_the_loop_is_built(tmp_path: Path) -> None:
    spec = LoopSpec.from_toml(_toml(tmp_path, f'{GOOD}[env]\npython = "bin/nowhere"\n'))
    with pytest.raises(ConfigError) as caught:
        build_loop(spec, events=NULL_SINK)
    assert str(caught.value) == (
        f"{tmp_path / 'loop.toml'}: field 'env.python': 'bin/nowhere' is not an interpreter "
        "that can be run"
    )
