"""A round's change against the run's base commit, as the gates that judge it see it.

:class:`~harness.verify.gates.RoundChange` is made here, one way, for a round being verified,
for a pass read back from disk, and for attempts voting on each other's fixes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.verify.gates import RoundChange
from harness.workspace.checkout import changed_paths, clean_checkout, file_at, prefix_of


def round_change(root: Path, workspace: Path, *, base: str, changed: Sequence[str]) -> RoundChange:
    """The change of ``changed`` paths (relative to ``workspace``, a folder of the checkout
    whose top is ``root``) against ``base``."""
    prefix = prefix_of(root, workspace)
    return RoundChange(
        base=base,
        folder=prefix,
        changed=tuple(changed),
        read_base=lambda path: file_at(root, base, prefix + path),
        checkout_base=lambda: clean_checkout(root, workspace, base=base, protect=(),
                                             at_base=True),
    )  # fmt: skip


def tree_change(root: Path, workspace: Path, *, base: str, tree: str) -> RoundChange:
    """The change from ``base`` to ``tree`` (a commit or a tree object)."""
    changed = changed_paths(root, workspace, base=base, tree=tree)
    return round_change(root, workspace, base=base, changed=changed)
