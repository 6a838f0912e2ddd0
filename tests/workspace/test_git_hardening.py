"""The harness's own git calls never run a program the repository's config names."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from harness.workspace.git_cmd import git, status
from harness.workspace.git_hardening import RACY_NS
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

    (repo / "a.txt").write_text("three\n")  # a round's tree, staged in an index of its own
    index = {"GIT_INDEX_FILE": str(tmp_path / "round-index")}
    git(repo, "read-tree", "HEAD", env=index)
    git(repo, "add", "-A", env=index)
    tree = git(repo, "write-tree", env=index).strip()  # the index just written: racily clean

    ran = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran-"))
    assert ran == []
    assert git(repo, "show", f"{tree}:a.txt") == "three\n"
    assert "+two" in diff
    assert git(repo, "show", "HEAD:a.txt") == "two\n"  # the commit itself went through


def evil_filter(marker: Path) -> str:
    """Config text defining a clean filter that leaves ``marker`` behind if it ever runs."""
    return f'[filter "evil"]\n\tclean = "touch {marker}; cat"\n'


def counting_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH and on git's exec path (where git finds the helpers it starts
    itself: a commit's housekeeping, say) that logs its arguments, one line a process, then runs
    git."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git-calls.log"
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GIT_EXEC_PATH", str(shim))
    return log


def listings(log: Path) -> int:
    return sum(
        " config --null --show-origin --list" in line for line in log.read_text().splitlines()
    )


def settled(*files: Path) -> None:
    """Past the window in which a write leaves a file's stat data unchanged (see RACY_NS)."""
    newest = max(max(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in files)
    time.sleep(max(0.0, (newest + 2 * RACY_NS - time.time_ns()) / 1e9))


def test_the_config_is_read_once_per_repository_while_it_stays_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = counting_git(tmp_path, monkeypatch)
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    (repo / "sub").mkdir()
    settled(repo / ".git" / "config")
    log.write_text("")

    for cwd in (repo, repo / "sub", repo, repo / "sub"):
        git(cwd, "status", "--porcelain")
    assert listings(log) == 1
    assert len(log.read_text().splitlines()) == 5  # the listing and the four calls

    marker = tmp_path / "ran-clean"
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + evil_filter(marker))  # in place: same inode
    (repo / ".gitattributes").write_text("* filter=evil\n")
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "-A")
    assert listings(log) == 2
    assert not marker.exists()
    assert git(repo, "show", ":a.txt") == "two\n"


def test_a_repository_made_again_at_the_same_path_is_read_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    settled(repo / ".git" / "config")
    status(repo)
    shutil.rmtree(repo)
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    marker = tmp_path / "ran-clean"
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + evil_filter(marker))
    (repo / ".gitattributes").write_text("* filter=evil\n")

    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    assert not marker.exists()
    assert git(repo, "show", "HEAD:.gitattributes") == "* filter=evil\n"


def test_an_include_or_a_global_config_written_later_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", ".gitattributes": "* filter=evil\n"})
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + "[include]\n\tpath = not-yet.cfg\n")

    for number, where in enumerate((repo / ".git" / "not-yet.cfg", home / ".gitconfig")):
        settled(config, repo / "a.txt")
        status(repo)  # read (and kept) while the file does not exist
        marker = tmp_path / f"ran-{number}"
        where.write_text(evil_filter(marker))
        (repo / "a.txt").write_text(f"change {number}\n")
        git(repo, "add", "-A")
        assert not marker.exists(), where
        assert git(repo, "show", ":a.txt") == f"change {number}\n"
        where.unlink()


def test_an_include_named_in_a_form_not_followed_is_read_before_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = counting_git(tmp_path, monkeypatch)
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    config = repo / ".git" / "config"
    config.write_text(
        config.read_text() + "[include]\n\tpath = %(prefix)/no-such-folder/extra.cfg\n"
    )
    settled(config)
    log.write_text("")

    git(repo, "status", "--porcelain")
    git(repo, "status", "--porcelain")
    assert listings(log) == 2
