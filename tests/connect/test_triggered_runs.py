"""A loop started again by its trigger carries what it learned: a schedule's third run starts
with what the first run learned; a loop that passed is built on; ``fresh = true`` starts over."""

from __future__ import annotations

import io
import json
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.cli.watch import Watcher, make_triggers
from harness.connect.reviews import Review
from harness.connect.triggers import ScheduleTrigger, Start
from harness.memory.lessons import HEADING
from harness.spec import LoopSpec
from tests.conftest import git, make_repo

T0 = datetime(2026, 1, 1, 6, 0, 30, tzinfo=UTC)
WRITE_DONE = {"name": "write_file", "arguments": {"path": "done.txt", "content": "ok\n"}}


def _spec(tmp_path: Path, script: list[object], *, fresh: bool = False) -> LoopSpec:
    project = make_repo(tmp_path / "project", {"notes.txt": "x\n"})
    (tmp_path / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(textwrap.dedent(f"""\
        name = "nightly"
        goal = "leave done.txt"
        model = "scripted:../script.json"
        max_iterations = 1
        isolation = "worktree"
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "done file"
        cmd = "test -e done.txt"
        [[triggers]]
        type = "schedule"
        cron = "* * * * *"
        fresh = {str(fresh).lower()}
        """))  # fmt: skip
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    return LoopSpec.from_toml(project)


def _fire(spec: LoopSpec, times: int) -> list[str]:
    """Fire the loop's schedule ``times`` times, a minute apart, each run ending before the next;
    the run ids."""
    now = [T0]
    watcher = Watcher(spec, make_triggers(spec, now=T0), clock=lambda: now[0], out=io.StringIO())
    for _ in range(times):
        now[0] += timedelta(minutes=1)
        watcher.tick()
        watcher.wait()
    assert len(watcher.started) == times
    return watcher.started


def _first_task(spec: LoopSpec, run_id: str) -> str:
    events = spec.root / ".harness" / "runs" / run_id / "events.jsonl"
    starts = [
        e for e in map(json.loads, events.read_text().splitlines()) if e["kind"] == "round_start"
    ]
    return str(starts[0]["task"])


def _branch(spec: LoopSpec, run_id: str) -> str:
    (name,) = git(
        spec.root, "branch", "--list", f"harness/*{run_id}", "--format=%(refname:short)"
    ).splitlines()
    return name


def _base(spec: LoopSpec, run_id: str) -> str:
    """The commit the run's branch started from (its harnessBase), as a commit id."""
    return git(spec.root, "config", f"branch.{_branch(spec, run_id)}.harnessBase")


def _head(spec: LoopSpec, ref: str) -> str:
    return git(spec.root, "rev-parse", ref)


def test_a_schedule_s_third_run_starts_with_what_the_first_one_learned(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ["nothing to do"])  # every run escalates: the gate never passes

    first, second, third = _fire(spec, 3)

    assert HEADING not in _first_task(spec, first)
    lesson = "- escalated after round 1: leave done.txt\n  - round 1: failed"
    task = _first_task(spec, third)
    section = task[task.index(f"## {HEADING}") :]
    assert section.count(lesson) == 2  # the second run's, then the first run's it carried
    assert "done file" in section  # the gate that failed, by name
    assert _first_task(spec, second).count(lesson) == 1
    progress = (spec.root / "progress" / "nightly.md").read_text()
    assert progress.count(lesson) == 2
    assert (spec.root / "progress" / "nightly.previous.md").is_file()  # the second run's


def test_with_fresh_each_run_starts_over_knowing_nothing(tmp_path: Path) -> None:
    spec = _spec(tmp_path, ["nothing to do"], fresh=True)

    runs = _fire(spec, 3)

    assert all(HEADING not in _first_task(spec, run) for run in runs)
    assert HEADING not in (spec.root / "progress" / "nightly.md").read_text()


def test_a_run_after_a_pass_is_built_on_the_passed_run_s_branch(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [WRITE_DONE, "wrote it"])

    first, second = _fire(spec, 2)

    lesson = (
        "## Earlier runs\n\n- passed after round 1: leave done.txt\n  - round 1: passed: wrote it\n"
    )
    assert _first_task(spec, second).endswith(lesson)
    assert _base(spec, second) == _head(spec, _branch(spec, first))  # built on the first's work
    assert _head(spec, _branch(spec, first)) != _head(spec, "main")


def test_with_fresh_a_run_after_a_pass_starts_from_the_repository_s_head(tmp_path: Path) -> None:
    spec = _spec(tmp_path, [WRITE_DONE, "wrote it"], fresh=True)

    first, second = _fire(spec, 2)

    assert _base(spec, second) == _base(spec, first) == _head(spec, "main")


def test_a_schedule_s_start_says_fresh_only_when_its_config_does() -> None:
    assert ScheduleTrigger("* * * * *", now=T0).poll(T0 + timedelta(minutes=1))[0].fresh is False
    fresh = ScheduleTrigger("* * * * *", now=T0, fresh=True)
    assert fresh.poll(T0 + timedelta(minutes=1))[0].fresh is True


def test_a_start_says_what_its_run_does_with_the_loop_s_earlier_run() -> None:
    review = Review(3, "ann", "rename it", "changes requested")
    starts = [
        Start("schedule"),
        Start("webhook", branch="feature", commit="a" * 40),
        Start("schedule", fresh=True),
        Start("issues", "fix it", 4),
        Start("webhook", review=review),
    ]
    assert [start.earlier for start in starts] == ["carry", "carry", "restart", "resume", "reopen"]
