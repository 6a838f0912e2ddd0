"""Fleet loops: split a broad goal into independent subtasks, run one outer loop per subtask in
parallel (each isolated), keep the results that pass an evaluation gate, and synthesise.

The subtasks' loops run in the :mod:`pool <harness.scale.pool>`, at most eight at once, on
threads of this process or on a Ray cluster; every subtask's loop keeps its own bounds, branch,
progress and escalation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import KW_ONLY, dataclass, field
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.core.errors import ConfigError, HarnessError
from harness.core.json_reply import find_json
from harness.core.section import check_field
from harness.core.usage import Usage
from harness.engine.body import describe
from harness.models.base import Model
from harness.models.budget import metered
from harness.outer.loop import OuterLoop
from harness.outer.result import RunResult
from harness.scale.artifacts import run_artifacts
from harness.scale.batch_task import NAME_PATTERN
from harness.scale.job import Backend, Job, Place, run_loop
from harness.scale.pool import check_backend, open_pool, run_all
from harness.spec.sections import FleetConfig
from harness.verify.gates import GateReport

PLAN_PROMPT = """\
You split a broad goal into independent subtasks that separate agents can each finish and \
verify on their own, in parallel, without waiting for one another. Answer with ONLY a JSON \
object: {{"subtasks": [{{"name": "short-kebab-case-name", "goal": "what done means for this \
subtask, checkably"}}]}} with 1 to {max_subtasks} subtasks."""

SYNTHESIS_PROMPT = """\
You combine the verified results of independent subtasks into one answer to the overall goal. \
Each result gives the subtask's last summary and its artifacts: the content of the files it \
produced. Use only what the results say; name any subtask that did not pass and what is missing \
because of it. Keep each citation ([source: ...] "quote") exactly as the results give it."""

SYNTHESIS_REPAIR = """\
That synthesis failed the checks every round passes:
{failures}
Answer again with the whole synthesis, every quote exactly as the results give it."""


class FleetError(HarnessError):
    """The fleet could not be planned or synthesised."""


class Subtask(BaseModel):
    """One independent piece of the broad goal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    goal: str = Field(min_length=1)


class _Plan(BaseModel):
    subtasks: list[Subtask] = Field(min_length=1)


@dataclass(frozen=True)
class SubtaskOutcome:
    """A subtask, how its loop ended, and whether the evaluation gate kept it."""

    subtask: Subtask
    result: RunResult | None
    error: str | None
    kept: bool
    artifacts: str = ""
    """The content of the files the subtask produced (bounded), for the synthesis."""


@dataclass(frozen=True)
class FleetResult:
    goal: str
    outcomes: tuple[SubtaskOutcome, ...]
    synthesis: str | None
    usage: Usage = field(default_factory=Usage)
    synthesis_checks: tuple[GateReport, ...] = ()
    """What the synthesis gates found of the synthesis (none: there were none to run)."""

    @property
    def kept(self) -> list[SubtaskOutcome]:
        return [outcome for outcome in self.outcomes if outcome.kept]

    @property
    def synthesis_passed(self) -> bool:
        return all(report.passed for report in self.synthesis_checks)


@dataclass(frozen=True)
class SubtaskRun:
    """How a subtask's loop ended, and the workspace it worked in (the driver's)."""

    result: RunResult
    workspace: Path

    @property
    def branch(self) -> str | None:
        return self.result.branch

    @property
    def run_id(self) -> str | None:
        return self.result.run_id


Evaluation = Callable[[Subtask, RunResult], bool]
Synthesiser = Callable[[str, Sequence[SubtaskOutcome]], str]
SynthesisGates = Callable[[str, Sequence[SubtaskOutcome]], Sequence[GateReport]]
"""``(synthesis, kept) -> reports``: the checks a synthesis must pass, as a round's would."""

FLEET_DEFAULTS = FleetConfig()
"""``[fleet]``'s defaults, read by :class:`Fleet`'s keywords."""


@dataclass(eq=False)  # compared and hashed by identity
class Fleet:
    """``loop_for(subtask)`` builds each subtask's :class:`OuterLoop`; :meth:`run` runs them all.

    Subtasks are given, or planned by ``planner`` (a model answering :data:`PLAN_PROMPT`). A
    result is kept when its loop passed and ``evaluate`` (if any) accepts it. ``synthesiser``
    is a model answering :data:`SYNTHESIS_PROMPT`, or a function ``(goal, kept) -> text``. The
    synthesis reads each kept subtask's artifacts: the files named in ``artifacts`` (paths in
    the subtask's workspace), by default every file its loop changed, bounded.
    ``synthesis_gates`` checks the synthesis as a round is checked; a synthesiser model whose
    synthesis fails is told why and asked once more.

    ``backend="ray"`` runs the loops as Ray tasks (``ray_address`` joins a cluster): each
    worker gets the git repository holding ``workspace`` and calls ``loop_for`` in its copy,
    the working directory the copy of this one
    (:meth:`Place.current() <harness.scale.pool.Place.current>` maps other paths); the branch,
    the run's folder and its progress file come back here.
    """

    goal: str
    loop_for: Callable[[Subtask], OuterLoop]
    _: KW_ONLY
    subtasks: Sequence[Subtask | str] | None = None
    planner: Model | None = None
    max_subtasks: int = FLEET_DEFAULTS.max_subtasks
    concurrency: int = FLEET_DEFAULTS.concurrency
    evaluate: Evaluation | None = None
    synthesiser: Model | Synthesiser | None = None
    artifacts: Sequence[str] = ()
    synthesis_gates: SynthesisGates | None = None
    backend: Backend = "local"
    ray_address: str | None = None
    workspace: str | Path = "."

    def __post_init__(self) -> None:
        if not self.goal.strip():
            raise ConfigError("goal: must not be empty")
        if (self.subtasks is None) == (self.planner is None):
            raise ConfigError("subtasks/planner: give the subtasks or a planner model, not both")
        check_field(FleetConfig, "max_subtasks", self.max_subtasks)
        check_field(FleetConfig, "concurrency", self.concurrency)
        self.backend = check_backend(self.backend)
        self.goal = self.goal.strip()
        self._subtasks = None if self.subtasks is None else _given(self.subtasks, self.max_subtasks)
        self.artifacts = tuple(self.artifacts)  # the fleet's own copy, read by every subtask
        self._usage = Usage()

    def run(self) -> FleetResult:
        """Plan, run every subtask's loop in parallel, keep what passes, synthesise."""
        subtasks = self._subtasks if self._subtasks is not None else self.plan()
        jobs = [
            Job(s.name, partial(_run_subtask, self.loop_for, s), workspace=str(self.workspace))
            for s in subtasks
        ]
        # each subtask's loop is bounded by its own caps and budget
        with closing(open_pool(self.backend, address=self.ray_address)) as pool:
            outputs = run_all(pool, jobs, at_once=self.concurrency)
        outcomes = tuple(self._judge(s, out) for s, out in zip(subtasks, outputs, strict=True))
        kept = [o for o in outcomes if o.kept]
        synthesis, checks = (
            self._synthesise(kept) if kept and self.synthesiser is not None else (None, ())
        )
        usage = sum((o.result.usage for o in outcomes if o.result), start=self._usage)
        return FleetResult(self.goal, outcomes, synthesis, usage, checks)

    def plan(self) -> list[Subtask]:
        """Ask the planner for subtasks; one repair attempt on an invalid answer."""
        assert self.planner is not None
        messages = [
            {"role": "system", "content": PLAN_PROMPT.format(max_subtasks=self.max_subtasks)},
            {"role": "user", "content": self.goal},
        ]
        problem = ""
        for _ in range(2):
            answer = self._ask(self.planner, messages, max_tokens=2_000)
            try:
                return _parse_plan(answer, self.max_subtasks)
            except ValueError as exc:
                problem = str(exc)
                repair = f"That was not valid: {problem}. Answer with the JSON object only."
                messages += [
                    {"role": "assistant", "content": answer},
                    {"role": "user", "content": repair},
                ]
        raise FleetError(f"planner: no valid plan after a repair attempt: {problem}")

    def _judge(self, subtask: Subtask, output: SubtaskRun | BaseException) -> SubtaskOutcome:
        if isinstance(output, BaseException):
            return SubtaskOutcome(subtask, None, describe(output), kept=False)
        result = output.result
        kept = result.passed and (self.evaluate is None or self.evaluate(subtask, result))
        artifacts = run_artifacts(output.workspace, result, files=self.artifacts) if kept else ""
        return SubtaskOutcome(subtask, result, None, kept, artifacts)

    def _synthesise(self, kept: Sequence[SubtaskOutcome]) -> tuple[str, tuple[GateReport, ...]]:
        """The synthesis and what its gates found; a model gets one repair attempt."""
        if not isinstance(self.synthesiser, Model):
            assert self.synthesiser is not None
            text = self.synthesiser(self.goal, kept)
            return text, self._check(text, kept)
        results = json.dumps(
            [{"subtask": o.subtask.name, "goal": o.subtask.goal,
              "result": (o.result.rounds[-1].agent_summary if o.result and o.result.rounds else ""),
              "artifacts": o.artifacts}
             for o in kept],
            indent=2,
        )  # fmt: skip
        messages = [
            {"role": "system", "content": SYNTHESIS_PROMPT},
            {"role": "user", "content": f"Goal: {self.goal}\n\nVerified results:\n{results}"},
        ]
        text = self._ask(self.synthesiser, messages)
        checks = self._check(text, kept)
        if not all(report.passed for report in checks):
            failures = "\n".join(
                f"{r.name}: {r.summary}\n{r.output_tail}".strip() for r in checks if not r.passed
            )
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": SYNTHESIS_REPAIR.format(failures=failures)},
            ]
            text = self._ask(self.synthesiser, messages)
            checks = self._check(text, kept)
        return text, checks

    def _ask(self, model: Model, messages: list[dict[str, str]], *, max_tokens: int = 4_000) -> str:
        reply = metered(model).complete(messages, max_tokens=max_tokens)
        self._usage = self._usage + reply.usage
        return reply.content or ""

    def _check(self, text: str, kept: Sequence[SubtaskOutcome]) -> tuple[GateReport, ...]:
        return tuple(self.synthesis_gates(text, kept)) if self.synthesis_gates else ()


def _run_subtask(
    loop_for: Callable[[Subtask], OuterLoop], subtask: Subtask, place: Place
) -> SubtaskRun:
    """Build and run the subtask's loop where the pool put it."""
    loop, result = run_loop(place, partial(loop_for, subtask))
    return SubtaskRun(result, place.back(loop.settings.workspace))


def _given(subtasks: Sequence[Subtask | str], max_subtasks: int) -> list[Subtask]:
    if not subtasks or len(subtasks) > max_subtasks:
        raise ConfigError(f"subtasks: give 1 to {max_subtasks} subtasks, got {len(subtasks)}")
    parsed = [s if isinstance(s, Subtask) else Subtask(name=f"task-{i + 1}", goal=s)
              for i, s in enumerate(subtasks)]  # fmt: skip
    if len({s.name for s in parsed}) != len(parsed):
        raise ConfigError("subtasks: names must be unique")
    return parsed


def _parse_plan(text: str, max_subtasks: int) -> list[Subtask]:
    try:
        plan = _Plan.model_validate(find_json(text))
    except ValidationError as exc:
        raise ValueError(
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        ) from exc
    if len(plan.subtasks) > max_subtasks:
        raise ValueError(f"{len(plan.subtasks)} subtasks; at most {max_subtasks} are allowed")
    if len({s.name for s in plan.subtasks}) != len(plan.subtasks):
        raise ValueError("subtask names must be unique")
    return plan.subtasks
