"""``[fleet]`` in loop.toml: ``harness run`` splits the goal, runs a loop per subtask, synthesises."""

from __future__ import annotations

import argparse
import sys

from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.models.budget import MeteredModel
from harness.outer.loop import OuterLoop
from harness.scale.evaluation import gates_on_branch
from harness.scale.fleet import Fleet, SubtaskOutcome
from harness.scale.fleet import Subtask as FleetSubtask
from harness.spec import LoopSpec
from harness.spec.build import Overrides, author_model, build_gate, named_model
from harness.spec.launch import recorded_loop
from harness.spec.sections import GateConfig
from harness.verify.gates import Gate
from harness.verify.human import HumanGate


def subtask_config(config: LoopSpec, subtask: FleetSubtask) -> LoopSpec:
    """A subtask's loop: the file's loop with the subtask's goal, name and progress file."""
    progress = config.progress_path()
    return config.with_changes(
        name=f"{config.name}-{subtask.name}",
        goal=subtask.goal,
        progress=str(progress.with_name(f"{progress.stem}-{subtask.name}.md")),
        fleet=None,
    )


def run_fleet(args: argparse.Namespace, config: LoopSpec) -> int:
    fleet_config = config.fleet
    assert fleet_config is not None
    overrides = Overrides(args.model, args.critic_model, args.max_iterations, args.restart)
    redactor = config.redactor()

    def loop_for(subtask: FleetSubtask) -> OuterLoop:
        return recorded_loop(
            subtask_config(config, subtask), overrides=overrides, start_servers=False
        )

    helper = MeteredModel(  # planner and synthesiser: sent nothing the run's redactor knows
        named_model(fleet_config.model, config)
        if fleet_config.model
        else author_model(config, overrides),
        redact=redactor.redact_text,
    )
    workspace = config.root / config.workspace
    evaluate = (
        gates_on_branch([_evaluate_gate(g, config) for g in fleet_config.evaluate], workspace)
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
        print(redactor.redact_text(_describe(outcome)), file=sys.stderr)
    if result.synthesis is not None:
        progress = config.progress_path()
        path = atomic_write_text(
            progress.with_name(f"{progress.stem}.synthesis.md"),
            redactor.redact_text(result.synthesis),
        )
        print(f"synthesis ({len(result.kept)} kept subtask(s)): {path}", file=sys.stderr)
        print(redactor.redact_text(result.synthesis))
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


def _evaluate_gate(gate_config: GateConfig, config: LoopSpec) -> Gate:
    gate = build_gate(gate_config, config.root)
    if isinstance(gate, HumanGate):
        raise ConfigError("fleet.evaluate: a human gate cannot evaluate subtasks; use it in gates")
    return gate
