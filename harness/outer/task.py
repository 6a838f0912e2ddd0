"""The task an author session receives each round: goal, skill, progress and last failures."""

from __future__ import annotations

from dataclasses import dataclass

from harness.memory.progress import Progress
from harness.memory.run_state import without_run_state
from harness.memory.skill import Skill

TASK_TEMPLATE = """\
# Goal
{goal}

After this session, objective checks{critic_clause} decide whether the round passes: claim \
no success you have not checked.{protect_clause}

{skill}# Round
This is round {round} of at most {max_iterations}. Budget left for the whole run: {budget}.

{sections}"""
"""What stays the same from round to round comes first (goal, rules, skill), what changes after
(round, budget, progress, failures): the request's prefix stays stable, so a provider's prompt
cache serves it again in every round."""


@dataclass(frozen=True)
class TaskInputs:
    goal: str
    round: int
    max_iterations: int
    budget: str
    skill: Skill | None = None
    progress: Progress | None = None
    feedback: str = ""
    critic: bool = False
    protect: tuple[str, ...] = ()
    guidance: tuple[str, ...] = ()  # notes a person queued with `harness note`
    edits: str = ""  # a person's edits since the last round, as a diff


def render_task(inputs: TaskInputs) -> str:
    """The round's task text. Every part a model reads is visible here."""
    skill = inputs.skill.render_for_agent().strip() + "\n\n" if inputs.skill is not None else ""
    sections = []
    progress = without_run_state(inputs.progress) if inputs.progress is not None else None
    # shown when progress.md holds anything beyond its header (goal, status, round)
    if progress is not None and (
        progress.resume_point
        or progress.checklist
        or progress.attempts
        or progress.notes.strip()
        or progress.extra
    ):
        sections.append("# Progress so far\n" + progress.render_for_agent())
    if inputs.guidance:
        sections.append(
            "# Guidance from a person\nA person watching this loop asks you to take this into "
            "account this round:\n" + "\n".join(f"- {note}" for note in inputs.guidance)
        )
    if inputs.edits:
        sections.append(
            "# A person's edits since the last round\nA person changed the work since the last "
            "round ended. Build on their changes and keep them: any part of them this round "
            "removes or rewrites is put back when it ends.\n" + inputs.edits
        )
    if inputs.feedback:
        sections.append("# What failed last round\n" + inputs.feedback)
    protect = ""
    if inputs.protect:
        protect = " Changing a protected file fails the round: " + ", ".join(inputs.protect) + "."
    return (
        TASK_TEMPLATE.format(
            goal=inputs.goal.strip(),
            round=inputs.round,
            max_iterations=inputs.max_iterations,
            budget=inputs.budget,
            critic_clause=" and then an independent reviewer" if inputs.critic else "",
            protect_clause=protect,
            skill=skill if skill.strip() else "",
            sections="\n\n".join(s.strip() for s in sections if s.strip()),
        ).rstrip()
        + "\n"
    )
