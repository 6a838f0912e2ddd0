"""What runs parked for a clone that is gone: its parked worktrees and gates' checkouts.

A repository's runs keep their worktrees in ``<its parent>/.harness-worktrees/<its name>/``;
passed runs park theirs in ``.parked/`` there and the gates' checkouts wait in ``.checkouts/``
(:mod:`harness.workspace.parked`, :mod:`harness.workspace.checkout`), for the next run in the
same clone to take. Once that clone is deleted (``<its parent>/<its name>`` holds no ``.git``)
nothing will take them: ``harness clean`` and every run starting in a sibling clone remove them.
A run's own worktree there (not parked) is left alone, and so is a checkout a live run holds.
No link is followed: a link in place of ``.harness-worktrees/<name>``, ``.parked``,
``.checkouts`` or one of their entries is neither entered nor removed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from harness.workspace.checkout import (
    CHECKOUTS,
    abandoned_checkouts,
    parked_checkouts,
    remove_unheld,
)
from harness.workspace.parked import parked_worktrees, real_folders
from harness.workspace.removal import remove_tree
from harness.workspace.workspace import WORKTREES_FOLDER, tidy_place


def orphans(parent: Path) -> list[Path]:
    """The parked worktrees and the parked or abandoned checkouts under
    ``<parent>/.harness-worktrees/`` whose clone (``<parent>/<name>``) is gone."""
    found: list[Path] = []
    for place in real_folders(parent / WORKTREES_FOLDER):
        if os.path.lexists(parent / place.name / ".git"):
            continue  # the clone is there: its own runs take (or clean) what it parked
        found += parked_worktrees(place)
        found += parked_checkouts(place / CHECKOUTS) + abandoned_checkouts(place / CHECKOUTS)
    return found


def remove_orphan(folder: Path) -> bool:
    """Remove one of :func:`orphans` (a checkout only while no run holds it), and the folders
    holding it once empty; whether it went. Raises nothing."""
    try:
        gone = remove_unheld(folder) if folder.parent.name == CHECKOUTS else remove_tree(folder)
    except OSError:
        return False
    with contextlib.suppress(OSError):
        folder.parent.rmdir()
    tidy_place(folder.parent.parent)
    return gone


def remove_orphans(parent: Path) -> list[Path]:
    """Remove every one of :func:`orphans` that can go; those removed."""
    return [folder for folder in orphans(parent) if remove_orphan(folder)]
