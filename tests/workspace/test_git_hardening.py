"""The harness's own git calls never run a program the repository's config names."""

from __future__ import annotations

from pathlib import Path

from harness.workspace.git_cmd import git, status
from tests.conftest import make_repo


def plant(repo: Path, marker: Path) -> None:
    """Every way a repository's config (or a planted hook) could get git to run a program."""
    run = f"touch {marker}-"
    config = repo / ".git" / "config"
    config.write_text(
        config.read_text() + f'[core]\n\tfsmonitor = "{run}fsmonitor; false"\n\thooksPath = hooks\n'
        f'\tsshCommand = "{run}ssh"\n\tpager = "{run}pager"\n'
        f'[filter "evil"]\n\tclean = "{run}clean; cat"\n\tsmudge = "{run}smudge; cat"\n'
        f'[diff "evil"]\n\ttextconv = "{run}textconv; cat"\n'
        f'[diff]\n\texternal = "{run}external"\n'
        f'[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = "{run}gpg"\n'
    )
    for hooks in (repo / "hooks", repo / ".git" / "hooks"):
        hooks.mkdir(exist_ok=True)
        for name in ("pre-commit", "post-commit", "commit-msg", "post-checkout", "pre-auto-gc"):
            hook = hooks / name
            hook.write_text(f"#!/bin/sh\n{run}hook-{name}\n")
            hook.chmod(0o755)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")


def test_planted_programs_never_run_in_the_harness_git_calls(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    marker = tmp_path / "ran"
    plant(repo, marker)
    (repo / "a.txt").write_text("two\n")

    status(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "round 1")
    diff = git(repo, "diff", "HEAD~1", "HEAD")
    git(repo, "checkout", "-q", "-b", "other")
    git(repo, "log", "-1")

    ran = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran-"))
    assert ran == []
    assert "+two" in diff
    assert git(repo, "show", "HEAD:a.txt") == "two\n"  # the commit itself went through
