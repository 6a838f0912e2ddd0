"""``harness calibrate``: a critic setup judged against a person's labels, through the CLI.

The critics are scripted models that really score: each reads the artifact out of the review
request and scores the share of its claims that cite a source (with a small deterministic
noise of its own); the lenient one adds 1.6 to every score, as a model grading its own author's
work does. The person accepts a report when at least 7 of its 10 claims cite a source.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import ScriptedModel, ToolCall
from harness.cli.main import main
from harness.models.base import Message, ToolSchema

CLAIMS = 10
ACCEPT_AT = 7  # sourced claims the person needs
TOPICS = ("tides", "bridges", "vaccines", "comets", "glaciers", "printing")
_ARTIFACT = re.compile(r'<artifact id="(\w+)">\n(.*)\n</artifact id="\1">', re.DOTALL)


def report(topic: str, sourced: int) -> str:
    lines = [f"# A short report on {topic}", ""]
    for n in range(CLAIMS):
        source = f" [source {n + 1}: archive of {topic}]" if n < sourced else ""
        lines.append(f"- Claim {n + 1} about {topic} holds.{source}")
    return "\n".join(lines) + "\n"


def examples(folder: Path) -> list[tuple[str, bool]]:
    """48 reports, 0 to 10 of their claims sourced, each labelled by the person's rule."""
    folder.mkdir()
    labels = []
    for index in range(48):
        topic, sourced = TOPICS[index % len(TOPICS)], (index * 7) % 11
        name = f"report-{index:02}.md"
        (folder / name).write_text(report(topic, sourced), encoding="utf-8")
        labels.append((name, sourced >= ACCEPT_AT))
    lines = [json.dumps({"file": n, "label": "accept" if ok else "reject"}) for n, ok in labels]
    (folder / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return labels


def scorer(seed: str, bias: float) -> Callable[[list[Message], list[ToolSchema]], ToolCall]:
    """A critic's reply: the sourced share of the artifact's claims, noise and ``bias`` added."""

    def score(messages: list[Message], tools: list[ToolSchema]) -> ToolCall:
        found = _ARTIFACT.search(str(messages[-1]["content"]))
        assert found, "the review request holds the artifact"
        claims = [line for line in found.group(2).splitlines() if line.startswith("- Claim")]
        sourced = sum("[source" in line for line in claims)
        digest = hashlib.sha256((seed + found.group(2)).encode()).digest()
        noise = (digest[0] / 255 - 0.5) * 1.6  # within ±0.8
        value = min(10.0, max(0.0, 10 * sourced / len(claims) + noise + bias))
        reasons = [f"{sourced} of {len(claims)} claims cite a source"]
        return ToolCall("verdict", {"reasons": reasons, "fixes": [], "score": round(value, 1)})

    return score


CRITICS = {
    "openai/author": scorer("author", 0.0),
    "anthropic/careful": scorer("careful", 0.0),
    "gemini/strict": scorer("strict", 0.0),
    "openai/lenient": scorer("lenient", 1.6),
    "mistral/lenient": scorer("lenient too", 1.6),
}


@pytest.fixture
def scripted_critics(monkeypatch: pytest.MonkeyPatch) -> dict[str, ScriptedModel]:
    """Model names resolve to the scorers above; each model records the requests it scored."""
    made: dict[str, ScriptedModel] = {}

    def resolve(name: str, **_: object) -> ScriptedModel:
        made[name] = ScriptedModel([CRITICS[name]] * 100, name=name)
        return made[name]

    monkeypatch.setattr("harness.assemble.named_models.resolve_model", resolve)
    return made


def loop(folder: Path, critic: str) -> Path:
    folder.mkdir()
    (folder / "loop.toml").write_text(
        f'goal = "A report whose every claim cites a source"\nmodel = "openai/author"\n{critic}',
        encoding="utf-8",
    )
    return folder


PANEL = """
[critic]
threshold = 7
aggregate = "median"

[[critic.panel]]
model = "anthropic/careful"
role = "fact-checker"

[[critic.panel]]
model = "gemini/strict"
role = "editor"

[[critic.panel]]
model = "openai/lenient"
role = "audience"
"""

LENIENT = """
[critic]
threshold = 7
model = "openai/lenient"
"""


def calibrate(
    capsys: pytest.CaptureFixture[str], folder: Path, examples_dir: Path
) -> dict[str, Any]:
    code = main(["calibrate", str(folder), "--examples", str(examples_dir), "--json", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return data


def test_a_panel_with_one_lenient_critic_accepts_a_third_as_much_bad_work_as_it_alone(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    scripted_critics: dict[str, ScriptedModel],
) -> None:
    labels = examples(tmp_path / "examples")
    rejected = sum(not ok for _, ok in labels)
    panel = calibrate(capsys, loop(tmp_path / "panel", PANEL), tmp_path / "examples")
    alone = calibrate(capsys, loop(tmp_path / "alone", LENIENT), tmp_path / "examples")

    for found in (panel, alone):  # the report says what it rests on
        assert (found["examples"], found["accepted"], found["rejected"]) == (
            48,
            48 - rejected,
            rejected,
        )
    assert panel["critic"] == "panel of fact-checker, editor, audience"
    assert alone["critic"] == "openai/lenient"
    assert alone["verdicts"] == {  # 5 of the 30 rejected reports pass the lenient critic
        "threshold": 7.0, "agreement": 0.8958, "false_accept_rate": 0.1667, "false_reject_rate": 0.0
    }  # fmt: skip
    assert panel["verdicts"] == {  # the panel passes none of them, and fails 2 of 18 good ones
        "threshold": 7.0, "agreement": 0.9583, "false_accept_rate": 0.0, "false_reject_rate": 0.1111
    }  # fmt: skip
    assert panel["verdicts"]["false_accept_rate"] <= alone["verdicts"]["false_accept_rate"] / 3
    # Every critic scored every artifact from its content: 48 requests each (the lenient
    # model was made anew for the second run); the author's model judged nothing.
    for name in ("anthropic/careful", "gemini/strict", "openai/lenient"):
        assert len(scripted_critics[name].calls) == 48
    assert scripted_critics["openai/author"].calls == []
    # For the lenient critic alone, the threshold that best matches the person lies higher.
    assert alone["best"] == {
        "threshold": 8.2, "agreement": 1.0, "false_accept_rate": 0.0, "false_reject_rate": 0.0
    }  # fmt: skip
    assert panel["splits"] == 2
    assert alone["splits"] == 0


def test_a_panel_whose_majority_is_lenient_is_no_better_than_the_lenient_critic(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    scripted_critics: dict[str, ScriptedModel],
) -> None:
    examples(tmp_path / "examples")
    two_lenient = PANEL.replace("gemini/strict", "mistral/lenient")
    panel = calibrate(capsys, loop(tmp_path / "panel", two_lenient), tmp_path / "examples")
    alone = calibrate(capsys, loop(tmp_path / "alone", LENIENT), tmp_path / "examples")
    assert panel["verdicts"]["false_accept_rate"] > alone["verdicts"]["false_accept_rate"] / 3


def test_the_report_reads_as_a_table_with_what_it_rests_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    scripted_critics: dict[str, ScriptedModel],
) -> None:
    examples(tmp_path / "examples")
    folder = loop(tmp_path / "alone", LENIENT)
    assert main(["calibrate", str(folder), "--examples", str(tmp_path / "examples")]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "critic: openai/lenient",
        "examples: 48 (18 accepted, 30 rejected by a person)",
        "as configured: threshold 7",
        "  agreement: 90% of 48",
        "  false accepts: 17% of 30",
        "  false rejects: 0% of 18",
        "best threshold: threshold 8.2",
        "  agreement: 100% of 48",
        "  false accepts: 0% of 30",
        "  false rejects: 0% of 18",
    ]
    progress = captured.err.splitlines()
    assert len(progress) == 48
    assert progress[0].startswith("[1/48] report-00.md: person reject")


def test_calibrate_without_examples_or_with_the_critic_off_is_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = loop(tmp_path / "alone", LENIENT)
    assert main(["calibrate", str(folder)]) == 2
    assert "calibrate: give --examples DIR or --approvals RUNS" in capsys.readouterr().err
    off = loop(
        tmp_path / "off", '[critic]\nenabled = false\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    )
    examples(tmp_path / "examples")
    assert main(["calibrate", str(off), "--examples", str(tmp_path / "examples")]) == 2
    assert "field 'critic.enabled': the critic is disabled" in capsys.readouterr().err


def test_calibrate_on_runs_that_recorded_no_approval_is_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = loop(tmp_path / "alone", LENIENT)
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    (runs / "r1" / "events.jsonl").write_text("", encoding="utf-8")
    assert main(["calibrate", str(folder), "--approvals", str(runs)]) == 2
    assert capsys.readouterr().err == (
        f"harness: {runs}: no approved or rejected round with a critic's verdict\n"
    )


def test_a_critic_model_alone_calibrates_without_an_author_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    monkeypatch.delenv("HARNESS_CRITIC_MODEL", raising=False)
    labels = examples(tmp_path / "examples")
    folder = tmp_path / "loop"
    folder.mkdir()
    (folder / "loop.toml").write_text('goal = "A report"\n[critic]\nthreshold = 7\n')
    verdicts = [{"name": "verdict", "arguments": {"reasons": ["ok"], "fixes": [], "score": 9}}]
    (folder / "critic.json").write_text(json.dumps(verdicts * len(labels)))

    code = main(["calibrate", str(folder), "--examples", str(tmp_path / "examples"),
                 "--critic-model", "scripted:critic.json", "--quiet"])  # fmt: skip

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "no model given" not in captured.err
    accepted = sum(ok for _, ok in labels)
    assert captured.out.splitlines()[:4] == [
        "critic: scripted:critic.json",
        f"examples: {len(labels)} ({accepted} accepted, {len(labels) - accepted} rejected by a person)",
        "as configured: threshold 7",
        f"  agreement: {round(100 * accepted / len(labels))}% of {len(labels)}",
    ]


def test_a_critic_of_another_family_is_compared_with_the_authors_model_on_the_same_examples(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    scripted_critics: dict[str, ScriptedModel],
) -> None:
    examples(tmp_path / "examples")
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "loop.toml").write_text(
        'goal = "A report whose every claim cites a source"\nmodel = "openai/lenient"\n'
        '[critic]\nthreshold = 7\nmodel = "anthropic/careful"\n',
        encoding="utf-8",
    )
    assert (
        main(["calibrate", str(folder), "--examples", str(tmp_path / "examples"), "--quiet"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "critic: anthropic/careful"
    assert lines[3:6] == [
        "  agreement: 94% of 48",
        "  false accepts: 0% of 30",
        "  false rejects: 17% of 18",
    ]
    assert lines[10:] == [  # the author's own family's 1.6 points of leniency, measured
        "the author's model as critic (openai/lenient), on the same examples:",
        "  mean score: +1.4 against anthropic/careful",
        "  agreement: 90% of 48",
        "  false accepts: 17% of 30",
        "  false rejects: 0% of 18",
        "  verdicts differ on 8 of 48",
    ]
    assert len(scripted_critics["anthropic/careful"].calls) == 48
    assert len(scripted_critics["openai/lenient"].calls) == 48  # the same setup, the author's model
    found = calibrate(capsys, folder, tmp_path / "examples")
    assert found["critic"] == "anthropic/careful"
    assert (found["compared"]["critic"], found["compared"]["mean_score_difference"]) == (
        "openai/lenient",
        1.38,
    )
    assert found["compared"]["verdicts"]["false_accept_rate"] == 0.1667
    assert found["verdicts"]["false_accept_rate"] == 0.0
