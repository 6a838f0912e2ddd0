"""What the command refuses before a run: a git repository with no commit yet under
``isolation = "auto"``, where there is no commit to branch from and working in place would leave
nothing to go back to. The rest of a run's start and end is the run's own
(:mod:`harness.outer.life_cycle`), the same for a Python caller.
"""

from __future__ import annotations

from harness.core.errors import ConfigError
from harness.spec import LoopSpec
from harness.workspace.git import unborn_top


def refuse_unborn_repository(config: LoopSpec) -> None:
    """Raise :class:`ConfigError` when ``isolation = "auto"`` would edit, in place, a git
    repository that has no commit yet (``auto`` means a worktree only once there is a commit).
    ``isolation = "none"`` says working in place is meant, and is left alone."""
    workspace = config.root / config.workspace
    if config.isolation != "auto" or not workspace.is_dir():
        return
    top = unborn_top(workspace)
    if top is not None:
        raise ConfigError(
            f"{top} is a git repository with no commits yet, so a run has no commit to branch "
            "from and would edit your files in place: make a first commit (`git add -A && git "
            'commit -m "first commit"`), or set isolation = "none" in loop.toml to work in place'
        )
