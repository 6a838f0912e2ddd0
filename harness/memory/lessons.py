"""What a loop's earlier runs learned, carried into a run that starts the loop again after it
finished: progress.md's ``Earlier runs`` section.

The section is kept as it is (the harness does not interpret it), so the agent reads it in every
round's task, and the next run that carries lessons keeps it below its own: the third run still
holds what the first one learned, until :data:`LESSON_CHARS` cuts the oldest lines.
"""

from __future__ import annotations

from itertools import accumulate

from harness.memory.progress import Progress
from harness.memory.text_fields import Section

HEADING = "Earlier runs"
LESSON_CHARS = 8_000
"""The most of the section a run carries; the oldest lines are left out first."""


def earlier_runs(earlier: Progress) -> Section:
    """The section a new run starts with: what ``earlier`` says of its run (how it ended, each
    round's outcome and summary, its notes), newest first, above what it carried itself."""
    lines = [f"- {earlier.status} after round {earlier.iteration}: {earlier.goal}"]
    for attempt in earlier.attempts:
        line = f"  - round {attempt.round}: {attempt.outcome}"
        summary = " ".join(attempt.summary.split())
        lines.append(f"{line}: {summary}" if summary else line)
    if notes := " ".join(earlier.notes.split()):
        lines.append(f"  - notes: {notes}")
    lines += [body for s in earlier.extra if s.heading == HEADING for body in s.body.splitlines()]
    sizes = accumulate(len(line) + 1 for line in lines)
    kept = [line for line, size in zip(lines, sizes, strict=True) if size <= LESSON_CHARS]
    return Section(heading=HEADING, body="\n".join(kept))
