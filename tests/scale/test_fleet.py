"""Fleet loops: subtasks in parallel, an evaluation gate, and a synthesis."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness import Agent, CommandGate, OuterLoop, ScriptedModel, ToolCall
from harness.core.errors import ConfigError
from harness.research.archive import SourceArchive
from harness.research.gates import citations_gate
from harness.scale.fleet import Fleet, FleetError, Subtask, SubtaskOutcome, SynthesisGates
from harness.verify.gates import GateReport


def _loop_factory(tmp_path: Path, answers: dict[str, str], running: list[int] | None = None):
    """Each subtask writes its answer to its own folder; the gate wants 'yes'."""
    lock = threading.Lock()
    active = [0]

    def slow_write(messages: object, tools: object) -> ToolCall:
        with lock:
            active[0] += 1
            if running is not None:
                running.append(active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return ToolCall("list_files", {})

    def loop_for(subtask: Subtask) -> OuterLoop:
        folder = tmp_path / subtask.name
        folder.mkdir()
        content = answers[subtask.name]
        model = ScriptedModel(
            [
                slow_write,
                ToolCall("write_file", {"path": "out.txt", "content": content}),
                f"wrote {content}",
            ]
        )
        return OuterLoop(
            subtask.goal, Agent(model), gates=[CommandGate("grep -qx yes out.txt", name="says yes")],
            workspace=folder, isolation="none", max_iterations=1,
        )  # fmt: skip

    return loop_for


def test_subtasks_run_in_parallel_and_only_passing_results_are_kept(tmp_path: Path) -> None:
    answers = {"alpha": "yes\n", "beta": "no\n", "gamma": "yes\n"}
    running: list[int] = []
    seen: list[list[str]] = []

    def synthesise(goal: str, kept: list[SubtaskOutcome]) -> str:
        seen.append([o.subtask.name for o in kept])
        return f"{goal}: " + ", ".join(o.subtask.name for o in kept)

    fleet = Fleet(
        "answer everything",
        _loop_factory(tmp_path, answers, running),
        subtasks=[Subtask(name=n, goal=f"{n} says yes") for n in answers],
        concurrency=3,
        synthesiser=synthesise,
    )
    result = fleet.run()
    assert [o.subtask.name for o in result.outcomes] == ["alpha", "beta", "gamma"]
    assert [o.kept for o in result.outcomes] == [True, False, True]
    assert result.outcomes[1].result is not None
    assert result.outcomes[1].result.escalation is not None  # the failed subtask escalated itself
    assert seen == [["alpha", "gamma"]]
    assert result.synthesis == "answer everything: alpha, gamma"
    assert max(running) > 1  # really in parallel
    assert max(running) <= 3
    assert result.usage.calls == 9


def test_the_named_artifacts_are_read_for_every_subtask_even_from_a_generator(
    tmp_path: Path,
) -> None:
    answers = {"alpha": "yes\n", "beta": "yes\n"}
    fleet = Fleet(
        "answer", _loop_factory(tmp_path, answers),
        subtasks=[Subtask(name=n, goal=n) for n in answers],
        artifacts=(name for name in ["notes.md"]),
    )  # fmt: skip
    result = fleet.run()
    assert [o.artifacts for o in result.outcomes] == ["--- notes.md ---\n(missing)"] * 2


def test_the_evaluation_gate_can_reject_a_passed_result(tmp_path: Path) -> None:
    answers = {"alpha": "yes\n", "beta": "yes\n"}
    fleet = Fleet(
        "answer", _loop_factory(tmp_path, answers),
        subtasks=[Subtask(name=n, goal=n) for n in answers],
        evaluate=lambda subtask, result: subtask.name != "beta",
    )  # fmt: skip
    result = fleet.run()
    assert [o.kept for o in result.outcomes] == [True, False]
    assert result.outcomes[1].result is not None
    assert result.outcomes[1].result.passed


def test_a_subtask_whose_loop_cannot_be_built_is_recorded_not_fatal(tmp_path: Path) -> None:
    def loop_for(subtask: Subtask) -> OuterLoop:
        if subtask.name == "task-2":
            raise ConfigError("workspace: missing")
        return _loop_factory(tmp_path, {"task-1": "yes\n"})(subtask)

    result = Fleet("answer", loop_for, subtasks=["first", "second"]).run()
    assert result.outcomes[0].kept
    assert result.outcomes[1].error is not None
    assert "workspace: missing" in result.outcomes[1].error


def test_a_planner_model_splits_the_goal_after_one_repair(tmp_path: Path) -> None:
    plan = {
        "subtasks": [
            {"name": "alpha", "goal": "alpha says yes"},
            {"name": "beta", "goal": "beta says yes"},
        ]
    }
    planner = ScriptedModel(["Sure! Here are some ideas.", f"```json\n{json.dumps(plan)}\n```"])
    synthesiser = ScriptedModel(["Both parts are answered."])
    result = Fleet(
        "answer both", _loop_factory(tmp_path, {"alpha": "yes\n", "beta": "yes\n"}),
        planner=planner, synthesiser=synthesiser,
    ).run()  # fmt: skip
    assert [o.subtask.name for o in result.kept] == ["alpha", "beta"]
    assert result.synthesis == "Both parts are answered."
    assert "That was not valid" in planner.calls[1].messages[-1]["content"]
    request = synthesiser.calls[0].messages[1]["content"]
    assert "wrote yes" in request
    assert "alpha says yes" in request
    assert result.usage.calls == 2 + 1 + 6


def test_a_planner_that_never_answers_validly_is_a_clear_error(tmp_path: Path) -> None:
    planner = ScriptedModel(
        ['{"subtasks": []}', '{"subtasks": [{"name": "bad name!", "goal": "x"}]}']
    )
    fleet = Fleet("answer", _loop_factory(tmp_path, {}), planner=planner)
    with pytest.raises(FleetError, match="no valid plan"):
        fleet.run()


def test_bad_fleet_arguments_are_configuration_errors(tmp_path: Path) -> None:
    loop_for = _loop_factory(tmp_path, {})
    with pytest.raises(ConfigError, match="subtasks/planner"):
        Fleet("x", loop_for)
    with pytest.raises(ConfigError, match="concurrency"):
        Fleet("x", loop_for, subtasks=["a"], concurrency=9)
    with pytest.raises(ConfigError, match="unique"):
        Fleet("x", loop_for, subtasks=[Subtask(name="a", goal="1"), Subtask(name="a", goal="2")])


def test_the_synthesis_request_carries_the_kept_subtasks_files_from_their_branches(
    tmp_path: Path,
) -> None:
    from harness.scale.artifacts import PER_FILE_CHARS
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    reports = {
        "alpha": "ALPHA FINDING: the cache expires after 90 seconds\n",
        "beta": "BETA FINDING: rejected by the evaluation gate\n",
        "gamma": "GAMMA " + "x" * (3 * PER_FILE_CHARS) + " GAMMA END\n",
    }

    def loop_for(subtask: Subtask) -> OuterLoop:
        model = ScriptedModel(
            [
                ToolCall("write_file", {"path": "report.md", "content": reports[subtask.name]}),
                "done",
            ]
        )
        return OuterLoop(
            subtask.goal, Agent(model), gates=[CommandGate("test -s report.md")], workspace=repo,
            max_iterations=1, name=subtask.name,
        )  # fmt: skip

    synthesiser = ScriptedModel(["the combined answer"])
    result = Fleet(
        "find out everything", loop_for,
        subtasks=[Subtask(name=n, goal=f"write {n}'s report") for n in reports],
        evaluate=lambda subtask, run: subtask.name != "beta", synthesiser=synthesiser,
    ).run()  # fmt: skip
    assert result.synthesis == "the combined answer"
    assert [o.kept for o in result.outcomes] == [True, False, True]
    (request,) = synthesiser.calls
    sent = request.messages[1]["content"]
    assert "--- report.md ---" in sent
    assert "ALPHA FINDING: the cache expires after 90 seconds" in sent
    assert "BETA FINDING" not in sent  # a result the gate rejected is not synthesised
    assert "GAMMA " in sent
    assert "characters truncated" in sent  # a long file is bounded ...
    assert len(sent) < 3 * PER_FILE_CHARS  # ... and so is the request
    assert not (repo / "report.md").exists()  # read from the branches, not the user's checkout


def test_evaluation_gates_run_on_each_subtask_branch(tmp_path: Path) -> None:
    from harness.scale.evaluation import gates_on_branch
    from tests.conftest import git, make_repo

    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})

    def loop_for(subtask: Subtask) -> OuterLoop:
        model = ScriptedModel(
            [ToolCall("write_file", {"path": "report.md", "content": subtask.name.upper()}), "done"]
        )
        return OuterLoop(
            subtask.goal, Agent(model), gates=[CommandGate("test -s report.md")], workspace=repo,
            max_iterations=1, name=subtask.name,
        )  # fmt: skip

    result = Fleet(
        "reports", loop_for, subtasks=[Subtask(name=n, goal=n) for n in ("alpha", "beta")],
        evaluate=gates_on_branch([CommandGate("grep -qx ALPHA report.md")], repo),
    ).run()  # fmt: skip
    assert [(o.subtask.name, o.result.passed if o.result else None, o.kept) for o in result.outcomes] == [
        ("alpha", True, True), ("beta", True, False),
    ]  # fmt: skip
    listed = git(repo, "worktree", "list").splitlines()[1:]
    assert [line for line in listed if "/.parked/" not in line] == []  # evaluation checkouts gone


def test_the_planner_is_sent_the_goal_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "canary-" + "Hx3Kd9Lq5Tz1"
    monkeypatch.setenv("CANARY_API_KEY", secret)
    planner = ScriptedModel(['{"subtasks": []}', '{"subtasks": []}'])
    fleet = Fleet(f"rotate the key {secret}", _loop_factory(tmp_path, {}), planner=planner)
    with pytest.raises(FleetError, match="no valid plan"):
        fleet.run()
    assert planner.calls[0].messages[1]["content"] == "rotate the key [REDACTED]"
    assert secret not in json.dumps([call.messages for call in planner.calls])


def _synthesis_gates(tmp_path: Path) -> tuple[str, list[list[str]], SynthesisGates]:
    """A citations gate on the synthesis, over an archive holding one fetched source."""
    archive = SourceArchive(tmp_path / "archive")
    record = archive.add(
        "http://a.example/log", b"The light was first lit in 1851.\n",
        headers={"content-type": "text/plain"},
    )  # fmt: skip
    gate = citations_gate("synthesis.md", archive=archive)
    seen: list[list[str]] = []

    def gates(text: str, kept: Sequence[SubtaskOutcome]) -> list[GateReport]:
        seen.append([o.subtask.name for o in kept])
        (tmp_path / "synthesis.md").write_text(text)
        return [gate.check(tmp_path)]

    return record.id, seen, gates


def test_a_synthesis_failing_its_gates_is_sent_back_once_with_the_citation_named(
    tmp_path: Path,
) -> None:
    source, seen, gates = _synthesis_gates(tmp_path)
    fabricated = f'It was lit in 1852 [source: {source}] "first lit in 1852".'
    right = f'It was lit in 1851 [source: {source}] "first lit in 1851".'
    synthesiser = ScriptedModel([fabricated, right])
    result = Fleet(
        "when was it lit", _loop_factory(tmp_path, {"task-1": "yes\n"}), subtasks=["say yes"],
        synthesiser=synthesiser, synthesis_gates=gates,
    ).run()  # fmt: skip
    assert result.synthesis == right
    assert [r.passed for r in result.synthesis_checks] == [True]
    assert result.synthesis_passed
    assert seen == [["task-1"], ["task-1"]]
    assert "Keep each citation" in synthesiser.calls[0].messages[0]["content"]
    repair = synthesiser.calls[1].messages[-1]["content"]
    assert f'line 1: [{source}] "first lit in 1852": quote not found in {source}' in repair
    assert synthesiser.calls[1].messages[-2] == {"role": "assistant", "content": fabricated}


def test_a_synthesis_that_fails_again_is_reported_not_passed(tmp_path: Path) -> None:
    source, seen, gates = _synthesis_gates(tmp_path)
    fabricated = f'It was lit in 1852 [source: {source}] "first lit in 1852".'
    never = 'It was lit in 1851 [source: http://b.example/] "first lit in 1851".'
    synthesiser = ScriptedModel([fabricated, never, "not asked"])
    result = Fleet(
        "when was it lit", _loop_factory(tmp_path, {"task-1": "yes\n"}), subtasks=["say yes"],
        synthesiser=synthesiser, synthesis_gates=gates,
    ).run()  # fmt: skip
    assert result.synthesis == never
    assert not result.synthesis_passed
    (report,) = result.synthesis_checks
    assert "[http://b.example/]" in report.output_tail
    assert "never fetched in this run" in report.output_tail
    assert len(synthesiser.calls) == 2
    (tmp_path / "again").mkdir()
    called = Fleet(
        "when was it lit", _loop_factory(tmp_path / "again", {"task-1": "yes\n"}),
        subtasks=["say yes"], synthesiser=lambda goal, kept: fabricated, synthesis_gates=gates,
    ).run()  # fmt: skip
    assert called.synthesis == fabricated
    assert not called.synthesis_passed
    assert len(seen) == 3  # a function is checked, never asked again
