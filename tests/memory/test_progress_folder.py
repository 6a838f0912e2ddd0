"""The shipped progress/ folder: its example is a complete progress file that reads back exactly."""

from __future__ import annotations

from pathlib import Path

from harness import Progress
from harness.memory.progress_terms import Status

PROGRESS = Path(__file__).resolve().parents[2] / "progress"


def test_the_example_loads_with_every_part() -> None:
    progress = Progress.load(PROGRESS / "example.sample.md")
    assert progress.name == "fix-dates"
    assert progress.status is Status.IN_PROGRESS
    assert (progress.iteration, progress.max_iterations) == (2, 10)
    assert [(item.text, item.done) for item in progress.checklist] == [
        ("reproduce the failure", True),
        ("handle ISO week dates", True),
        ("handle week 53 at a year's end", False),
    ]
    assert [(a.round, a.outcome, a.critic_score) for a in progress.attempts] == [
        (1, "failed: pytest", 4.0),
        (2, "failed: pytest", 6.5),
    ]
    assert progress.resume_point.endswith("start from tests/test_dates.py::test_week_53.")
    assert progress.notes.startswith("The dates module is shared")
    assert [section.heading for section in progress.extra] == ["Run"]


def test_the_example_round_trips_byte_for_byte(tmp_path: Path) -> None:
    original = (PROGRESS / "example.sample.md").read_bytes()
    progress = Progress.load(PROGRESS / "example.sample.md")
    assert progress.render().encode() == original
    progress.save(tmp_path / "copy.md")
    assert (tmp_path / "copy.md").read_bytes() == original


def test_the_readme_snippet_prints_what_it_says() -> None:
    readme = (PROGRESS / "README.md").read_text(encoding="utf-8")
    progress = Progress.load(PROGRESS / "example.sample.md")
    printed = f"{progress.status} {progress.iteration} {[i.text for i in progress.open_items]}"
    assert f"# {printed}\n" in readme
