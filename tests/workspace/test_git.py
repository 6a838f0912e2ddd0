"""The git isolation layer, on real temporary repositories."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.workspace.git import GitIsolationError, Workspace, open_workspace
from harness.workspace.git_cmd import contended
from harness.workspace.round_refs import keep_round, kept_round, round_ref


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Repo Owner")
    git(path, "config", "user.email", "owner@example.com")
    git(path, "config", "commit.gpgsign", "false")
    (path / "README.md").write_text("# demo\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("def answer():\n    return 41\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def snapshot(root: Path) -> dict[str, str]:
    """HEAD, staged diff, index bytes and a hash of every file outside .git."""
    state = {
        "HEAD": git(root, "rev-parse", "HEAD"),
        "symbolic": (root / ".git" / "HEAD").read_text(),
        "cached": git(root, "diff", "--cached"),
        "index": hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest(),
    }
    for file in sorted(root.rglob("*")):
        if file.is_file() and ".git" not in file.relative_to(root).parts:
            state[str(file.relative_to(root))] = hashlib.sha256(file.read_bytes()).hexdigest()
    return state


def tree_files(root: Path) -> dict[str, str]:
    return {
        str(f.relative_to(root)): f.read_text()
        for f in sorted(root.rglob("*"))
        if f.is_file() and ".git" not in f.relative_to(root).parts
    }


def round_commits(ws: Workspace) -> list[str]:
    return git(ws.path, "rev-list", f"{ws.base_commit}..{ws.branch}").split()


def test_worktree_leaves_the_user_checkout_byte_for_byte_unchanged(repo: Path) -> None:
    (repo / "README.md").write_text("# demo, edited by the user\n")
    (repo / "notes.txt").write_text("user's own notes\n")
    (repo / "src" / "staged.py").write_text("x = 1\n")
    git(repo, "add", "src/staged.py")
    before = snapshot(repo)

    ws = open_workspace(repo, loop_name="fix bug", run_id="0123abcd-5678")
    assert ws.branch == "harness/fix-bug.0123abcd"
    assert ws.path == repo.parent / ".harness-worktrees" / "repo" / "fix-bug.0123abcd"
    assert ws.warning is not None
    assert str(repo) in ws.warning
    assert "notes.txt" in ws.warning
    assert (ws.path / "README.md").read_text() == "# demo\n"  # starts from HEAD, not the edits
    assert not (ws.path / "notes.txt").exists()
    for n in range(1, 4):
        (ws.path / f"round{n}.txt").write_text(f"round {n}\n")
        (ws.path / "README.md").write_text(f"# demo, round {n}\n")
        assert ws.commit_round(n, f"round {n}") is not None

    assert snapshot(repo) == before
    assert git(repo, "rev-parse", "main") == ws.base_commit
    assert len(round_commits(ws)) == 3


def test_one_commit_per_changed_round_with_the_harness_identity(repo: Path) -> None:
    ws = open_workspace(repo)
    assert ws.warning is None
    (ws.path / "a.txt").write_text("a\n")
    (ws.path / "debug.log").write_text("ignored\n")
    first = ws.commit_round(1, "#1 add a")
    assert ws.commit_round(2, "nothing new") is None
    (ws.path / "src" / "app.py").write_text("def answer():\n    return 42\n")
    second = ws.commit_round(3, "fix answer")

    assert round_commits(ws) == [second, first]
    assert git(ws.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>", str(first)) == (
        "harness <harness@localhost>|harness <harness@localhost>"
    )
    assert git(ws.path, "log", "-1", "--format=%s", str(first)) == "#1 add a"
    assert "Harness-Round: 3" in git(ws.path, "log", "-1", "--format=%b", str(second))
    assert git(ws.path, "show", "--name-only", "--format=", str(first)).split() == ["a.txt"]
    assert git(repo, "config", "--get", "user.name") == "Repo Owner"


def test_reset_to_moves_back_to_a_round_and_refuses_foreign_commits(repo: Path) -> None:
    ws = open_workspace(repo)
    (ws.path / "one.txt").write_text("1\n")
    first = ws.commit_round(1, "one")
    (ws.path / "two.txt").write_text("2\n")
    ws.commit_round(2, "two")
    assert first is not None
    ws.reset_to(first)
    assert (ws.path / "one.txt").exists()
    assert not (ws.path / "two.txt").exists()
    assert git(ws.path, "rev-parse", "HEAD") == first

    unrelated = git(repo, "commit-tree", "HEAD^{tree}", "-m", "history of its own")
    with pytest.raises(GitIsolationError, match="not part of run branch"):
        ws.reset_to(unrelated)
    with pytest.raises(GitIsolationError, match="is not a commit"):
        ws.reset_to("no-such-commit")


def test_diff_and_changed_files_cover_commits_edits_and_untracked_files(repo: Path) -> None:
    ws = open_workspace(repo)
    (ws.path / "src" / "app.py").write_text("def answer():\n    return 42\n")
    ws.commit_round(1, "fix")
    (ws.path / "NEW.md").write_text("brand new file\n")
    (ws.path / "README.md").unlink()
    (ws.path / "trace.log").write_text("ignored\n")

    diff = ws.diff()
    assert "+    return 42" in diff
    assert "+brand new file" in diff
    assert "deleted file mode" in diff
    assert "trace.log" not in diff
    assert sorted(ws.changed_files()) == ["NEW.md", "README.md", "src/app.py"]
    assert git(ws.path, "status", "--porcelain").count("??") == 1  # diff did not stage anything


def _traced_adds(trace: Path) -> list[str]:
    """The ``git add`` commands GIT_TRACE recorded, with their arguments."""
    lines = trace.read_text(encoding="utf-8").splitlines() if trace.exists() else []
    return [line.split("built-in: git ", 1)[1] for line in lines if "built-in: git add" in line]


def test_the_delivery_builds_one_index_for_names_diff_and_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = open_workspace(repo / "src")
    (ws.path / "app.py").write_text("def answer():\n    return 42\n")
    (ws.path / "new.py").write_text("x = 1\n")
    assert ws.root is not None
    (ws.root / "README.md").write_text("outside the workspace folder\n")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    delivery = ws.delivery(())

    (add,) = _traced_adds(trace)  # once, the whole checkout (the tree needs it; caches left out)
    assert add.startswith("add -A -- :/ ")
    assert sorted(delivery.changed) == ["app.py", "new.py"]
    assert "+    return 42" in delivery.diff
    assert "+x = 1" in delivery.diff
    assert "README" not in delivery.diff  # outside the workspace folder: not its change
    assert (sorted(ws.changed_files()), ws.diff(max_chars=10**9)) == (
        sorted(delivery.changed),
        delivery.diff,
    )
    trace.unlink()
    ws.delivery(())
    assert "rev-parse --git-path index" not in trace.read_text(encoding="utf-8")


def test_changes_in_a_folder_git_ignores_still_cover_its_tracked_files(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "build").mkdir()
    (repo / "build" / "kept.txt").write_text("old\n")
    git(repo, "add", "-A")
    git(repo, "add", "-f", "build/kept.txt")
    git(repo, "commit", "-q", "-m", "a tracked file in an ignored folder")
    ws = open_workspace(repo / "build", isolation="none")
    (ws.path / "kept.txt").write_text("new\n")
    (ws.path / "ignored.txt").write_text("not listed\n")

    delivery = ws.delivery(())
    names, diff = list(delivery.changed), delivery.diff

    assert names == ["kept.txt"]
    assert "+new" in diff


def test_diff_is_truncated_with_a_stated_marker(repo: Path) -> None:
    ws = open_workspace(repo)
    (ws.path / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    full = ws.diff(max_chars=10_000_000)
    cut = ws.diff(max_chars=1000)
    match = re.search(r"\[\.\.\. diff truncated: (\d+) of (\d+) chars shown \.\.\.\]\n$", cut)
    assert match is not None
    shown, total = int(match[1]), int(match[2])
    assert shown <= 1000
    assert total == len(full)
    assert cut[:shown] == full[:shown]
    with pytest.raises(ConfigError, match="max_chars"):
        ws.diff(max_chars=0)


def test_not_a_repository_suggests_isolation_none(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    for isolation in ("worktree", "branch"):
        with pytest.raises(GitIsolationError, match="isolation='none'") as err:
            open_workspace(folder, isolation=isolation)  # type: ignore[arg-type]
        assert str(folder) in str(err.value)


def test_repository_without_commits_asks_for_a_first_commit(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(GitIsolationError, match="make a first commit") as err:
        open_workspace(empty)
    assert str(empty) in str(err.value)


def test_invalid_arguments_are_configuration_errors(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="isolation"):
        open_workspace(repo, isolation="sandbox")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="does not exist"):
        open_workspace(tmp_path / "missing")
    with pytest.raises(ConfigError, match="loop_name"):
        open_workspace(repo, loop_name="///")
    with pytest.raises(ConfigError, match="outside the repository"):
        open_workspace(repo, worktrees_dir=repo / "wt")
    with pytest.raises(ConfigError, match="resume_branch"):
        open_workspace(repo, isolation="none", resume_branch="harness/x")


def test_detached_head_works_but_cannot_merge(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD")
    ws = open_workspace(repo)
    assert ws.base_commit == git(repo, "rev-parse", "HEAD")
    assert ws.origin is None
    (ws.path / "x.txt").write_text("x\n")
    ws.commit_round(1, "x")
    with pytest.raises(GitIsolationError, match="detached HEAD") as err:
        ws.merge_ff()
    assert str(ws.branch) in str(err.value)


def test_where_a_run_may_go_is_found_in_a_subfolder_and_refused_in_a_bare_or_empty_one(
    repo: Path, tmp_path: Path
) -> None:
    ws = open_workspace(repo / "src", isolation="auto")
    assert ws.isolation == "worktree"
    assert ws.user_root == repo.resolve()
    assert ws.origin == "refs/heads/main"
    assert ws.base_commit == git(repo, "rev-parse", "HEAD")
    assert ws.root is not None
    assert ws.path == ws.root / "src"
    git(tmp_path, "clone", "-q", "--bare", str(repo), "bare.git")
    with pytest.raises(GitIsolationError, match=r"bare\.git is a bare repository"):
        open_workspace(tmp_path / "bare.git")
    with pytest.raises(GitIsolationError, match="is a bare repository"):
        open_workspace(repo / ".git")
    (tmp_path / "empty").mkdir()
    git(tmp_path / "empty", "init", "-q")
    with pytest.raises(GitIsolationError, match="no commits yet"):
        open_workspace(tmp_path / "empty")
    assert open_workspace(tmp_path / "empty", isolation="auto").isolation == "none"
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitIsolationError, match="not inside a git repository"):
        open_workspace(tmp_path / "plain")
    plain = open_workspace(tmp_path / "plain", isolation="auto")
    assert (plain.isolation, plain.root, plain.base_commit) == ("none", None, None)


def test_explicit_run_id_clash_is_refused_and_random_ids_differ(repo: Path) -> None:
    open_workspace(repo, run_id="deadbeef")
    with pytest.raises(GitIsolationError, match="resume_branch='harness/run.deadbeef'"):
        open_workspace(repo, run_id="deadbeef")
    named = open_workspace(repo, loop_name="docs", run_id="nightly build")
    assert re.fullmatch(r"harness/docs\.[0-9a-f]{8}", str(named.branch))
    branches = {open_workspace(repo).branch for _ in range(3)}
    assert len(branches) == 3


def test_branch_mode_refuses_a_dirty_checkout(repo: Path) -> None:
    (repo / "untracked.txt").write_text("mine\n")
    before = snapshot(repo)
    with pytest.raises(GitIsolationError, match="clean checkout") as err:
        open_workspace(repo, isolation="branch")
    assert "untracked.txt" in str(err.value)
    assert str(repo) in str(err.value)
    assert snapshot(repo) == before


def test_branch_mode_works_in_the_user_checkout_and_merges(repo: Path) -> None:
    ws = open_workspace(repo, isolation="branch", run_id="00000001")
    assert ws.path == repo
    assert git(repo, "branch", "--show-current") == "harness/run.00000001"
    (repo / "feature.txt").write_text("feature\n")
    sha = ws.commit_round(1, "feature")
    ws.merge_ff()
    assert git(repo, "rev-parse", "main") == sha
    ws.finish()
    assert git(repo, "branch", "--show-current") == "harness/run.00000001"


def test_branch_mode_resumes_in_the_user_checkout(repo: Path) -> None:
    ws = open_workspace(repo, isolation="branch", loop_name="fix", run_id="0000000b")
    (repo / "a.txt").write_text("a\n")
    sha = ws.commit_round(1, "a")

    same = open_workspace(repo, isolation="branch", resume_branch=str(ws.branch))
    git(repo, "checkout", "-q", "main")
    (repo / "mine.txt").write_text("the user's\n")
    with pytest.raises(GitIsolationError, match="uncommitted changes") as dirty:
        open_workspace(repo, isolation="branch", resume_branch=str(ws.branch))
    (repo / "mine.txt").unlink()
    back = open_workspace(repo, isolation="branch", resume_branch=str(ws.branch))

    assert same == ws
    assert "mine.txt" in str(dirty.value)
    assert back == ws
    assert git(repo, "branch", "--show-current") == "harness/fix.0000000b"
    assert git(repo, "rev-parse", "HEAD") == sha
    assert back.changed_files() == ["a.txt"]
    back.merge_ff()
    assert git(repo, "rev-parse", "main") == sha


def test_merge_ff_fast_forwards_the_user_branch_and_checkout(repo: Path) -> None:
    ws = open_workspace(repo)
    (ws.path / "src" / "app.py").write_text("def answer():\n    return 42\n")
    sha = ws.commit_round(1, "fix")
    ws.merge_ff()
    assert git(repo, "rev-parse", "HEAD") == sha
    assert "return 42" in (repo / "src" / "app.py").read_text()
    assert git(repo, "status", "--porcelain") == ""
    ws.merge_ff()  # already there: nothing to do


def test_merge_ff_refuses_a_diverged_branch_and_a_dirty_checkout(repo: Path) -> None:
    ws = open_workspace(repo)
    (ws.path / "a.txt").write_text("a\n")
    ws.commit_round(1, "a")

    (repo / "README.md").write_text("# demo, uncommitted\n")
    before = snapshot(repo)
    with pytest.raises(GitIsolationError, match="uncommitted changes") as err:
        ws.merge_ff()
    assert str(repo) in str(err.value)
    assert snapshot(repo) == before

    git(repo, "commit", "-q", "-am", "user commits meanwhile")
    with pytest.raises(GitIsolationError, match="moved on"):
        ws.merge_ff()
    assert not (repo / "a.txt").exists()


def test_merge_ff_moves_a_branch_that_is_not_checked_out(repo: Path) -> None:
    ws = open_workspace(repo)
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (ws.path / "a.txt").write_text("a\n")
    sha = ws.commit_round(1, "a")
    ws.merge_ff()
    assert git(repo, "rev-parse", "main") == sha
    assert git(repo, "branch", "--show-current") == "elsewhere"


def test_finish_removes_the_worktree_and_keeps_the_branch(repo: Path) -> None:
    ws = open_workspace(repo)
    (ws.path / "a.txt").write_text("a\n")
    sha = ws.commit_round(1, "a")
    (ws.path / "leftover.txt").write_text("not committed\n")
    ws.finish()
    assert not ws.path.exists()
    assert not (repo.parent / ".harness-worktrees").exists()
    assert git(repo, "rev-parse", str(ws.branch)) == sha
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    ws.finish()  # a second call is harmless

    chosen = repo.parent / "my-worktrees"
    elsewhere = open_workspace(repo, worktrees_dir=chosen)
    assert elsewhere.path.parent == chosen
    elsewhere.finish()
    assert chosen.is_dir()
    assert not elsewhere.path.exists()


def test_resume_reuses_the_branch_and_recreates_a_pruned_worktree(repo: Path) -> None:
    ws = open_workspace(repo, loop_name="fix", run_id="feedf00d")
    (ws.path / "a.txt").write_text("a\n")
    ws.commit_round(1, "a")
    (ws.path / "wip.txt").write_text("wip\n")

    again = open_workspace(repo, resume_branch="harness/fix.feedf00d")
    assert again.path == ws.path
    assert (again.path / "wip.txt").exists()

    ws.finish()
    git(repo, "commit", "-q", "--allow-empty", "-m", "user moves on")
    resumed = open_workspace(repo, resume_branch="harness/fix.feedf00d")
    assert resumed.path == ws.path
    assert resumed.base_commit == ws.base_commit
    assert resumed.origin == "refs/heads/main"
    assert (resumed.path / "a.txt").read_text() == "a\n"
    assert resumed.changed_files() == ["a.txt"]

    shutil.rmtree(resumed.path)  # deleted by hand, never pruned
    third = open_workspace(repo, resume_branch="harness/fix.feedf00d")
    assert (third.path / "a.txt").exists()


def test_resume_errors_name_the_branch(repo: Path) -> None:
    with pytest.raises(GitIsolationError, match="no longer exists") as err:
        open_workspace(repo, resume_branch="harness/gone-12345678")
    assert str(repo) in str(err.value)
    git(repo, "branch", "topic")
    with pytest.raises(GitIsolationError, match="harnessBase"):
        open_workspace(repo, resume_branch="topic")


def test_subfolder_maps_into_the_worktree(repo: Path) -> None:
    ws = open_workspace(repo / "src")
    assert ws.root is not None
    assert ws.path == ws.root / "src"
    assert (ws.path / "app.py").exists()


def test_isolation_none_works_in_place(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = open_workspace(plain, isolation="none")
    (plain / "a.txt").write_text("a\n")
    assert outside.commit_round(1, "a") is None
    assert outside.diff() == ""
    assert outside.changed_files() == []

    head = git(repo, "rev-parse", "HEAD")
    index_before = (repo / ".git" / "index").read_bytes()
    inside = open_workspace(repo, isolation="none")
    assert inside.path == repo
    assert inside.branch is None
    (repo / "new.txt").write_text("new\n")
    assert inside.commit_round(1, "new") is None
    assert "+new" in inside.diff()
    assert inside.changed_files() == ["new.txt"]
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / ".git" / "index").read_bytes() == index_before
    with pytest.raises(GitIsolationError, match="isolation='none'"):
        inside.reset_to(head)


def test_finish_names_a_worktree_git_will_not_remove(repo: Path) -> None:
    ws = open_workspace(repo, loop_name="locked")
    git(repo, "worktree", "lock", "--reason", "in use", str(ws.path))

    with pytest.raises(GitIsolationError, match="could not remove the worktree") as err:
        ws.finish()

    assert str(ws.path) in str(err.value)
    assert f"branch {ws.branch} keeps every committed round" in str(err.value)
    assert ws.path.exists()


@pytest.mark.parametrize(
    "stderr",
    [
        "fatal: Invalid path '/tmp/r/repo/.git/worktrees/fleet-1a2b3c4d': No such file or directory",
        "fatal: Unable to create '/tmp/r/repo/.git/index.lock': File exists.",
        "error: could not lock config file .git/config: File exists",
    ],
)
def test_another_git_process_in_the_way_is_retried(stderr: str) -> None:
    assert contended(stderr)


def test_a_real_failure_is_not_retried() -> None:
    assert not contended("fatal: Invalid path '/tmp/r/repo/src': No such file or directory")
    assert not contended("fatal: not a git repository (or any of the parent directories): .git")


def test_eight_parallel_workspaces_do_not_clobber_each_other(repo: Path) -> None:
    before = snapshot(repo)

    def one_run(n: int) -> tuple[Workspace, str | None]:
        ws = open_workspace(repo, loop_name="fleet")
        (ws.path / f"item{n}.txt").write_text(f"item {n}\n")
        return ws, ws.commit_round(1, f"item {n}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one_run, range(8)))

    assert len({ws.branch for ws, _ in results}) == 8
    assert len({ws.path for ws, _ in results}) == 8
    for n, (ws, sha) in enumerate(results):
        assert sha is not None
        assert git(repo, "show", "--name-only", "--format=", sha).split() == [f"item{n}.txt"]
        assert ws.changed_files() == [f"item{n}.txt"]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda result: result[0].finish(), results))
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert snapshot(repo) == before


def test_a_run_starting_while_another_tidies_up_keeps_its_folder(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finishing run removes the worktrees folder when it looks empty. A run starting alongside
    must already hold its place in it when git checks out, or git fails half-way."""
    import harness.workspace.git as git_module

    real_git = git_module.git
    tidied: list[bool] = []

    def tidy_first(cwd: Path, *args: str, **kwargs: object) -> str:
        if args[:2] == ("worktree", "add"):
            leaf = Path(args[-2])
            try:  # exactly what a finishing run does with the shared folders
                leaf.parent.rmdir()
                leaf.parent.parent.rmdir()
                tidied.append(True)
            except OSError:
                tidied.append(False)
        return real_git(cwd, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(git_module, "git", tidy_first)
    ws = open_workspace(repo, loop_name="late")
    assert tidied == [False]
    assert (ws.path / "README.md").is_file()
    ws.finish()
    assert not (repo.parent / ".harness-worktrees").exists()


def test_same_size_edit_right_after_checkout_shows_in_the_diff(repo: Path) -> None:
    # Same size, same second as the checkout: only git's racy-clean check can see the change,
    # and that check needs the index file's own mtime.
    ws = open_workspace(repo)
    target = ws.path / "src" / "app.py"
    stat = target.stat()
    target.write_text("def answer():\n    return 42\n")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    time.sleep(1.1)  # a copy of the index made now would look newer than the edit
    assert "+    return 42" in ws.diff()
    assert ws.changed_files() == ["src/app.py"]


def test_a_workspace_inside_the_repository_sees_only_its_own_files(repo: Path) -> None:
    ws = open_workspace(repo / "src")
    (ws.path / "app.py").write_text("def answer():\n    return 42\n")
    (ws.path.parent / "README.md").write_text("# changed outside the workspace\n")
    assert ws.changed_files() == ["app.py"]
    diff = ws.diff()
    assert "a/app.py" in diff
    assert "README" not in diff


def test_stale_locks_of_a_killed_run_are_cleared_on_resume(repo: Path) -> None:
    ws = open_workspace(repo, loop_name="job")
    assert ws.branch is not None
    (ws.path / "new.txt").write_text("x\n")
    private = Path(git(ws.path, "rev-parse", "--absolute-git-dir"))
    (private / "index.lock").write_text("")  # as a SIGKILL inside `git add` leaves it
    kept = repo / ".git" / round_ref(ws.branch, 1)  # ... and inside keeping a round
    kept.parent.mkdir(parents=True)
    kept.with_name("1.lock").write_text("")
    other = repo / ".git" / round_ref("harness/other-run", 1)  # not this run's: left alone
    other.parent.mkdir(parents=True)
    other.with_name("1.lock").write_text("")
    resumed = open_workspace(repo, resume_branch=ws.branch)
    assert sorted(resumed.clear_stale_locks()) == ["1.lock", "index.lock"]
    commit = resumed.commit_round(1, "round 1")
    assert commit is not None
    keep_round(resumed.path, ws.branch, 1, commit)
    assert kept_round(repo, ws.branch, 1) == commit
    assert not (repo / ".git" / "index.lock").exists()  # the user's own index is never touched
    assert other.with_name("1.lock").exists()


def test_no_run_branch_name_reads_as_a_secret(tmp_path: Path) -> None:
    """progress.md is saved redacted; a branch name taken for a token there could not be
    resumed (``harness/task-2-3f9c1e2a-7b8d9e0f`` was, at 4.0 bits a character)."""
    from harness.core.redact import Redactor
    from harness.workspace.git import BRANCH_PREFIX, PART, ref_stem

    redactor = Redactor()
    assert (
        redactor.redact_text("harness/task-2-3f9c1e2a-7b8d9e0f")
        != "harness/task-2-3f9c1e2a-7b8d9e0f"
    )
    names = ["task-2", "fix-api", "loop", "nightly-dependency-upgrades"]
    keys = [tmp_path / f"progress/{n}.md" for n in range(40)]
    branches = [
        f"{BRANCH_PREFIX}{ref_stem(name, key)}{PART}{index:08x}"
        for name in names for index, key in enumerate(keys)
    ]  # fmt: skip
    assert len(set(branches)) == len(names) * len(keys)
    assert [b for b in branches if redactor.redact_text(b) != b] == []


@pytest.mark.parametrize("isolation", ["worktree", "branch"])
def test_a_run_can_start_from_a_commit_other_than_head(repo: Path, isolation: str) -> None:
    git(repo, "switch", "-q", "-c", "feature/pushed")
    (repo / "src" / "app.py").write_text("def answer():\n    return 42\n")
    git(repo, "commit", "-qam", "pushed work")
    pushed = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "main")
    main = git(repo, "rev-parse", "HEAD")

    ws = open_workspace(repo, isolation=isolation, loop_name="l", start="feature/pushed")  # type: ignore[arg-type]
    assert ws.base_commit == pushed
    assert git(ws.path, "rev-parse", "HEAD") == pushed
    assert "return 42" in (ws.path / "src" / "app.py").read_text()
    assert ws.origin is None  # it started from no branch of the user's: nothing to merge into
    assert git(repo, "rev-parse", "main") == main
    with pytest.raises(GitIsolationError, match="the run's start 'no-such-ref' is no commit"):
        open_workspace(repo, isolation=isolation, loop_name="l", start="no-such-ref")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="start needs isolation='worktree' or 'branch'"):
        open_workspace(repo, isolation="none", start=pushed)
