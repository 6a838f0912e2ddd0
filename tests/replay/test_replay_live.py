"""A live replay in process, the live model a script: a gate changed since the recording sends
the run into a round the recording lacks, which the live model plays; ``last_round`` replays
that many rounds and hands the next one to the live model instead of capping the run."""

from __future__ import annotations

import json
from pathlib import Path

from harness.assemble.launch import recorded_loop
from harness.core.stop import StopReason
from harness.core.trajectory_schema import ModelStep
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.models.handover import CUT_OFF
from harness.observe.run_summary import RUNS_DIR
from harness.observe.trajectory import TRAJECTORY_FILE, Trajectory
from harness.replay.run import replay_run
from harness.spec.loop_spec import LoopSpec
from harness.workspace.cleanup import run_branches
from harness.workspace.git_cmd import branch_exists
from tests.conftest import git, make_repo, verdict_entry
from tests.replay.test_replay import LOOP, _recorded

LIVE = [
    {"name": "write_file", "arguments": {"path": "out.txt", "content": "no\n"}},
    "out.txt says no",
    verdict_entry(9, ["it says no"]),
]


def _live_loop(loop: Path, script: list[object], gate: str) -> None:
    """Today's loop.toml: a script outside the repository as its model, and ``gate``."""
    path = loop.parent.parent / "live.json"
    path.write_text(json.dumps(script))
    text = LOOP.replace("scripted:script.json", f"scripted:{path}")
    loop.write_text(text.replace("grep -qx yes out.txt", gate))


def test_a_gate_that_now_fails_sends_the_run_into_a_round_the_live_model_plays(
    tmp_path: Path,
) -> None:
    loop, run = _recorded(tmp_path)
    _live_loop(loop, LIVE, "grep -qx no out.txt")
    outcome = replay_run(run, loop=loop, live=True)
    assert outcome.result.stop_reason is StopReason.PASSED, outcome.describe()
    assert [r.round for r in outcome.result.rounds] == [1, 2]
    found = outcome.divergence
    assert found is not None
    assert (found.round, found.what, found.recorded, found.now) == (
        1,
        "gate says yes differs",
        "passed",
        "failed",
    )
    takeover = outcome.takeover
    assert takeover is not None
    assert (takeover.round, takeover.call, takeover.why) == (
        2,
        1,
        "the recording has no such round",
    )
    records = Trajectory.load(loop.parent / RUNS_DIR / outcome.run_id).records
    steps = [(r.round, r.model) for r in records if isinstance(r, ModelStep)]
    assert steps[:4] == [(1, "replay:rec00001")] * 4  # round 1 as recorded (no critic: it failed)
    assert steps[4:] == [(2, "scripted:live.json")] * 3  # round 2: the live author and critic
    assert outcome.kept is not None
    kept = outcome.kept.branch
    assert kept is not None
    assert git(loop.parent, "show", f"{kept}:out.txt") == "no"
    progress = loop.parent / "progress" / "small.md"
    assert outcome.describe().splitlines()[-3:] == [
        "the run ended PASSED after round 2 (verdict 9/10, passed)",
        f"its work is on branch {kept} in {loop.parent}",
        f"the loop's progress ({progress}) is the replay's now, the earlier one set aside as "
        "small.previous.md",
    ]
    # the loop stands where the replay left it, as after a normal run of it
    now = Progress.load(progress)
    assert (now.status, now.iteration, RunState.read(now).branch) == (Status.PASSED, 2, kept)
    assert RunState.read(now).worktree is None  # the replay's, removed with its clone
    # the loop's own: `harness clean` finds it among the loop's runs, beside the recorded one
    loops_runs = [b.branch for b in run_branches(loop.parent, "small", progress)]
    assert kept in loops_runs, loops_runs
    assert len(loops_runs) == 2, loops_runs
    assert outcome.result.branch != kept  # the replay's clone named it after its own loop
    assert not branch_exists(loop.parent, outcome.result.branch or "")
    assert Progress.load(progress.with_name("small.previous.md")).iteration == 1  # the recording's


def test_the_rounds_after_last_round_are_the_live_models(tmp_path: Path) -> None:
    """A run recorded in two rounds (the first fails its gate), replayed up to round 1: round 2
    is the live model's, as asked, and no divergence."""
    two_rounds = {
        "rounds": {
            "1": [
                {"name": "write_file", "arguments": {"path": "out.txt", "content": "no\n"}},
                "no",
            ],
            "2": [
                {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes\n"}},
                "yes",
                verdict_entry(9),
            ],
        }
    }
    root = make_repo(
        tmp_path / "project",
        {"loop.toml": LOOP, "script.json": json.dumps(two_rounds), ".gitignore": ".harness/\n"},
    )
    recorded = recorded_loop(LoopSpec.from_toml(root / "loop.toml"), run_id="rec00002").run()
    assert [r.round for r in recorded.rounds] == [1, 2]
    live = [
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "yes\n"}},
        "live: yes",
        verdict_entry(8),
    ]
    _live_loop(root / "loop.toml", live, "grep -qx yes out.txt")
    outcome = replay_run(root / RUNS_DIR / "rec00002", last_round=1, loop=root, live=True)
    assert outcome.result.stop_reason is StopReason.PASSED, outcome.describe()
    assert outcome.divergence is None, outcome.describe()
    assert outcome.takeover is not None
    assert (outcome.takeover.round, outcome.takeover.call, outcome.takeover.why) == (
        2,
        1,
        "the replay plays rounds 1 to 1 only",
    )
    verdicts = [(r.round, r.verdict.score if r.verdict else None) for r in outcome.result.rounds]
    assert verdicts == [(1, None), (2, 8.0)]  # round 2 judged by the live critic, not as recorded


def test_a_cut_off_round_that_now_ends_early_is_a_divergence_before_the_take_over(
    tmp_path: Path,
) -> None:
    """A recording cut off after its third model call, whose second reply is now an answer: the
    replayed round ends after two calls (a divergence), fails today's gate, and the round after
    it, past the end of the recording, is the live model's."""
    loop, run = _recorded(tmp_path)
    path = run / TRAJECTORY_FILE
    lines = path.read_text().splitlines()
    calls = [n for n, line in enumerate(lines) if '"kind":"model_call"' in line.replace(" ", "")]
    second = json.loads(lines[calls[1]])
    second["reply"] = {"content": "done early", "tool_calls": [], "reasoning": None}
    lines[calls[1]] = json.dumps(second)
    path.write_text("\n".join(lines[: calls[2] + 1]) + "\n")  # killed after its third call
    live = [
        {"name": "write_file", "arguments": {"path": "out.txt", "content": "no\n"}},
        "live: no",
    ]
    _live_loop(loop, live, "grep -qx no out.txt")
    loop.write_text(loop.read_text().replace("threshold = 8\n", "enabled = false\n"))
    outcome = replay_run(run, loop=loop, live=True)
    assert outcome.result.stop_reason is StopReason.PASSED, outcome.describe()
    found = outcome.divergence
    assert found is not None
    assert (found.round, found.what) == (
        1,
        "the round ended after 2 model call(s); the recording holds 3",
    )
    assert outcome.takeover is not None
    assert (outcome.takeover.round, outcome.takeover.call, outcome.takeover.why) == (
        2,
        1,
        CUT_OFF,
    )
    assert not outcome.reached_end  # the replay ended the cut-off round before its recorded end
    assert "played it up to there" not in outcome.describe()
