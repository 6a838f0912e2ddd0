"""The critic's file artifact is the agent's work: a link in its place is refused, unread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import (
    Agent,
    Critic,
    OuterLoop,
    RunResult,
    ScriptedModel,
    StopReason,
    ToolCall,
)
from harness.outer.options import ArtifactFile
from tests.conftest import make_repo, verdict_call

CANARY = "canary-3f9c1e-secret-key-material"
VERDICT = verdict_call(9)


def run_with_draft(repo: Path, command: str) -> tuple[ScriptedModel, RunResult]:
    """One round whose agent runs ``command`` and whose critic judges ``draft.md``."""
    critic_model = ScriptedModel([VERDICT])
    result = OuterLoop(
        "write the draft",
        Agent(ScriptedModel([ToolCall("run_shell", {"command": command}), "done"])),
        critic=Critic(critic_model),
        critic_artifact=ArtifactFile("draft.md"),
        workspace=repo,
        max_iterations=1,
    ).run()
    return critic_model, result


@pytest.mark.parametrize("target", ["ABSOLUTE", "/proc/self/environ", "../secret"])
def test_a_symlinked_artifact_fails_the_round_and_nothing_of_its_target_reaches_the_critic(
    tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret"
    secret.write_text(CANARY)
    monkeypatch.setenv("HARNESS_TEST_CANARY", CANARY)  # in this process's /proc/self/environ
    repo = make_repo(tmp_path / "repo", {"README.md": "draft to come\n"})
    link = str(secret) if target == "ABSOLUTE" else target
    critic_model, result = run_with_draft(repo, f"ln -s {link} draft.md")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert critic_model.calls == []  # the critic's provider was never asked
    verdict = result.rounds[-1].verdict
    assert verdict is not None
    assert not verdict.passed
    assert "the artifact was not read: draft.md" in verdict.reasons[0]
    assert "symlink" in verdict.reasons[0]
    assert CANARY not in json.dumps(verdict.model_dump())


def test_a_symlinked_folder_on_the_artifact_path_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "draft.md").write_text(CANARY)
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    critic_model = ScriptedModel([VERDICT])
    result = OuterLoop(
        "write the draft",
        Agent(ScriptedModel([ToolCall("run_shell", {"command": f"ln -s {outside} docs"}), "done"])),
        critic=Critic(critic_model),
        critic_artifact=ArtifactFile("docs/draft.md"),
        workspace=repo,
        max_iterations=1,
    ).run()
    assert critic_model.calls == []
    assert not result.passed
    verdict = result.rounds[-1].verdict
    assert verdict is not None
    assert "symlink" in verdict.reasons[0]


def test_a_regular_artifact_reaches_the_critic_and_a_huge_one_is_cut(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    critic_model, result = run_with_draft(
        repo,
        "printf 'the draft\\n' > draft.md && head -c 300000 /dev/zero | tr '\\0' y >> draft.md",
    )
    assert result.passed
    request = critic_model.calls[0].messages[1]["content"]
    assert "the draft" in request
    assert "[... artifact truncated: 200000 of 300010 bytes shown ...]" in request
    assert request.count("y") < 201_000
