"""The outer loop end to end: real git repositories, real pytest runs, scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import (
    Agent,
    Budget,
    Critic,
    OuterLoop,
    Progress,
    PytestGate,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from tests.conftest import copy_repo, git, make_repo, verdict_call

pytestmark = pytest.mark.slow

BUGGY = "def add(a, b):\n    return a - b\n"
WRONG = "def add(a, b):\n    return a * b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n"
    "def test_add_zero():\n    assert add(0, 0) == 0\n"
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository every test copies: one base commit, measured once per worker."""
    files = {"calc.py": BUGGY, "tests/test_calc.py": TESTS}
    return make_repo(tmp_path_factory.mktemp("base") / "repo", files)


@pytest.fixture
def repo(base: Path, tmp_path: Path, module_state_home: Path) -> Path:
    return copy_repo(base, tmp_path / "repo")


def write(content: str) -> list[object]:
    return [ToolCall("write_file", {"path": "calc.py", "content": content}), "done"]


def tasks(model: ScriptedModel) -> list[str]:
    """The task (first user message) of each session the model served."""
    seen: list[str] = []
    for call in model.calls:
        task = call.messages[1]["content"]
        if not seen or seen[-1] != task:
            seen.append(task)
    return seen


def test_wrong_then_right_passes_in_two_rounds_with_failing_test_fed_back(
    repo: Path, tmp_path: Path
) -> None:
    model = ScriptedModel([*write(WRONG), *write(RIGHT)])
    loop = OuterLoop(
        "make the tests pass",
        Agent(model),
        gates=[PytestGate("tests")],
        workspace=repo,
        progress=tmp_path / "progress" / "calc.md",
    )
    result = loop.run()
    assert result.stop_reason is StopReason.PASSED
    assert result.passed
    assert result.iterations == 2
    round_tasks = tasks(model)
    assert len(round_tasks) == 2
    assert "tests/test_calc.py::test_add" in round_tasks[1]
    assert "test_calc.py::test_add" not in round_tasks[0]
    # The run's branch holds one commit per round; the user's checkout is untouched.
    assert (repo / "calc.py").read_text() == BUGGY
    log = git(repo, "log", "--format=%s", result.branch)
    assert log.count("harness: round") == 2
    progress = Progress.load(tmp_path / "progress" / "calc.md")
    assert progress.status.value == "passed"
    assert [a.round for a in progress.attempts] == [1, 2]


def test_critic_fixes_feed_the_next_round_and_critic_never_sees_the_author(
    repo: Path,
) -> None:
    author = ScriptedModel([*write(RIGHT), *write(RIGHT + "\n# handles negatives\n")])
    critic_model = ScriptedModel(
        [
            verdict_call(5, ["no comment"], ["explain negatives"]),
            verdict_call(9, ["fine"]),
        ]
    )
    loop = OuterLoop(
        "make the tests pass",
        Agent(model=author),
        gates=[PytestGate("tests")],
        critic=Critic(critic_model, criteria="the change is explained", threshold=8),
        workspace=repo,
        patience=5,
    )
    result = loop.run()
    assert result.stop_reason is StopReason.PASSED
    assert result.iterations == 2
    assert [r.verdict.score for r in result.rounds] == [5, 9]
    assert "explain negatives" in tasks(author)[1]
    author_texts = {
        m["content"] for c in author.calls for m in c.messages if isinstance(m.get("content"), str)
    }
    for call in critic_model.calls:
        assert len(call.messages) == 2
        for message in call.messages:
            assert message["content"] not in author_texts
    assert (
        "return a + b" in critic_model.calls[0].messages[1]["content"]
    )  # the diff is the artifact


def test_cap_reached_escalates_with_every_round_and_no_call_after_the_cap(
    repo: Path, tmp_path: Path
) -> None:
    wrong_each_time = [
        "def add(a, b):\n    return a * b\n",
        "def add(a, b):\n    return b - a\n",
        "def add(a, b):\n    return a ** b\n",
    ]
    model = ScriptedModel([entry for w in wrong_each_time for entry in write(w)] + ["spare"])
    hooked: list[Path] = []
    loop = OuterLoop(
        "make the tests pass",
        Agent(model),
        gates=[PytestGate("tests")],
        workspace=repo,
        max_iterations=3,
        progress=tmp_path / "progress" / "calc.md",
        on_escalate=hooked.append,
        patience=5,
    )
    result = loop.run()
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.iterations == 3
    assert len(model.calls) == 6  # two per round, none after the cap
    assert model.remaining == 1
    assert result.escalation is not None
    assert hooked == [result.escalation]
    report = result.escalation.read_text()
    for number in (1, 2, 3):
        assert f"### Round {number}" in report
    assert "tests/test_calc.py::test_add" in report
    assert Progress.load(tmp_path / "progress" / "calc.md").status.value == "escalated"


def test_same_failure_three_times_stops_early_with_no_progress(repo: Path) -> None:
    model = ScriptedModel([entry for _ in range(5) for entry in write(WRONG)])
    loop = OuterLoop(
        "make the tests pass",
        Agent(model),
        gates=[PytestGate("tests")],
        workspace=repo,
        max_iterations=5,
    )
    result = loop.run()
    assert result.stop_reason is StopReason.NO_PROGRESS
    assert result.iterations == 3
    assert result.escalation is not None


def test_editing_a_protected_test_fails_the_round(repo: Path) -> None:
    cheat = [
        ToolCall(
            "run_shell", {"command": "printf 'def test_ok():\\n    pass\\n' > tests/test_calc.py"}
        ),
        "done",
    ]
    model = ScriptedModel([*cheat, *write(RIGHT)])
    loop = OuterLoop(
        "make the tests pass",
        Agent(model),
        gates=[PytestGate("tests")],
        workspace=repo,
        rollback="failed",
    )
    result = loop.run()
    first, second = result.rounds
    assert not first.passed
    assert "tests/test_calc.py" in first.protected_violations
    assert "protected" in tasks(model)[1]
    assert second.passed
    assert result.stop_reason is StopReason.PASSED


def test_token_budget_stops_before_the_call_that_would_cross_it(repo: Path) -> None:
    model = ScriptedModel([entry for _ in range(10) for entry in write(WRONG)])
    agent = Agent(model, max_tokens=200)
    budget_tokens = 3000
    loop = OuterLoop(
        "make the tests pass",
        agent,
        gates=[PytestGate("tests")],
        workspace=repo,
        budget=Budget(tokens=budget_tokens),
        max_iterations=10,
        patience=50,
    )
    result = loop.run()
    assert result.stop_reason is StopReason.BUDGET_TOKENS
    assert result.usage.total_tokens <= budget_tokens
    assert result.escalation is not None


def test_cost_budget_stops_before_the_call_that_would_cross_it(repo: Path) -> None:
    model = ScriptedModel(
        [entry for _ in range(10) for entry in write(WRONG)], cost_per_token=(1e-5, 3e-5)
    )
    loop = OuterLoop(
        "make the tests pass",
        Agent(model, max_tokens=100),
        gates=[PytestGate("tests")],
        workspace=repo,
        budget=Budget(cost_usd=0.02),
        max_iterations=10,
        patience=50,
    )
    result = loop.run()
    assert result.stop_reason is StopReason.BUDGET_COST
    assert 0 < result.usage.cost_usd <= 0.02


def test_a_failing_model_stops_with_error_and_still_escalates(repo: Path, tmp_path: Path) -> None:
    model = ScriptedModel([ToolCall("list_files", {})])  # runs out mid-session
    loop = OuterLoop(
        "make the tests pass", Agent(model), gates=[PytestGate("tests")], workspace=repo,
        progress=tmp_path / "progress" / "calc.md",
    )  # fmt: skip
    result = loop.run()
    assert result.stop_reason is StopReason.ERROR
    assert "ScriptExhausted" in result.message
    assert result.escalation is not None
    assert "round 1 failed" in result.escalation.read_text()
    # No round did any work: its branch and worktree are gone and the loop starts afresh next
    # time, as after `harness run` (harness.outer.life_cycle).
    assert result.removed.startswith("removed its branch harness/")
    assert (result.branch, result.worktree) == (None, None)
    assert git(repo, "branch", "--list", "harness/*") == ""
    assert Progress.load(tmp_path / "progress" / "calc.md").status.value == "not started"


def test_the_critic_scores_against_the_skill_unless_given_its_own_criteria(repo: Path) -> None:
    from harness import Skill

    skill = Skill.parse("## Success criteria\n\nThe sum is exact for huge integers.\n")
    critic_model = ScriptedModel([verdict_call(9)])
    result = OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(RIGHT))), gates=[PytestGate("tests")],
        critic=Critic(critic_model), skill=skill, workspace=repo,
    ).run()  # fmt: skip
    assert result.passed
    assert "exact for huge integers" in critic_model.calls[0].messages[1]["content"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_iterations": 101}, "max_iterations"),
        ({"patience": 1}, "patience"),
        ({"rollback": "sometimes"}, "rollback"),
        ({"protect": ["/etc/passwd"]}, "protect"),
        ({"gates": []}, "gates/critic"),
    ],
)
def test_bad_arguments_are_configuration_errors_naming_the_field(
    repo: Path, kwargs: dict[str, object], field: str
) -> None:
    from harness import ConfigError

    given: dict[str, object] = {"gates": [PytestGate("tests")], "workspace": repo, **kwargs}
    with pytest.raises(ConfigError, match=field):
        OuterLoop("goal", Agent(ScriptedModel([])), **given)


def test_a_long_diff_reaches_the_critic_cut_with_a_stated_marker(repo: Path) -> None:
    big = RIGHT + "".join(f"# note {i}: {'x' * 60}\n" for i in range(600))
    critic_model = ScriptedModel([verdict_call(9)])
    OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(big))), gates=[PytestGate("tests")],
        critic=Critic(critic_model), workspace=repo,
    ).run()  # fmt: skip
    request = critic_model.calls[0].messages[1]["content"]
    assert "return a + b" in request
    assert "[... diff truncated: " in request
    assert len(request) < 30_000


def test_an_unexpected_exception_in_a_round_still_ends_with_a_named_stop(repo: Path) -> None:
    from harness import GateReport

    class BrokenGate:
        name = "broken"

        def check(self, workspace: Path) -> GateReport:
            raise RuntimeError("the gate itself has a bug")

    result = OuterLoop(
        "make the tests pass", Agent(ScriptedModel(write(RIGHT))), gates=[BrokenGate()],
        workspace=repo,
    ).run()  # fmt: skip
    assert result.stop_reason is StopReason.ERROR
    assert "RuntimeError: the gate itself has a bug" in result.message
    assert "check" in result.message  # where it happened is kept
    assert result.escalation is not None


def test_a_goal_larger_than_the_context_window_is_refused_before_round_one(
    repo: Path, tmp_path: Path
) -> None:
    from harness import ConfigError

    model = ScriptedModel(write(RIGHT), context_window=3000)
    progress = tmp_path / "progress" / "calc.md"
    goal = "make the tests pass. " + "Every detail of the spec matters here. " * 750
    loop = OuterLoop(
        goal, Agent(model), gates=[PytestGate("tests")], workspace=repo, progress=progress
    )
    with pytest.raises(ConfigError, match=r"goal: the task needs [\d,]+ tokens .* at most 3,000"):
        loop.run()
    assert model.calls == []
    assert git(repo, "branch", "--format=%(refname:short)") == "main"
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not progress.parent.exists()  # no progress entry, no lock file, not even the folder
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    fits = OuterLoop(
        "make the tests pass", Agent(model), gates=[PytestGate("tests")], workspace=repo
    )
    assert fits.run().stop_reason is StopReason.PASSED  # the same model takes a goal that fits
