"""What keeps an external agent's git to reading: no remote, no commit of its own.

The harness commits each round on the run's branch; an agent's own commit, checkout or push
would move the branch under it or send the work away. These settings and checks are given to
every :class:`~harness.runners.base.ExternalRunner` session.
"""

from __future__ import annotations

from pathlib import Path

from harness.workspace.git_cmd import git, run_git

GIT_OFF = {
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "protocol.allow",
    "GIT_CONFIG_VALUE_0": "never",  # no fetch or push to any remote
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": "{home}/.harness-git-hooks",
}
"""Git settings the agent's commands get: no remote is reached, and a commit is refused by its
hooks (the harness commits the round; under bwrap the worktree's ``.git`` is read-only too)."""
REFUSING_HOOK = "#!/bin/sh\necho 'the harness commits the round; do not commit' >&2\nexit 1\n"


def git_folders(workspace: Path) -> list[Path]:
    """The git folders of ``workspace``'s checkout that lie outside it: a worktree's ``.git`` is
    a file naming a folder of the main repository's ``.git``, which the sandbox hides, so git
    fails inside it unless these are shown (read-only: nothing can be committed)."""
    args = ("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    found = run_git(workspace, args, None)
    if found.returncode != 0:
        return []
    folders = {Path(line) for line in found.stdout.splitlines() if line}
    return sorted(path for path in folders if not path.is_relative_to(workspace))


def head_of(workspace: Path) -> tuple[str, str] | None:
    """The branch (its ref, or ``HEAD`` when detached) and commit checked out in ``workspace``;
    None outside a repository."""
    inside = run_git(workspace, ("rev-parse", "--is-inside-work-tree"), None)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    ref = run_git(workspace, ("symbolic-ref", "-q", "HEAD"), None).stdout.strip() or "HEAD"
    return ref, git(workspace, "rev-parse", "HEAD").strip()


def keep_head(workspace: Path, head: tuple[str, str] | None) -> None:
    """Undo whatever the agent committed or checked out (its commits' changes stay in the
    worktree and the index): the harness commits the round, on the run's branch. Git's own
    settings in the sandbox refuse a commit, and bwrap's read-only ``.git`` too; this holds
    where neither did (backend none, an agent bypassing its hooks)."""
    now = head_of(workspace)
    if head is None or now == head:
        return
    ref, commit = head
    if ref != "HEAD" and now is not None and now[0] != ref:
        git(workspace, "symbolic-ref", "HEAD", ref)
    git(workspace, "reset", "--soft", commit)
