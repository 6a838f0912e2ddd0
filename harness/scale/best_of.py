"""Best-of-N: N independent attempts at one goal in parallel, each on its own branch; keep the best.

The winner is a passing attempt with the highest critic score (of its last round), then the
fewest tokens, then the lowest number. With a reproduction gate, the attempts' reproduction tests
vote first (:mod:`harness.scale.repro_vote`): when every passing attempt was judged by another's
tests, the one passing the largest share of the others' tests ranks highest. Every other attempt's branch and progress file are kept
for inspection. ``loop_for(n)`` builds attempt ``n``'s loop (1-based); each must have its own
name and progress file, so each gets its own branch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import KW_ONLY, dataclass
from functools import partial
from pathlib import Path

from harness.core.section import check_field
from harness.core.usage import Usage
from harness.engine.body import describe
from harness.outer.loop import OuterLoop
from harness.outer.result import RunResult
from harness.scale.job import Backend, Job, Place, run_loop
from harness.scale.pool import check_backend, open_pool, run_all
from harness.scale.repro_vote import Tally, cast_votes
from harness.spec.loop_spec import LoopSpec
from harness.verify.reproduction import ReproductionGate
from harness.workspace.git_cmd import rev_parse


@dataclass(frozen=True)
class Attempt:
    """One attempt and how its loop ended (``error`` if it could not be built or crashed)."""

    number: int
    result: RunResult | None
    error: str | None = None
    votes: Tally | None = None  # the other attempts' reproduction tests it passes

    @property
    def passed(self) -> bool:
        return self.result is not None and self.result.passed

    @property
    def score(self) -> float | None:
        """The critic's score of the attempt's last round, if a critic judged it."""
        if self.result is None or not self.result.rounds:
            return None
        verdict = self.result.rounds[-1].verdict
        return None if verdict is None else verdict.score

    @property
    def tokens(self) -> int:
        return 0 if self.result is None else self.result.usage.total_tokens


@dataclass(frozen=True)
class BestOfResult:
    attempts: tuple[Attempt, ...]
    winner: Attempt | None

    @property
    def usage(self) -> Usage:
        return sum((a.result.usage for a in self.attempts if a.result), start=Usage())


def pick_winner(attempts: Sequence[Attempt]) -> Attempt | None:
    """The passing attempt with the largest share of votes (when every passing attempt has
    some), then the highest score, then the fewest tokens; None if none passed."""
    passing = [a for a in attempts if a.passed]
    if not passing:
        return None
    voted = all(a.votes is not None for a in passing)
    return min(
        passing,
        key=lambda a: (
            -_share(a) if voted else 0.0,
            -(a.score if a.score is not None else -math.inf),
            a.tokens,
            a.number,
        ),
    )


def _share(attempt: Attempt) -> float:
    return attempt.votes.share if attempt.votes is not None else 0.0


def why_it_won(attempts: Sequence[Attempt], winner: Attempt) -> str:
    """Why ``winner`` won, by :func:`pick_winner`'s order: the measure that set it apart from
    the other passing attempts, or, when they tie on every measure, that the lowest number wins."""
    rivals = [a for a in attempts if a.passed and a is not winner]
    if not rivals:
        return "the only attempt that passed"
    votes = ""
    if winner.votes is not None and all(a.votes is not None for a in rivals):
        best = [a for a in rivals if _share(a) == _share(winner)]
        if not best:
            return f"it passes the most of the other attempts' reproduction tests ({winner.votes})"
        rivals, votes = best, f"votes {winner.votes}, "
    score = "no score" if winner.score is None else f"score {winner.score:g}"
    level = [a for a in rivals if a.score == winner.score]
    if not level:
        return f"the highest score ({score})"
    score = votes + score
    numbers = ", ".join(str(a.number) for a in sorted(level, key=lambda a: a.number))
    tied = [a for a in level if a.tokens == winner.tokens]
    if not tied:
        return f"tied on {score} with attempt {numbers}; the fewest tokens ({winner.tokens:,})"
    numbers = ", ".join(str(a.number) for a in sorted(tied, key=lambda a: a.number))
    return (
        f"tied with attempt {numbers} on every measure ({score}, {winner.tokens:,} tokens); "
        "the lowest-numbered attempt wins a tie"
    )


@dataclass(eq=False)  # compared and hashed by identity
class BestOf:
    """Run ``attempts`` loops from ``loop_for`` at once and pick the winner.

    ``backend="ray"`` runs them as Ray tasks, as :class:`~harness.scale.fleet.Fleet` runs its
    subtasks: each worker gets the git repository holding ``workspace`` and calls ``loop_for``
    in its copy; each attempt's branch comes back. ``reproduction``: the loops' reproduction
    gate, whose tests then vote (:mod:`harness.scale.repro_vote`).
    """

    loop_for: Callable[[int], OuterLoop]
    _: KW_ONLY
    attempts: int = 3
    backend: Backend = "local"
    ray_address: str | None = None
    workspace: str | Path = "."
    reproduction: ReproductionGate | None = None

    def __post_init__(self) -> None:
        check_field(LoopSpec, "attempts", self.attempts)  # loop.toml's attempts: its bounds
        self.backend = check_backend(self.backend)

    def run(self) -> BestOfResult:
        """Every attempt at once in the pool; each loop is bounded by its own caps and budget."""
        numbers = range(1, self.attempts + 1)
        base = _head(Path(self.workspace)) if self.reproduction is not None else None
        jobs = [
            Job(f"attempt-{n}", partial(_attempt, self.loop_for, n), workspace=str(self.workspace))
            for n in numbers
        ]
        with closing(open_pool(self.backend, address=self.ray_address)) as pool:
            outputs = run_all(pool, jobs, at_once=self.attempts)
        attempts = tuple(
            Attempt(n, out)
            if isinstance(out, RunResult)
            else Attempt(n, None, describe(out) if isinstance(out, BaseException) else repr(out))
            for n, out in zip(numbers, outputs, strict=True)
        )
        if self.reproduction is not None and base is not None:
            attempts = _voted(attempts, self.reproduction, Path(self.workspace), base)
        return BestOfResult(attempts, pick_winner(attempts))


def _voted(
    attempts: tuple[Attempt, ...], gate: ReproductionGate, workspace: Path, base: str
) -> tuple[Attempt, ...]:
    """The attempts with their votes: the passing ones judged by the tests of those whose last
    round passed the reproduction gate."""
    commits = {a.number: _head(workspace, a.result.branch) for a in attempts if a.result}
    ended = {number: commit for number, commit in commits.items() if commit is not None}
    voters = {a.number: ended[a.number] for a in attempts if a.number in ended and _wrote(a, gate)}
    candidates = {a.number: ended[a.number] for a in attempts if a.passed and a.number in ended}
    tallies = cast_votes(voters, candidates, gate=gate, workspace=workspace, base=base)
    return tuple(dataclasses.replace(a, votes=tallies.get(a.number)) for a in attempts)


def _wrote(attempt: Attempt, gate: ReproductionGate) -> bool:
    """Whether the attempt's last round passed the reproduction gate: its tests reproduce."""
    rounds = attempt.result.rounds if attempt.result else []
    return bool(rounds) and any(g.passed and g.name == gate.name for g in rounds[-1].gates)


def _head(workspace: Path, branch: str | None = "HEAD") -> str | None:
    """The commit ``branch`` names in the repository holding ``workspace``; None for none."""
    return None if branch is None else rev_parse(workspace, f"{branch}^{{commit}}")


def _attempt(loop_for: Callable[[int], OuterLoop], number: int, place: Place) -> RunResult:
    """Attempt ``number``'s loop, built and run where the pool put it."""
    return run_loop(place, partial(loop_for, number))[1]
