"""Calibration's figures, its examples folder, and the approvals runs recorded."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from harness import Agent, CommandGate, Critic, HumanGate, OuterLoop, ScriptedModel, ToolCall
from harness.cli.main import main
from harness.core.errors import ConfigError
from harness.observe.events import EventLog
from harness.verify.calibration import (
    Example,
    Judged,
    best_threshold,
    calibrate,
    rates,
    read_examples,
    recorded_approvals,
)
from harness.verify.critic import Verdict
from harness.verify.critic_prompt import render_review, reviewed_artifact
from tests.conftest import make_repo, verdict_call


def judged(*items: tuple[bool, float]) -> list[Judged]:
    return [
        Judged(name=f"e{i}", accepted=a, score=s, passed=s >= 7) for i, (a, s) in enumerate(items)
    ]


def test_rates_count_false_accepts_among_the_rejected_and_false_rejects_among_the_accepted() -> (
    None
):
    items = judged((True, 9), (True, 6), (False, 8), (False, 2), (False, 3))
    found = rates(items, 7, [i.passed for i in items])
    assert found.model_dump() == {
        "threshold": 7, "agreement": 0.6, "false_accept_rate": 0.3333, "false_reject_rate": 0.5
    }  # fmt: skip
    only_accepted = judged((True, 9))
    assert rates(only_accepted, 7, [True]).false_accept_rate is None  # nothing to falsely accept


def test_the_best_threshold_matches_the_person_most_often_then_accepts_less_bad_work() -> None:
    items = judged((True, 9), (True, 8.5), (False, 8), (False, 2))
    best = best_threshold(items, 7)
    assert (best.threshold, best.agreement, best.false_accept_rate) == (8.5, 1.0, 0.0)
    tie = judged((True, 6), (True, 8))  # 0 and 6 agree equally: the nearer to 7 wins
    assert best_threshold(tie, 7).threshold == 6
    # A person who rejected the highest-scored work is matched by a threshold above it all.
    top_rejected = judged((True, 6), (False, 6), (False, 3.333))
    best = best_threshold(top_rejected, 7)
    assert (best.threshold, best.agreement, best.false_accept_rate) == (6.01, 0.6667, 0.0)
    best = best_threshold(judged((False, 3.333), (False, 5)), 7)
    assert (best.threshold, best.agreement, best.false_accept_rate) == (5.01, 1.0, 0.0)
    all_ten = judged((False, 10), (True, 10))  # no threshold up to 10 fails a 10
    assert best_threshold(all_ten, 7).threshold == 10


def write_examples(folder: Path, lines: list[str], files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_examples_are_read_with_their_own_goal_or_the_loops(tmp_path: Path) -> None:
    folder = write_examples(tmp_path / "ex", [
        '{"file": "drafts/a.md", "label": "accept"}', "",
        '{"file": "b.md", "label": "reject", "goal": "Another goal", "note": "no sources"}',
    ], {"drafts/a.md": "A\n", "b.md": "B\n"})  # fmt: skip
    assert read_examples(folder, "The goal") == [
        Example("drafts/a.md", "The goal", "A\n", True),
        Example("b.md", "Another goal", "B\n", False),
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", r"labels.jsonl:1: not valid JSON"),
        ('{"file": "a.md", "label": "maybe"}', r"labels.jsonl:1: label: Input should be 'accept' or 'reject'"),
        ('{"file": "../a.md", "label": "accept"}', r"labels.jsonl:1: file: Value error, must be a path inside"),
        ('{"file": "/etc/passwd", "label": "accept"}', r"labels.jsonl:1: file: Value error, must be a path inside"),
        ('{"file": "gone.md", "label": "accept"}', r"labels.jsonl:1: file: .*gone.md is not a regular file"),
        ('{"file": "a.md", "label": "accept", "score": 3}', r"labels.jsonl:1: score: Extra inputs"),
    ],
)  # fmt: skip
def test_a_bad_label_line_is_named_by_file_and_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    folder = write_examples(tmp_path / "ex", [line], {"a.md": "A\n"})
    with pytest.raises(ConfigError, match=problem):
        read_examples(folder, "goal")


def test_an_example_that_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("outside\n", encoding="utf-8")
    folder = write_examples(tmp_path / "ex", ['{"file": "a.md", "label": "accept"}'], {})
    (folder / "a.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(ConfigError, match="a.md is not a regular file"):
        read_examples(folder, "goal")


def test_no_examples_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="labels.jsonl: no labelled examples"):
        read_examples(write_examples(tmp_path / "ex", [""], {}), "goal")


def test_calibrate_judges_each_example_with_its_goal(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    def review(goal: str, artifact: str) -> Verdict:
        seen.append((goal, artifact))
        score = float(len(artifact))
        return Verdict(score=score, passed=score >= 3, reasons=[], fixes=[], threshold=3)

    examples = [Example("a", "g1", "xxxx", True), Example("b", "g2", "xx", True)]
    report = calibrate(review, examples, threshold=3)
    assert seen == [("g1", "xxxx"), ("g2", "xx")]
    assert (report.examples, report.accepted, report.rejected) == (2, 2, 0)
    assert report.verdicts.false_reject_rate == 0.5
    assert report.verdicts.false_accept_rate is None
    assert "false accepts: n/a (none to measure)" in report.table()
    assert "few examples (2): label more before trusting these" in report.table()


def test_the_approvals_a_run_recorded_are_labelled_examples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    write = [
        ToolCall("write_file", {"path": "out.txt", "content": 'yes </artifact id="0">\n'}),
        "done",
    ]
    again = [ToolCall("write_file", {"path": "out.txt", "content": "yes, politely\n"}), "done"]
    runs = tmp_path / "runs"
    log = EventLog(runs / "r1" / "events.jsonl", run_id="r1")
    loop = OuterLoop(
        "out.txt says yes",
        Agent(ScriptedModel([*write, *again])),
        gates=[
            CommandGate("grep -q yes out.txt", name="says yes"),
            HumanGate(
                interactive=True, stdin=io.StringIO("n be polite\ny\n"), stdout=io.StringIO()
            ),
        ],
        critic=Critic(ScriptedModel([verdict_call(9), verdict_call(8)])),
        workspace=repo,
        progress=tmp_path / "progress" / "answer.md",
        max_iterations=2,
        name="answer",
        events=log,
    )
    assert loop.run().passed
    found = recorded_approvals(runs)
    assert [(e.name, e.goal, e.accepted) for e in found] == [
        ("r1 round 1", "out.txt says yes", False), ("r1 round 2", "out.txt says yes", True)
    ]  # fmt: skip
    assert '+yes </artifact id="0">' in found[0].artifact  # the diff, as the critic saw it
    assert "+yes, politely" in found[1].artifact
    assert recorded_approvals(runs / "r1") == found
    with pytest.raises(ConfigError, match="no run folder"):
        recorded_approvals(tmp_path / "repo")

    # `harness calibrate --approvals` judges them again with the loop's critic setup.
    setup = tmp_path / "setup"
    setup.mkdir()
    replies = [json.dumps(json.dumps({"reasons": [], "fixes": [], "score": s})) for s in (9, 9)]
    (setup / "critic.json").write_text(f"[{', '.join(replies)}]", encoding="utf-8")
    (setup / "loop.toml").write_text(
        'goal = "out.txt says yes"\nmodel = "scripted:critic.json"\ngates = []\n', encoding="utf-8"
    )
    assert main(["calibrate", str(setup), "--approvals", str(runs), "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["examples"], report["accepted"], report["rejected"]) == (2, 1, 1)
    assert report["verdicts"]["false_accept_rate"] == 1.0  # it passed what the person rejected
    assert [(j["name"], j["score"]) for j in report["judged"]] == [
        ("r1 round 1", 9),
        ("r1 round 2", 9),
    ]


@pytest.mark.parametrize(
    "artifact",
    ['x </artifact id="0">\n< /Artifact', 'let end = "<\\/script>";', "", "two\nlines\n"],
)
def test_the_artifact_a_review_holds_is_read_back_as_it_was(artifact: str) -> None:
    review = render_review("the goal", artifact, "the criteria", "answer")
    assert reviewed_artifact(review) == artifact
    assert reviewed_artifact("Goal: no artifact here") is None
