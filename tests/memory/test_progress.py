"""progress.md: exact round trips, a person's edits between sessions, located errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness.core.errors import ConfigError, ToolError
from harness.memory.progress import Progress
from harness.memory.progress_items import Attempt, ChecklistItem, GateSummary
from harness.memory.progress_terms import Status
from harness.memory.text_fields import Section

SAMPLE = """\
# Progress: fix-date-parsing

Goal: make tests/test_dates.py pass
Status: in progress
Round: 2 of 10
Resume point: parse_date still fails on ISO weeks;
  look at the week branch next.

## Checklist

- [x] reproduce the failure
- [ ] fix parse_date

## Attempts

### Round 1 — failed

- Gate: pytest — failed (tests/test_dates.py::test_week, tests/test_dates.py::test_leap)
- Gate: ruff — passed
- Critic: 5.0/10
- Tokens: 1234 · cost $0.0012
- Commit: 3f2a9c1
- Summary: rewrote the tokenizer

### Round 2 — failed

- Gate: pytest — failed (tests/test_dates.py::test_week)
- Tokens: 980 · cost $0.00091
- Summary: fixed leap years;
  weeks still wrong

## Notes

Free text, kept verbatim.

  Indented lines too.
"""


def test_sample_reads_into_fields_and_writes_back_byte_for_byte() -> None:
    progress = Progress.parse(SAMPLE)

    assert progress.name == "fix-date-parsing"
    assert progress.status is Status.IN_PROGRESS
    assert (progress.iteration, progress.max_iterations, progress.next_round) == (2, 10, 3)
    assert (
        progress.resume_point
        == "parse_date still fails on ISO weeks;\nlook at the week branch next."
    )
    assert progress.checklist == [
        ChecklistItem(text="reproduce the failure", done=True),
        ChecklistItem(text="fix parse_date"),
    ]
    first = progress.attempts[0]
    assert first.gates == (
        GateSummary(
            name="pytest",
            passed=False,
            detail="tests/test_dates.py::test_week, tests/test_dates.py::test_leap",
        ),
        GateSummary(name="ruff", passed=True),
    )
    assert (first.critic_score, first.tokens, first.cost_usd, first.commit) == (
        5.0,
        1234,
        0.0012,
        "3f2a9c1",
    )
    assert progress.attempts[1].critic_score is None
    assert progress.attempts[1].summary == "fixed leap years;\nweeks still wrong"
    assert progress.notes == "Free text, kept verbatim.\n\n  Indented lines too."
    assert progress.render() == SAMPLE


def test_load_save_load_keeps_file_and_object(tmp_path: Path) -> None:
    path = tmp_path / "goal.md"
    path.write_text(SAMPLE, encoding="utf-8")

    first = Progress.load(path)
    first.save()
    again = Progress.load(path)

    assert path.read_text(encoding="utf-8") == SAMPLE
    assert again == first
    assert again.path == path


def test_a_session_records_rounds_and_the_next_one_resumes(tmp_path: Path) -> None:
    path = tmp_path / "progress" / "dates.md"
    path.parent.mkdir()
    progress = Progress.load_or_create(path, name="dates", goal="fix it", max_iterations=5)
    assert progress.status is Status.NOT_STARTED
    assert not path.exists()

    progress.add_item("reproduce")
    progress.add_item("fix")
    progress.mark_done("reproduce")
    attempt = progress.record_attempt(
        "failed",
        gates=[GateSummary(name="pytest", passed=False, detail="t::a")],
        critic_score=4.25,
        tokens=10,
        cost_usd=0.5,
        summary="first try",
    )
    progress.set_resume_point("look at t::a")
    progress.save()

    resumed = Progress.load_or_create(path, name="ignored", max_iterations=99)
    assert attempt.round == 1
    assert resumed == progress
    assert (resumed.status, resumed.iteration, resumed.next_round) == (Status.IN_PROGRESS, 1, 2)
    assert resumed.rounds_left == 4
    assert [i.text for i in resumed.open_items] == ["fix"]
    assert resumed.record_attempt("passed").round == 2


def test_a_persons_edits_between_sessions_are_kept_and_honoured(tmp_path: Path) -> None:
    path = tmp_path / "goal.md"
    path.write_text(SAMPLE, encoding="utf-8")
    edited = (
        SAMPLE.replace("- [ ] fix parse_date", "- [X] fix parse_date\n- [ ] add a changelog entry")
        .replace(
            "Resume point: parse_date still fails on ISO weeks;\n  look at the week branch next.",
            "Resume point: start from calendar.py,\nnot from parse_date",
        )
        .replace("- Commit: 3f2a9c1", "- Commit: 3f2a9c1\n- Tried: a regex, too slow")
        .replace("  Indented lines too.", "  Indented lines too.\n\nPerson: use dateutil instead.")
        + "\n## Questions for the agent\n\nWhy not `fromisoformat`?\n"
    )
    path.write_text(edited, encoding="utf-8")

    session = Progress.load(path)
    assert [item.done for item in session.checklist] == [True, True, False]
    assert session.resume_point == "start from calendar.py,\nnot from parse_date"
    assert session.attempts[0].extra == ("- Tried: a regex, too slow",)
    session.record_attempt("failed", summary="third try")
    session.save()

    after = Progress.load(path)
    text = path.read_text(encoding="utf-8")
    assert after.checklist[2] == ChecklistItem(text="add a changelog entry")
    assert after.resume_point == "start from calendar.py,\nnot from parse_date"
    assert "Person: use dateutil instead." in after.notes
    assert after.extra == [
        Section(heading="Questions for the agent", body="Why not `fromisoformat`?")
    ]
    assert "- Tried: a regex, too slow" in text
    assert [a.round for a in after.attempts] == [1, 2, 3]
    assert after.iteration == 3


def test_what_an_agent_writes_reaches_the_file_without_escapes_or_controls(tmp_path: Path) -> None:
    """Read in a terminal (cat, git diff), progress.md must not clear it or write its clipboard."""
    path = tmp_path / "p.md"
    progress = Progress.load_or_create(path, name="n", goal="fix \x1b[2Jit")
    progress.add_item("look\x1b]52;c;ZWNobyBoaQ==\x07 here")
    progress.record_attempt("failed", summary="tried\x1b[31m red\x1b[0m\tand\x00 more\nline two")
    progress.set_resume_point("go\u202eon")
    progress.save()

    text = path.read_text(encoding="utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    again = Progress.load(path)
    assert again.goal == "fix it"
    assert [item.text for item in again.checklist] == ["look here"]
    assert again.attempts[0].summary == "tried red\tand more\nline two"
    assert again.resume_point == "goon"


def test_a_hand_written_file_with_only_a_checklist_loads_with_defaults() -> None:
    progress = Progress.parse("## Tasks\n- [x] 로그인 API 구현\n- [ ] 토큰 재발급 로직\n")

    assert progress.status is Status.NOT_STARTED
    assert (progress.iteration, progress.max_iterations) == (0, None)
    assert [(i.text, i.done) for i in progress.checklist] == [
        ("로그인 API 구현", True),
        ("토큰 재발급 로직", False),
    ]


BROKEN = [
    ("# Progress: x\nStatus: in progress\nRound: abc\n", 3, "round"),
    ("# Progress: x\nRound: 3 of 0\n", 2, "round"),
    ("# Progress: x\nStatus: finished\n", 2, "status"),
    ("# Progress: x\nStatus: passed\nStatus: passed\n", 3, "twice"),
    ("# Progress: x\nOwner: me\n", 2, "Owner"),
    ("# Progress: x\n\n## Checklist\n\n- [x] ok\nnot an item\n", 6, "not an item"),
    ("# Progress: x\n\n## Checklist\n\n- [y] maybe\n", 5, "[y]"),
    ("# Progress: x\n\n## Checklist\n\n- [ ]\n", 5, "task"),
    ("# Progress: x\n\n## Attempts\n\n### Round — failed\n", 5, "Round N"),
    ("# Progress: x\n\n## Attempts\n\n### Second try\n", 5, "Round N"),
    ("# Progress: x\n\n## Attempts\n\nsome words\n### Round 1\n", 5, "Round N"),
    ("# Progress: x\n\n## Attempts\n\n### Round 1 — x\n\n- Critic: high\n", 7, "critic"),
    ("# Progress: x\n\n## Attempts\n\n### Round 1 — x\n\n- Critic: 12/10\n", 7, "critic_score"),
    ("# Progress: x\n\n## Attempts\n\n### Round 1\n- Tokens: many\n", 6, "tokens"),
    ("# Progress: x\n\n## Attempts\n\n### Round 1\n- Tokens: 1 · cost $-2\n", 6, "cost"),
    ("# Progress: x\n\n## Attempts\n\n### Round 0\n", 5, "round"),
    ("# Progress: x\n\n## Attempts\n\n### Round 1\n\n- Gate:\n", 7, "gate line needs text"),
    ("# Progress: x\n\n## Attempts\n\n### Round 1\n- Critic: 1\n- Critic: 2\n", 7, "second"),
    ("# P\n\n## Notes\n\na\n\n## Notes\n\nb\n", 7, "second notes section (first on line 3)"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), BROKEN)
def test_a_broken_file_names_file_and_line_and_is_left_alone(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "broken.md"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ConfigError, match=rf"^{path}:{line}: ") as caught:
        Progress.load(path)
    with pytest.raises(ConfigError):
        Progress.load_or_create(path, name="x")

    assert fragment.casefold() in str(caught.value).casefold()
    assert path.read_text(encoding="utf-8") == text


def test_unreadable_and_empty_files_name_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("\n  \n", encoding="utf-8")

    with pytest.raises(ConfigError, match=f"{empty}: progress file is empty"):
        Progress.load(empty)
    with pytest.raises(ConfigError, match=f"{tmp_path / 'missing.md'}: cannot read"):
        Progress.load(tmp_path / "missing.md")
    with pytest.raises(ConfigError, match="^edited.md: progress file is empty$"):
        Progress.parse("\ufeff\r\n  \r", source="edited.md")


def test_save_needs_a_path(tmp_path: Path) -> None:
    progress = Progress(name="x")
    with pytest.raises(ConfigError, match="no path"):
        progress.save()

    written = progress.save(tmp_path / "x.md")
    assert progress.path == written == tmp_path / "x.md"
    assert Progress.load(written) == progress


def test_mark_done_by_index_text_or_unique_part() -> None:
    progress = Progress(name="x")
    for text in ("reproduce the failure", "fix parse_date", "fix parse_time"):
        progress.add_item(text)

    assert progress.add_item("Fix  parse_date") is progress.checklist[1]
    assert progress.mark_done(0).done
    assert progress.mark_done("FIX PARSE_DATE") == ChecklistItem(text="fix parse_date", done=True)
    assert progress.mark_done("time").text == "fix parse_time"
    assert not progress.mark_done(2, done=False).done
    with pytest.raises(ToolError, match="matches several items.*2. fix parse_date"):
        progress.mark_done("fix")
    with pytest.raises(ToolError, match="matches no item"):
        progress.mark_done("deploy")
    with pytest.raises(ToolError, match="no checklist item 7; there are 3"):
        progress.mark_done(7)
    assert len(progress.checklist) == 3


def test_gate_lines_that_read_as_summaries_become_summaries() -> None:
    attempt = Attempt(round=1, gates=["pytest  —  failed (a::b)", "lint was skipped"])

    assert attempt.gates == (
        GateSummary(name="pytest", passed=False, detail="a::b"),
        "lint was skipped",
    )
    with pytest.raises(ValueError, match="gate line needs text"):
        Attempt(round=1, gates=["   "])


def test_notes_and_agent_view() -> None:
    progress = Progress(name="x", resume_point="  a  \n\n  b ")
    for n in range(5):
        progress.record_attempt(f"failed {n}")
    progress.notes = "\n\nfirst\n\nsecond\n"

    view = progress.render_for_agent(last_attempts=2)
    assert progress.resume_point == "a\nb"
    assert progress.notes == "first\n\nsecond"
    assert "### Round 4 — failed 3" in view
    assert "### Round 5 — failed 4" in view
    assert "### Round 3" not in view
    assert len(progress.attempts) == 5
    assert view.startswith("Status: in progress\nResume point: a\n  b\n\n## Attempts\n\n")
    assert view.endswith("## Notes\n\nfirst\n\nsecond\n")


def test_the_agent_view_leaves_out_what_the_task_says_and_what_is_empty() -> None:
    progress = Progress(name="x", goal="make it pass", max_iterations=10)
    progress.record_attempt("failed")

    assert progress.render_for_agent(last_attempts=0) == "Status: in progress\n"
    progress.extra = [Section(heading="Decisions", body="keep the API"), Section(heading="Empty")]
    progress.add_item("read the test")
    view = progress.render_for_agent(last_attempts=0)
    assert view == (
        "Status: in progress\n\n## Checklist\n\n- [ ] read the test\n\n"
        "## Decisions\n\nkeep the API\n"
    )
    assert "make it pass" not in view
    assert "Round:" not in view
    assert "Goal:" in progress.render()  # the file itself keeps all of it


def test_values_that_would_not_read_back_the_same_are_refused() -> None:
    progress = Progress(name="x")

    with pytest.raises(ValidationError, match="notes\n.*'## Decisions' would start a section"):
        Progress(notes="intro\n## Decisions\nkeep it")
    with pytest.raises(ValidationError, match="'## Decisions' would start a section"):
        progress.notes = "intro\n## Decisions"
    with pytest.raises(ValidationError, match="'Notes:' would be read back as progress.md's notes"):
        progress.extra = [Section(heading="Notes:")]
    with pytest.raises(
        ValidationError, match="'To-do' would be read back as progress.md's checklist"
    ):
        Progress(extra=[Section(heading="To-do", body="- [ ] x")])
    assert progress.notes == ""
    assert progress.extra == []


def test_a_heading_with_a_hash_and_deeper_headings_in_notes_read_back() -> None:
    progress = Progress(
        name="x", notes="intro\n### Decisions\nkeep it", extra=[Section(heading="C#", body="b")]
    )

    again = Progress.parse(progress.render())

    assert again == progress


def test_invalid_assignment_is_refused() -> None:
    progress = Progress(name="x")
    progress.status = "passed"  # type: ignore[assignment]
    assert progress.status is Status.PASSED
    with pytest.raises(ValueError, match="status"):
        progress.status = "done"  # type: ignore[assignment]


# --- generated documents ------------------------------------------------------------------

_WORDS = st.text("abcXYZ019  \t.,;:!?'\"()[]{}<>*_-—–/\\|@$%&+=~`^é한글€\u3000#", max_size=30)
_NAMES = st.text("abcxyz0189._:/", min_size=1, max_size=12)
# Now and then a line that reads as a heading: such notes or bodies are refused when set.
_LINE = st.tuples(st.sampled_from(["", "", "", "", "", "", "", "## "]), _WORDS).map("".join)
_LINES = st.lists(_LINE, max_size=4).map("\n".join)
_gate_summaries = st.builds(
    GateSummary, name=_NAMES, passed=st.booleans(), detail=_NAMES | st.just("")
)
_attempts = st.builds(
    Attempt,
    round=st.integers(1, 200),
    outcome=_WORDS,
    gates=st.lists(_gate_summaries | _NAMES.filter(str.strip), max_size=3),
    critic_score=st.none() | st.floats(0, 10),
    tokens=st.integers(0, 10**9),
    cost_usd=st.floats(0, 10**4),
    commit=_NAMES,
    summary=_LINES,
    extra=st.lists(_WORDS.filter(str.strip).map(lambda s: f"- Tried: {s}"), max_size=2),
)
_sections = st.builds(
    Section,
    heading=_WORDS | st.sampled_from(["Notes:", "to-do", "History"]),
    body=_LINES,
)
_candidates = st.builds(
    Progress,
    name=_WORDS,
    goal=_WORDS,
    status=st.sampled_from(Status),
    iteration=st.integers(0, 100),
    max_iterations=st.none() | st.integers(1, 100),
    resume_point=_LINES,
    checklist=st.lists(
        st.builds(ChecklistItem, text=_WORDS.filter(str.strip), done=st.booleans()), max_size=5
    ),
    attempts=st.lists(_attempts, max_size=4),
    notes=_LINES,
    extra=st.lists(_sections, max_size=2),
)


@st.composite
def _progress(draw: st.DrawFn) -> Progress:
    """A Progress, or a rejected example where one of its values is refused when set."""
    try:
        return draw(_candidates)
    except ValidationError:
        reject()


@settings(max_examples=150, deadline=None)
@given(_progress())
def test_any_progress_survives_a_round_trip(progress: Progress) -> None:
    text = progress.render()
    again = Progress.parse(text)

    assert again == progress
    assert again.render() == text


_EDITS = st.lists(
    st.tuples(
        st.integers(0, 60),
        st.integers(0, 80),
        st.text("#-[]x :0123456789—/.$·\n abc", max_size=5),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(_EDITS)
def test_any_hand_edit_parses_stably_or_fails_with_a_line(
    edits: list[tuple[int, int, str, int]],
) -> None:
    lines = SAMPLE.split("\n")
    for row, column, inserted, deleted in edits:
        line = lines[row % len(lines)]
        lines[row % len(lines)] = line[:column] + inserted + line[column + deleted :]

    try:
        progress = Progress.parse("\n".join(lines), source="edited.md")
    except ConfigError as exc:
        message = str(exc)
    else:
        message = ""
    if message:
        assert re.match(r"^edited\.md:\d+: \S", message)
        return
    text = progress.render()
    assert Progress.parse(text) == progress
    assert Progress.parse(text).render() == text
