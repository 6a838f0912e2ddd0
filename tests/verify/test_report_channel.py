"""The reporter's channel and what its records say: keyed lines in order, and outcomes that must
have been seen to run, in a run as whole as what its reporter saw collected."""

from __future__ import annotations

import gc
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.verify.junit import JUnitReport
from harness.verify.report_channel import _RECORD as RECORD
from harness.verify.report_channel import (
    MAX_BYTES,
    ChannelLog,
    ReportChannel,
    Started,
    reporter_source,
)
from harness.verify.run_outcomes import suite_report


def framed(key: bytes, number: int, record: dict[str, object]) -> bytes:
    line = f"{number} {json.dumps(record)}"
    return f"{hmac.new(key, line.encode(), hashlib.sha256).hexdigest()} {line}\n".encode()


def write(channel: ReportChannel, data: bytes) -> None:
    pipe = os.open(channel.pipe, os.O_WRONLY)
    os.write(pipe, data)
    os.close(pipe)


def take_key(channel: ReportChannel) -> bytes:
    key = channel.key_file.read_bytes()
    channel.key_file.unlink()
    return key


ROOT = Path(__file__).resolve().parents[2]
START = {"kind": "start"}
FINISH = {"kind": "finish", "exitstatus": 0}


def test_keyed_lines_in_order_are_kept_and_the_key_file_is_private(tmp_path: Path) -> None:
    with ReportChannel(tmp_path) as channel:
        assert channel.key_file.stat().st_mode & 0o777 == 0o600
        key = take_key(channel)
        assert len(key) == 32
        write(channel, framed(key, 1, START) + framed(key, 2, FINISH))

    assert channel.log.problem is None
    assert [r.kind for r in channel.log.records] == ["start", "finish"]


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (lambda key: framed(b"x" * 32, 1, START),
         "its report channel carried a line its reporter did not write (line 1)"),
        (lambda key: framed(key, 1, START) + b"1 {}\n",
         "its report channel carried a line its reporter did not write (line 2)"),
        (lambda key: framed(key, 1, START) + framed(key, 3, FINISH),
         "its report channel lost line 2 (line 3 came next)"),
        (lambda key: framed(key, 1, START) + framed(key, 1, START),
         "its report channel lost line 2 (line 1 came next)"),
        (lambda key: framed(key, 1, START) + framed(key, 2, FINISH)[:-9],
         "its report channel ended inside line 2"),
        (lambda key: framed(key, 1, {"kind": "finish"}),
         "its reporter wrote a record the harness cannot read (line 1: "),
    ],
    ids=["wrong key", "unsigned", "gap", "replayed", "cut short", "malformed"],
)  # fmt: skip
def test_a_line_not_from_the_reporter_or_out_of_order_is_a_problem(
    tmp_path: Path, lines: object, problem: str
) -> None:
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        write(channel, lines(key))  # type: ignore[operator]

    assert channel.log.problem is not None
    assert channel.log.problem.startswith(problem)
    assert len(channel.log.records) <= 1  # nothing after the problem is kept


def test_a_flood_is_cut_off_but_drained(tmp_path: Path) -> None:
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        pipe = os.open(channel.pipe, os.O_WRONLY)
        line = framed(key, 1, START)
        os.write(pipe, line)
        chunk = b"x" * (1 << 20)
        for _ in range((MAX_BYTES >> 20) + 2):  # blocks unless the reader keeps draining
            os.write(pipe, chunk)
        os.close(pipe)

    assert channel.log.problem == "its report channel carried more than 64 MB"


def wait_for(condition: Callable[[], object], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the reader did not get there"
        time.sleep(0.01)


def test_exactly_the_cap_is_read_and_one_byte_more_is_a_problem(tmp_path: Path) -> None:
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        # framed as framed() frames it, without copying 64 MB through json.dumps
        size = MAX_BYTES - len(framed(key, 1, {"kind": "uncollected", "id": "t.py", "text": ""}))
        signed = b'1 {"kind": "uncollected", "id": "t.py", "text": "' + b"x" * size + b'"}'
        line = hmac.new(key, signed, hashlib.sha256).hexdigest().encode() + b" " + signed + b"\n"
        assert len(line) == MAX_BYTES
        pipe = os.open(channel.pipe, os.O_WRONLY)
        os.write(pipe, line)
        wait_for(lambda: channel.log.records)
        assert channel.log.problem is None
        os.write(pipe, b"\n")  # one byte past the cap, a line of its own
        os.close(pipe)

    assert channel.log.problem == "its report channel carried more than 64 MB"
    assert [(r.kind, len(r.text)) for r in channel.log.records] == [  # type: ignore[union-attr]
        ("uncollected", size)
    ]


@pytest.mark.parametrize(
    "pause", [None, False, True], ids=["the same write", "one write after", "a later write"]
)
def test_valid_lines_after_a_problem_are_not_kept(tmp_path: Path, pause: bool | None) -> None:
    """Nothing after the problem is kept: not the lines read with it (one write, under the
    pipe's atomic size, is one read), nor those read after."""
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        pipe = os.open(channel.pipe, os.O_WRONLY)
        first = framed(key, 1, START) + framed(b"x" * 32, 2, START)
        after = framed(key, 2, START) + framed(key, 3, FINISH)
        if pause is None:
            os.write(pipe, first + after)
        else:
            os.write(pipe, first)
            if pause:
                wait_for(lambda: channel.log.problem)
            os.write(pipe, after)
        os.close(pipe)

    assert channel.log.problem == (
        "its report channel carried a line its reporter did not write (line 2)"
    )
    assert channel.log.records == [Started(kind="start")]


def test_lines_written_after_a_pause_are_read(tmp_path: Path) -> None:
    """pytest may be silent for long (a slow test): the reader waits through it."""
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        pipe = os.open(channel.pipe, os.O_WRONLY)
        os.write(pipe, framed(key, 1, START))
        time.sleep(0.3)  # several polls with nothing to read
        os.write(pipe, framed(key, 2, FINISH))
        os.close(pipe)

    assert channel.log.problem is None
    assert [r.kind for r in channel.log.records] == ["start", "finish"]


def test_a_record_with_a_field_it_does_not_have_is_a_problem_and_records_are_frozen(
    tmp_path: Path,
) -> None:
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        write(channel, framed(key, 1, START) + framed(key, 2, {**FINISH, "passed": True}))

    assert channel.log.problem is not None
    assert channel.log.problem.startswith(
        "its reporter wrote a record the harness cannot read (line 2: "
    )
    assert "passed" in channel.log.problem
    (started,) = channel.log.records
    with pytest.raises(ValueError, match="frozen"):
        started.kind = "finish"  # type: ignore[misc]
    assert started == Started(kind="start")


def test_the_pipe_is_private_and_named_in_the_reporters_arguments(tmp_path: Path) -> None:
    with ReportChannel(tmp_path) as channel:
        assert channel.reporter_args() == [str(tmp_path / "key"), str(tmp_path / "pipe")]
        assert (tmp_path / "pipe").stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "key").stat().st_mode & 0o777 == 0o600
    source = reporter_source()
    assert source == (ROOT / "harness" / "verify" / "pytest_reporter.py").read_text()
    compile(source, "pytest_reporter.py", "exec")


def test_a_channel_left_closes_its_pipe(tmp_path: Path) -> None:
    before = set(os.listdir("/proc/self/fd"))
    with ReportChannel(tmp_path):
        pass
    gc.collect()
    assert set(os.listdir("/proc/self/fd")) - before == set()


def test_a_channel_never_left_does_not_keep_its_process_alive(tmp_path: Path) -> None:
    """A process that stops without leaving the block (an error on the way out) still ends."""
    code = (
        "import sys; from pathlib import Path; "
        "from harness.verify.report_channel import ReportChannel; "
        "ReportChannel(Path(sys.argv[1])).__enter__(); print('entered')"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=20, check=False)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "entered\n")


def log(*records: dict[str, object], problem: str | None = None) -> ChannelLog:
    return ChannelLog([RECORD.validate_python(r) for r in records], problem)


def phases(test_id: str, raised: str | None = None, outcome: str = "passed",
           when: tuple[str, ...] = ("setup", "call", "teardown")) -> list[dict[str, object]]:  # fmt: skip
    out: list[dict[str, object]] = []
    for phase in when:
        failing = phase == "call"
        out.append({"kind": "ran", "id": test_id, "when": phase,
                    "raised": raised if failing else None})  # fmt: skip
        out.append({"kind": "report", "id": test_id, "when": phase,
                    "outcome": outcome if failing else "passed", "xfail": False})  # fmt: skip
    return out


COLLECTED = {"kind": "collected", "ids": ["t::a", "t::b"]}


def test_a_whole_run_is_a_report_of_each_test() -> None:
    run = log(START, COLLECTED, *phases("t::a"), *phases("t::b"), FINISH)

    report = suite_report(run, 0)

    assert report == JUnitReport(2, 0, 0, 0, [], {"t::a": "passed", "t::b": "passed"})


def test_a_pass_that_raised_or_never_ran_is_a_failure_that_says_so() -> None:
    raised = [r for r in phases("t::a", raised="AssertionError")]  # reported passed all the same
    unseen = [r for r in phases("t::b") if r["kind"] == "report"]

    report = suite_report(log(START, COLLECTED, *raised, *unseen, FINISH), 0)

    assert isinstance(report, JUnitReport)
    assert report.outcomes == {"t::a": "failed", "t::b": "error"}
    assert [(p.test_id, p.kind, p.message) for p in report.problems] == [
        ("t::a", "failure", "pytest's report says its call passed, but it raised AssertionError"),
        ("t::b", "error", "pytest's report says its setup passed, but it was never seen to run"),
        ("t::b", "failure", "pytest's report says its call passed, but it was never seen to run"),
        ("t::b", "error",
         "pytest's report says its teardown passed, but it was never seen to run"),
    ]  # fmt: skip


def test_honest_failures_skips_and_xfails_keep_their_outcomes() -> None:
    failed = phases("t::a", raised="AssertionError", outcome="failed")
    skipped = phases("t::b", raised="skip", outcome="skipped")
    run = log(START, COLLECTED, *failed, *skipped, FINISH)

    report = suite_report(run, 1)

    assert isinstance(report, JUnitReport)
    assert report.outcomes == {"t::a": "failed", "t::b": "skipped"}
    assert [p.test_id for p in report.problems] == ["t::a"]


BOTH = [*phases("t::a"), *phases("t::b")]


@pytest.mark.parametrize(
    ("run", "code", "reason"),
    [
        ([], 4, "wrote no test report"),
        ([START, COLLECTED, *BOTH], 0, "ended before its session finished"),
        ([START, COLLECTED, *BOTH, {"kind": "finish", "exitstatus": 1}], 0,
         "its session ended with status 1"),
        ([START, COLLECTED, *phases("t::a"), FINISH], 0,
         "did not finish 1 collected test: t::b"),
        ([START, COLLECTED, *BOTH, *phases("t::c"), FINISH], 0,
         "reported 1 test it never collected: t::c"),
        ([START, COLLECTED, *phases("t::a"), *phases("t::a")], 0,
         "ran the setup of t::a twice"),
        ([START, *BOTH, FINISH], 0, "its reporter never saw what it collected"),
        ([START, COLLECTED, COLLECTED, *BOTH, FINISH], 0, "collected its tests twice"),
    ],
    ids=["no report", "early end", "status", "missing", "extra", "twice", "never collected",
         "collected twice"],
)  # fmt: skip
def test_a_run_that_is_not_whole_is_not_trusted(
    run: list[dict[str, object]], code: int, reason: str
) -> None:
    assert suite_report(log(*run), code) == reason


def test_a_run_whole_to_the_test_passes_and_the_boundaries_do_not() -> None:
    """Exactly the collected tests finished: one fewer or one more is not the whole run."""
    whole = [START, {"kind": "collected", "ids": ["t::a"]}, *phases("t::a"), FINISH]
    assert isinstance(suite_report(log(*whole), 0), JUnitReport)
    unfinished = [r for r in phases("t::a") if r["when"] != "teardown"]
    cut = [START, {"kind": "collected", "ids": ["t::a"]}, *unfinished, FINISH]
    assert suite_report(log(*cut), 0) == "did not finish 1 collected test: t::a"
    empty = [START, {"kind": "collected", "ids": []}, *phases("t::a"), FINISH]
    assert suite_report(log(*empty), 0) == "reported 1 test it never collected: t::a"


def test_a_report_twice_and_a_problem_in_the_run_are_not_trusted() -> None:
    twice = [r for r in phases("t::a") if r["kind"] == "report"][:1]
    run = log(START, COLLECTED, *phases("t::a"), *twice)
    assert suite_report(run, 0) == "reported the setup of t::a twice"
    assert suite_report(log(problem="p"), 0) == "p"


def test_leaving_the_channel_wakes_its_reader_at_once_and_keeps_the_last_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("harness.verify.report_channel._POLL_MS", 60_000)
    with ReportChannel(tmp_path) as channel:
        key = take_key(channel)
        time.sleep(0.05)  # the reader is inside its (minute-long) poll
        write(channel, framed(key, 1, START) + framed(key, 2, FINISH))
        left = time.monotonic()
    assert time.monotonic() - left < 5  # not at the end of the poll a minute later
    assert channel.log.problem is None
    assert [r.kind for r in channel.log.records] == ["start", "finish"]
