"""The ``Earlier runs`` section a run starts with when it carries what its loop learned."""

from __future__ import annotations

from harness.memory.lessons import HEADING, LESSON_CHARS, earlier_runs
from harness.memory.progress import Progress
from harness.memory.progress_items import Attempt
from harness.memory.progress_terms import Status
from harness.memory.text_fields import Section


def test_a_run_s_ending_rounds_and_notes_come_first_then_what_it_carried() -> None:
    earlier = Progress(
        goal="fix the parser",
        status=Status.ESCALATED,
        iteration=2,
        attempts=[
            Attempt(round=1, outcome="failed: tests", summary="tried a regex\nit broke dates"),
            Attempt(round=2, outcome="failed: critic 4/10"),
        ],
        notes="dates are\nlocal time",
        extra=[Section(heading=HEADING, body="- passed after round 1: an older goal")],
    )

    section = earlier_runs(earlier)

    assert section.heading == HEADING
    assert section.body.splitlines() == [
        "- escalated after round 2: fix the parser",
        "  - round 1: failed: tests: tried a regex it broke dates",
        "  - round 2: failed: critic 4/10",
        "  - notes: dates are local time",
        "- passed after round 1: an older goal",
    ]


def test_the_oldest_lines_go_first_once_the_section_would_pass_its_bound() -> None:
    line = "- passed after round 1: " + "x" * 75  # 100 characters with its newline
    older = "\n".join([line] * (LESSON_CHARS // 100))  # fills the bound exactly with the head
    earlier = Progress(
        goal="g", status=Status.PASSED, iteration=1, extra=[Section(heading=HEADING, body=older)]
    )

    body = earlier_runs(earlier).body

    assert body.startswith("- passed after round 1: g\n")  # the newest run is kept
    assert len(body) + 1 <= LESSON_CHARS
    assert body.count(line) == LESSON_CHARS // 100 - 1  # one old line gave way to the new one
    exact = Progress(goal="g" * 75, status=Status.PASSED, iteration=1, extra=earlier.extra)
    assert len(earlier_runs(exact).body) + 1 == LESSON_CHARS  # a line ending at the bound stays
