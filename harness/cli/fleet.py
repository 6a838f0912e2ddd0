"""``[fleet]`` in loop.toml: ``harness run`` splits the goal, runs a loop per subtask, synthesises."""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

from harness.cli.config import GateConfig, LoopConfig
from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.cli.runner import Overrides, author_model, build_gate, build_loop, named_model
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.observe.events import EVENTS_FILE, EventLog
from harness.observe.run_summary import RUNS_DIR
from harness.outer.loop import OuterLoop
from harness.scale.evaluation import gates_on_branch
from harness.scale.fleet import Fleet, SubtaskOutcome
from harness.scale.fleet import Subtask as FleetSubtask
from harness.verify.gates import Gate
from harness.verify.human import HumanGate


def subtask_config(config: LoopConfig, root: Path, subtask: FleetSubtask) -> LoopConfig:
    """A subtask's loop: the file's loop with the subtask's goal, name and progress file."""
    progress = config.progress_path(root)
    name = f"{config.name}-{subtask.name}"
    return config.model_copy(
        update={
            "name": name,
            "goal": subtask.goal,
            "progress": str(progress.with_name(f"{progress.stem}-{subtask.name}.md")),
            "fleet": None,
        }
    )


def run_fleet(args: argparse.Namespace, config: LoopConfig, root: Path) -> int:
    fleet_config = config.fleet
    assert fleet_config is not None
    overrides = Overrides(args.model, args.critic_model, args.max_iterations, args.restart)
    redactor = config.redactor(root)

    def loop_for(subtask: FleetSubtask) -> OuterLoop:
        run_id = uuid.uuid4().hex[:8]
        events = EventLog(root / RUNS_DIR / run_id / EVENTS_FILE, run_id=run_id, redactor=redactor)
        return build_loop(
            subtask_config(config, root, subtask), root, overrides=overrides, events=events,
            run_id=run_id, redact=redactor.redact_text,
        )  # fmt: skip

    helper = (
        named_model(fleet_config.model, config, root)
        if fleet_config.model
        else author_model(config, root, overrides)
    )
    workspace = root / config.workspace
    evaluate = (
        gates_on_branch([_evaluate_gate(g, root) for g in fleet_config.evaluate], workspace)
        if fleet_config.evaluate
        else None
    )
    fleet = Fleet(
        config.goal,
        loop_for,
        subtasks=fleet_config.subtasks or None,
        planner=helper if fleet_config.plan else None,
        max_subtasks=fleet_config.max_subtasks,
        concurrency=fleet_config.concurrency,
        evaluate=evaluate,
        synthesiser=helper if fleet_config.synthesise else None,
        artifacts=fleet_config.artifacts,
    )
    result = fleet.run()
    for outcome in result.outcomes:
        print(_describe(outcome), file=sys.stderr)
    if result.synthesis is not None:
        progress = config.progress_path(root)
        path = atomic_write_text(
            progress.with_name(f"{progress.stem}.synthesis.md"),
            redactor.redact_text(result.synthesis),
        )
        print(f"synthesis ({len(result.kept)} kept subtask(s)): {path}", file=sys.stderr)
        print(result.synthesis)
    return EXIT_PASSED if len(result.kept) == len(result.outcomes) else EXIT_ESCALATED


def _describe(outcome: SubtaskOutcome) -> str:
    name = outcome.subtask.name
    if outcome.result is None:
        return f"{name}: could not run: {outcome.error}"
    state = (
        "kept"
        if outcome.kept
        else "passed, rejected by the evaluation"
        if outcome.result.passed
        else "not kept"
    )
    return (
        f"{name}: {outcome.result.stop_reason.value}, {state}, "
        f"branch {outcome.result.branch or '-'}"
    )


def _evaluate_gate(config: GateConfig, root: Path) -> Gate:
    gate = build_gate(config, root)
    if isinstance(gate, HumanGate):
        raise ConfigError("fleet.evaluate: a human gate cannot evaluate subtasks; use it in gates")
    return gate
