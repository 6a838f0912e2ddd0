"""``harness replay``: a recorded run played again, offline, and where it now differs.

The recorded replies answer as the model (:class:`~harness.models.replay.ReplayModel`); everything
else is today's: the loop.toml as it is now (its tools, gates, critic settings), run on a fresh
clone of the repository checked out at the run's base commit. The first divergence is reported:
a tool observation that differs (at its round and step), a model call the recording does not
have, a gate whose result changed, a verdict or an outcome that changed.

A run killed mid-round leaves a recording whose last round has no end: the replay plays every
recorded step of it and stops where the recording stops (:class:`RecordingEnd`), which is no
divergence; one that ends that round before the recording's last model call diverges.

With ``live``, the recording answers only up to its first divergence (a tool observation that
differs, a model call, a role or a round the recording lacks) or the end of a cut-off recording;
from that call on the models today's loop.toml names answer (:mod:`harness.models.handover`), and
the run goes on as a normal run up to the loop's own caps: a killed run resumes where it stopped.

The replay is a run of its own: its events and trajectory are kept under the loop's
``.harness/runs/`` like any other, so ``harness show`` reads it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.assemble.launch import recorded_loop
from harness.assemble.named_models import Overrides
from harness.core.errors import ConfigError
from harness.core.trajectory_schema import (
    GateStep,
    ModelStep,
    RoundFinish,
    RunBegin,
    ToolStep,
    VerdictStep,
)
from harness.models.handover import Handover, Takeover
from harness.models.replay import Divergence, Observation, RecordedTurn, ReplayModel
from harness.observe.run_summary import RUNS_DIR
from harness.observe.trajectory import Trajectory
from harness.outer.decision import RoundReport
from harness.outer.options import new_run_id
from harness.outer.result import RunResult
from harness.replay.live import Kept, keep_work, run_end, verdict_text
from harness.sandbox.bwrap import bwrap_problem
from harness.spec.loop_spec import LoopSpec
from harness.spec.outline import find_config
from harness.workspace.cleanup import top_of
from harness.workspace.git_cmd import IDENTITY_ENV, git


@dataclass(frozen=True)
class RecordedRound:
    """What the recording says a round's checks found."""

    gates: dict[str, tuple[bool, tuple[str, ...]]] = field(default_factory=dict)
    verdict: tuple[float, bool] | None = None
    outcome: str | None = None


@dataclass(frozen=True)
class RecordingEnd:
    """Where a cut-off recording stops: its last round (one with no end), the step of its last
    session that the last recorded model call was (0: none was recorded in the round), and the
    model calls the round holds."""

    round: int
    step: int
    calls: int

    def describe(self) -> str:
        step = f"step {self.step}" if self.step else "before its first step"
        return f"the recording ends at round {self.round}, {step} (the run was cut off)"


@dataclass(frozen=True)
class ReplayOutcome:
    """A replay's result: the run it made, the first divergence (None: none), and where the
    recording ends when the recorded run was cut off (None: it was not)."""

    recorded_run: str
    run_id: str
    result: RunResult
    divergence: Divergence | None
    rounds: int
    end: RecordingEnd | None = None
    reached_end: bool = False  # the replay went as far as the recording goes
    live: bool = False  # live models were to answer past the recording (``--live``)
    takeover: Takeover | None = None  # where they did; None: the recording answered every call
    kept: Kept | None = None  # where the live models' work is kept, once they took over

    def describe(self) -> str:
        lines = [
            f"replay of run {self.recorded_run} (recorded again as run {self.run_id}): "
            f"{self.rounds} round(s), {self.result.stop_reason.value}"
        ]
        if self.end is not None:
            played = ": the replay played it up to there" if self.reached_end else ""
            lines.append(f"{self.end.describe()}{played}")
        if self.divergence is not None:
            lines.append(f"first divergence at {self.divergence.describe()}")
        else:
            upto = " up to there" if self.takeover is not None else ""
            lines.append(f"no divergence{upto}: every observation, gate, verdict and outcome as "
                         "recorded")  # fmt: skip
        if self.takeover is not None:
            lines.append(self.takeover.describe())
        elif self.live:
            lines.append("the live model was not called: the recording answered every call")
        if self.live:
            lines.append(run_end(self.result))
        if self.kept is not None:
            lines.append(self.kept.said)
        return "\n".join(lines)


def replay_run(
    run_dir: Path,
    *,
    last_round: int | None = None,
    repo: Path | None = None,
    loop: Path | None = None,
    live: bool = False,
) -> ReplayOutcome:
    """Replay the run recorded in ``run_dir`` (rounds 1 to ``last_round``, else all).

    The recording is data: it answers as the model and is compared with, and nothing in it
    decides what runs or where. ``loop``: today's loop.toml (or its folder; default: the one in
    the current folder); ``repo``: the repository whose base commit is checked out (default: the
    one holding ``loop``), which ``loop`` must lie in. The recorded ``loop_file`` and
    ``repo_root`` are not read. The replay's commands always run sandboxed (:func:`sandboxed`).
    ``live``: the models today's loop.toml names answer from the first divergence or the end of
    the recording on (with ``last_round``, from round ``last_round + 1`` at the latest), up to
    the loop's caps.
    """
    trajectory = Trajectory.load(run_dir)
    header = next((r for r in trajectory.records if isinstance(r, RunBegin)), None)
    if header is None or header.base is None:
        raise ConfigError(f"{trajectory.path}: the run's workspace was not in git; there is no "
                          "base commit to replay it from")  # fmt: skip
    try:
        loop_file = find_config(loop if loop is not None else Path(".")).resolve()
    except ConfigError as exc:
        raise ConfigError(f"{exc}; --loop names the loop.toml to replay with (a recording's "
                          "own is never used)") from None  # fmt: skip
    repo = top_of(loop_file.parent) if repo is None else repo.resolve()
    if repo is None:
        raise ConfigError(f"{loop_file}: not in a git repository (--repo names the repository "
                          "to replay in)")  # fmt: skip
    try:
        inside = loop_file.parent.relative_to(repo)
    except ValueError:
        raise ConfigError(f"{loop_file}: not inside the repository to replay in, {repo} "
                          "(--repo)") from None  # fmt: skip
    recorded_rounds = [n for n in trajectory.rounds() if last_round is None or n <= last_round]
    end = recording_end(trajectory, recorded_rounds)
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as scratch:
        checkout = Path(scratch) / repo.name
        git(
            Path(scratch), "clone", "--quiet", "--no-checkout", "--shared", str(repo), str(checkout)
        )
        git(checkout, "checkout", "--quiet", "--detach", header.base)
        root = checkout / inside
        root.mkdir(parents=True, exist_ok=True)  # a loop.toml added since the base commit
        shutil.copyfile(loop_file, root / loop_file.name)  # today's settings
        git(checkout, "-c", f"core.hooksPath={os.devnull}", "commit", "--quiet", "--no-gpg-sign",
            "--allow-empty", "-am", "harness replay: loop.toml as it is now", env=IDENTITY_ENV)  # fmt: skip
        model = _replay_model(trajectory, header, recorded_rounds, [str(checkout), scratch], end)
        handover = Handover(model) if live else None
        copy = root / loop_file.name
        run_id = new_run_id()
        cap = max(recorded_rounds, default=1) if last_round is not None and not live else None
        try:
            spec = sandboxed(LoopSpec.from_toml(copy))
            outer = recorded_loop(
                spec,
                overrides=Overrides(max_iterations=cap, earlier="restart"),
                run_id=run_id,
                model=None if handover else model,
                wrap=handover.model if handover else None,
            )
        except ConfigError as exc:  # named after the user's loop.toml, not the replay's copy
            raise ConfigError(str(exc).replace(str(copy), str(loop_file))) from exc
        result = outer.run()
        shutil.copytree(root / RUNS_DIR / run_id, loop_file.parent / RUNS_DIR / run_id,
                        dirs_exist_ok=True)  # fmt: skip
        takeover = handover.takeover if handover else None
        if (
            takeover
            and takeover.round not in recorded_rounds
            and takeover.round in trajectory.rounds()
        ):
            why = f"the replay plays rounds 1 to {last_round} only"  # as asked: no divergence
            takeover = Takeover(takeover.round, takeover.call, why)
        kept = (
            keep_work(repo, checkout, result.branch, loop_name=outer.settings.name,
                      replayed=spec.progress_path(),
                      progress=LoopSpec.from_toml(loop_file).progress_path())
            if takeover
            else None
        )  # fmt: skip
    divergence = _divergence(trajectory, model, result, recorded_rounds, end, takeover)
    return ReplayOutcome(
        header.run_id, run_id, result, divergence, len(result.rounds), end, model.reached_end,
        live, takeover, kept,
    )  # fmt: skip


def sandboxed(spec: LoopSpec) -> LoopSpec:
    """``spec`` with its commands sandboxed whatever its ``[sandbox] backend`` says: a replay runs
    the commands a recording holds, which are data. ``auto`` and ``none`` become ``bwrap``; where
    bwrap does not work the replay stops (docker and podman stay as chosen)."""
    if spec.sandbox.backend in ("docker", "podman", "bwrap"):
        return spec
    problem = bwrap_problem()
    if problem:
        raise ConfigError(f"{spec.source}: a replay runs the recording's commands only in a "
                          f"sandbox, and bwrap does not work here ({problem}); set [sandbox] "
                          "backend to docker or podman")  # fmt: skip
    return spec.with_changes(sandbox={**spec.sandbox.model_dump(), "backend": "bwrap"})


def _divergence(
    trajectory: Trajectory,
    model: ReplayModel,
    result: RunResult,
    rounds: list[int],
    end: RecordingEnd | None,
    takeover: Takeover | None,
) -> Divergence | None:
    """The replay's first divergence; past a live model's take-over nothing is compared."""
    divergences = list(model.divergences)
    if end is not None:
        made = model.calls_made.get(end.round, 0)
        if made < end.calls and any(r.round == end.round for r in result.rounds):
            divergences.append(Divergence(end.round, None, f"the round ended after {made} model "
                                          f"call(s); the recording holds {end.calls}"))  # fmt: skip
    reports = result.rounds
    if takeover is not None:
        divergences = [
            d for d in divergences if d.round < takeover.round or d is takeover.divergence
        ]
        reports = [r for r in reports if r.round < takeover.round]
        rounds = [n for n in rounds if n < takeover.round]
    return first_divergence(trajectory, divergences, reports, rounds, end)


def recording_end(trajectory: Trajectory, rounds: list[int]) -> RecordingEnd | None:
    """Where the recording stops, when its last round among ``rounds`` has no end (the run was
    killed in it); None when every one of them ended."""
    if not rounds:
        return None
    last = rounds[-1]
    if any(isinstance(r, RoundFinish) and r.round == last for r in trajectory.records):
        return None
    calls = [r for r in trajectory.records if isinstance(r, ModelStep) and r.round == last]
    session = calls[-1].session if calls else None
    step = sum(1 for r in calls if r.session == session and r.role == calls[-1].role)
    return RecordingEnd(last, step, len(calls))


def _replay_model(
    trajectory: Trajectory,
    header: RunBegin,
    rounds: list[int],
    folders: list[str],
    end: RecordingEnd | None,
) -> ReplayModel:
    turns: dict[int, list[RecordedTurn]] = {number: [] for number in rounds}
    observations: dict[tuple[int, str], Observation] = {}
    for record in trajectory.records:
        if record.round not in rounds:
            continue
        assert record.round is not None
        if isinstance(record, ModelStep):
            turns[record.round].append(RecordedTurn(record.role, record.reply, record.usage))
        elif isinstance(record, ToolStep):
            text = trajectory.text(record.observation)
            observations[(record.round, record.call_id)] = Observation(
                record.step, record.name, text
            )
    return ReplayModel(
        turns,
        observations,
        name=f"replay:{header.run_id}",
        context_window=header.context_window or 128_000,
        folders=[header.workspace, *folders],
        cut_round=end.round if end is not None else None,
    )


def recorded_checks(trajectory: Trajectory) -> dict[int, RecordedRound]:
    """Each recorded round's gates, verdict and outcome."""
    checks: dict[int, RecordedRound] = {}
    for record in trajectory.records:
        if record.round is None:
            continue
        now = checks.setdefault(record.round, RecordedRound())
        if isinstance(record, GateStep):
            now.gates[record.name] = (record.passed, tuple(record.failures))
        elif isinstance(record, VerdictStep):
            checks[record.round] = replace(now, verdict=(record.score, record.passed))
        elif isinstance(record, RoundFinish):
            checks[record.round] = replace(now, outcome=record.outcome)
    return checks


def first_divergence(
    trajectory: Trajectory,
    model_divergences: list[Divergence],
    reports: list[RoundReport],
    rounds: list[int],
    end: RecordingEnd | None = None,
) -> Divergence | None:
    """The earliest difference, round by round: in a round, the model's (a tool observation, a
    model call) come before the gates', then the verdict's, then the outcome's. Past the end of
    a cut-off recording (``end``) there is nothing to compare."""
    checks = recorded_checks(trajectory)
    played = {report.round: report for report in reports}
    for number in rounds:
        in_round = [d for d in model_divergences if d.round == number]
        if in_round:
            return in_round[0]
        if end is not None and number == end.round:
            break
        recorded = checks.get(number)
        report = played.get(number)
        if recorded is None or recorded.outcome is None:
            if report is not None:
                return Divergence(number, None, "the round ended; the recording of it did not")
            continue
        if report is None:
            return Divergence(number, None, "the round did not end", recorded.outcome, "")
        found = _check_divergence(number, recorded, report)
        if found is not None:
            return found
    later = [d for d in model_divergences if d.round not in rounds]
    if later:
        return later[0]
    extra = [r.round for r in reports if r.round not in rounds]
    if extra:
        return Divergence(extra[0], None, "the replay played a round the recording does not have")
    return None


def _check_divergence(
    number: int, recorded: RecordedRound, report: RoundReport
) -> Divergence | None:
    now_gates = {g.name: (g.passed, tuple(g.failures)) for g in report.gates}
    for name in dict.fromkeys([*recorded.gates, *now_gates]):
        before, after = recorded.gates.get(name), now_gates.get(name)
        if before != after:
            return Divergence(
                number, None, f"gate {name} differs", _gate_text(before), _gate_text(after)
            )
    now_verdict = (report.verdict.score, report.verdict.passed) if report.verdict else None
    if recorded.verdict != now_verdict:
        return Divergence(
            number, None, "the verdict differs", verdict_text(recorded.verdict),
            verdict_text(now_verdict),
        )  # fmt: skip
    if recorded.outcome != report.outcome:
        return Divergence(
            number, None, "the outcome differs", recorded.outcome or "", report.outcome
        )
    return None


def _gate_text(gate: tuple[bool, tuple[str, ...]] | None) -> str:
    if gate is None:
        return "not run"
    passed, failures = gate
    return ("passed" if passed else "failed") + (f": {', '.join(failures)}" if failures else "")
