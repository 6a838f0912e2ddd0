"""Memory between sessions: SKILL.md, progress.md, the run's state, locks and the Markdown
sections both files are made of.

The names here load on first use, so a module that needs only progress.md does not import the
SKILL.md reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {"Progress": "harness.memory.progress", "Skill": "harness.memory.skill"}

__all__ = ["Progress", "Skill"]

if TYPE_CHECKING:
    from harness.memory.progress import Progress
    from harness.memory.skill import Skill


__getattr__ = lazy_exports(__name__, _EXPORTS)
