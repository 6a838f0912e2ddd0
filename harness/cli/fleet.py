"""``[fleet]`` in loop.toml: ``harness run`` splits the goal, runs a loop per subtask, synthesises."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.assemble.build import build_gate, research_gate, run_folder
from harness.assemble.launch import recorded_loop
from harness.assemble.named_models import Overrides, author_model, named_model
from harness.cli.exit_codes import EXIT_ESCALATED, EXIT_PASSED
from harness.core.atomic import atomic_write_text
from harness.core.errors import ConfigError
from harness.models.budget import MeteredModel
from harness.outer.loop import OuterLoop
from harness.outer.options import new_run_id
from harness.research.archive import ARCHIVE_DIR, SourceArchive
from harness.research.gate_config import CitationsGateConfig
from harness.scale.evaluation import gates_on_branch
from harness.scale.fleet import Fleet, SubtaskOutcome, SynthesisGates
from harness.scale.fleet import Subtask as FleetSubtask
from harness.scale.job import Place
from harness.spec import LoopSpec
from harness.spec.sections import GateConfig
from harness.verify.gates import Gate, GateReport, run_gates
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


def placed_config(config: LoopSpec, subtask: FleetSubtask, place: Place) -> LoopSpec:
    """The subtask's loop where ``place`` runs it: on a Ray worker, the shipped copy of the
    loop.toml (as committed) with the progress file in the folder the worker sends back."""
    if place.copy is None:
        return subtask_config(config, subtask)
    progress = subtask_config(config, subtask).progress_path()
    shipped = LoopSpec.from_toml(place.path(Path(str(config.source))))
    return subtask_config(shipped, subtask).with_changes(progress=str(place.progress(progress)))


def run_fleet(args: argparse.Namespace, config: LoopSpec) -> int:
    fleet_config = config.fleet
    assert fleet_config is not None
    overrides = Overrides.from_flags(args)
    redactor = config.redactor()

    def loop_for(subtask: FleetSubtask) -> OuterLoop:
        return recorded_loop(
            placed_config(config, subtask, Place.current()),
            overrides=overrides,
            start_servers=False,
        )

    helper = MeteredModel(  # planner and synthesiser: sent nothing the run's redactor knows
        named_model(fleet_config.model, config)
        if fleet_config.model
        else author_model(config, overrides),
        redact=redactor.redact_text,
    )
    workspace = config.root / config.workspace
    progress = config.progress_path()
    synthesis_file = progress.with_name(f"{progress.stem}.synthesis.md")
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
        synthesis_gates=_synthesis_gates(config, synthesis_file, redactor.redact_text),
        backend=fleet_config.backend,
        ray_address=fleet_config.ray_address,
        workspace=workspace,
    )
    result = fleet.run()
    for outcome in result.outcomes:
        print(redactor.redact_text(_describe(outcome)), file=sys.stderr)
    if result.synthesis is not None:
        path = atomic_write_text(synthesis_file, redactor.redact_text(result.synthesis))
        print(f"synthesis ({len(result.kept)} kept subtask(s)): {path}", file=sys.stderr)
        for report in result.synthesis_checks:
            if not report.passed:
                shown = f"{report.name}: {report.summary}\n{report.output_tail}".strip()
                print(redactor.redact_text(f"synthesis failed {shown}"), file=sys.stderr)
        print(redactor.redact_text(result.synthesis))
    every = len(result.kept) == len(result.outcomes) and result.synthesis_passed
    return EXIT_PASSED if every else EXIT_ESCALATED


def _synthesis_gates(
    config: LoopSpec, synthesis: Path, redact: Callable[[str], str]
) -> SynthesisGates | None:
    """The loop's citations gates, checking the synthesis (as written to ``synthesis``) against
    the sources its kept subtasks fetched, copied into an archive of its own; None when the loop
    has no citations gate."""
    cited = [g for g in config.gates if isinstance(g, CitationsGateConfig)]
    if not cited:
        return None
    folder = run_folder(config.root, f"{new_run_id()}-synthesis")
    archive = SourceArchive(folder / ARCHIVE_DIR)
    gates = [
        research_gate(g.model_copy(update={"file": str(synthesis)}), folder, archive) for g in cited
    ]
    copied: set[str] = set()

    def check(text: str, kept: Sequence[SubtaskOutcome]) -> list[GateReport]:
        for outcome in kept:
            run_id = outcome.result.run_id if outcome.result else ""
            if run_id and run_id not in copied:
                archive.keep_all(SourceArchive(run_folder(config.root, run_id) / ARCHIVE_DIR))
                copied.add(run_id)
        atomic_write_text(synthesis, redact(text))
        return run_gates(gates, config.root / config.workspace)

    return check


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
