"""Memory between sessions: SKILL.md, progress.md, the run's state, locks and the Markdown
sections both files are made of."""

from harness.memory.progress import Progress
from harness.memory.skill import Skill

__all__ = ["Progress", "Skill"]
