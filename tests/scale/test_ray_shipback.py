"""The Ray ship-back follows no link and fetches only the run's own branch (no Ray needed: the
worker's packing and the driver's import are plain functions)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.core.nofollow import UnsafePath
from harness.scale import ray_backend
from harness.scale.batch_task import BatchTask, TaskRecord
from harness.scale.job import Job, Place
from harness.scale.ray_backend import Returned, import_returned, pack_files
from harness.scale.task_run import placed_task
from harness.workspace.git import is_run_branch
from tests.conftest import git, make_repo

RUN_ID = "3f9c1e2a-0000"
SECRET = "aws_secret_access_key = canary-7d41"


@pytest.fixture
def worker(tmp_path: Path) -> tuple[Path, Path]:
    """A worker's clone after a run whose agent planted links and odd files in what is sent."""
    secret = tmp_path / "home" / ".aws" / "credentials"  # the worker's own, hidden from the agent
    secret.parent.mkdir(parents=True)
    secret.write_text(SECRET)
    clone = tmp_path / "clone"
    run_folder = clone / "sub" / ".harness" / "runs" / RUN_ID
    run_folder.mkdir(parents=True)
    (run_folder / "events.jsonl").write_text('{"kind": "run_start"}\n')
    (run_folder / "credentials").symlink_to(secret)
    (run_folder / "aws").symlink_to(secret.parent, target_is_directory=True)
    os.mkfifo(run_folder / "pipe")
    (clone / ".harness" / "runs").mkdir(parents=True)
    (clone / ".harness" / "runs" / RUN_ID).symlink_to(secret.parent, target_is_directory=True)
    progress = tmp_path / "progress"
    progress.mkdir()
    (progress / "task.md").write_text("# Progress: task\n")
    (progress / "task.escalation.md").symlink_to(secret)
    return clone, progress


def test_the_worker_sends_regular_files_only_and_no_link_is_followed(
    worker: tuple[Path, Path],
) -> None:
    """Before: ``rglob`` and ``is_file()`` followed the links, and the worker's
    ``~/.aws/credentials`` landed in the driver's repository."""
    clone, progress = worker

    run_files, progress_files = pack_files(
        clone, clone / "sub" / ".harness" / "runs" / RUN_ID, progress
    )

    assert run_files == {f"sub/.harness/runs/{RUN_ID}/events.jsonl": b'{"kind": "run_start"}\n'}
    assert progress_files == {"task.md": b"# Progress: task\n"}
    shipped = b"".join([*run_files.values(), *progress_files.values()])
    assert SECRET.encode() not in shipped


def test_what_a_worker_sends_is_bounded(
    worker: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, progress = worker
    monkeypatch.setattr(ray_backend, "SHIP_LIMIT", 30)  # the events file (22 bytes) fits, no more

    with pytest.raises(UnsafePath, match="larger than 8 bytes"):
        pack_files(clone, clone / "sub" / ".harness" / "runs" / RUN_ID, progress)


def _record(branch: str | None) -> TaskRecord:
    return TaskRecord(name="task", status="passed", branch=branch, run_id=RUN_ID)


def _job(progress: Path | None, run_id: str | None = RUN_ID) -> Job[TaskRecord]:
    """A job whose loop ran in the shipped folder's top (no loop.toml named)."""
    return Job("task", lambda _place: _record(None), progress=progress, run_id=run_id)


@pytest.mark.parametrize(
    "branch",
    ["main", "harness/task.1a2b3c4d.00000000", "harness/other.1a2b3c4d.3f9c1e2a.x", "refs/x"],
)
def test_a_branch_not_named_as_the_runs_is_not_fetched(tmp_path: Path, branch: str) -> None:
    """Before: ``+refs/heads/<branch>:refs/heads/<branch>`` was fetched whatever the name, so a
    record naming ``main`` replaced the driver's own main."""
    repo = make_repo(tmp_path / "repo", {"README.md": "mine\n"})
    mine = git(repo, "rev-parse", "main")
    job = _job(tmp_path / "progress" / "task.md")

    with pytest.raises(ConfigError, match="nothing of it was fetched"):
        import_returned(Returned(_record(branch), b"bundle", {}, {}), repo, job, Place(repo))

    assert git(repo, "rev-parse", "main") == mine


def test_the_runs_own_branch_and_files_come_back_inside_their_folders(tmp_path: Path) -> None:
    worker_repo = make_repo(tmp_path / "worker", {"README.md": "mine\n"})
    branch = "harness/task.1a2b3c4d.3f9c1e2a"
    git(worker_repo, "checkout", "-qb", branch)
    (worker_repo / "out.txt").write_text("done\n")
    git(worker_repo, "add", "-A")
    git(worker_repo, "commit", "-qm", "round 1")
    bundle = tmp_path / "branch.bundle"
    git(worker_repo, "bundle", "create", "-q", str(bundle), f"refs/heads/{branch}")
    repo = make_repo(tmp_path / "repo", {"README.md": "mine\n"})
    job, place = _job(tmp_path / "progress" / "task.md"), Place(repo)
    files = {f".harness/runs/{RUN_ID}/events.jsonl": b"{}\n"}
    returned = Returned(_record(branch), bundle.read_bytes(), files, {"task.md": b"# P\n"})

    import_returned(returned, repo, job, place)

    assert git(repo, "show", f"{branch}:out.txt") == "done"
    assert (repo / ".harness" / "runs" / RUN_ID / "events.jsonl").read_bytes() == b"{}\n"
    assert (tmp_path / "progress" / "task.md").read_bytes() == b"# P\n"
    (repo / ".harness" / "runs" / "linked").symlink_to(tmp_path, target_is_directory=True)
    through_link = {f".harness/runs/{RUN_ID}/../linked/escaped.txt": b"x"}
    with pytest.raises(ConfigError, match="outside run 3f9c1e2a-0000's own folder"):
        import_returned(Returned(_record(None), None, through_link, {}), repo, job, place)
    (repo / ".harness" / "runs" / RUN_ID / "in").symlink_to(tmp_path, target_is_directory=True)
    inside_link = {f".harness/runs/{RUN_ID}/in/escaped.txt": b"x"}
    with pytest.raises(UnsafePath):
        import_returned(Returned(_record(None), None, inside_link, {}), repo, job, place)
    assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize(
    "relative",
    [
        "src/app.py",
        ".git/hooks/post-checkout",
        ".harness/runs/other-run/events.jsonl",
        f"sub/.harness/runs/{RUN_ID}/events.jsonl",
        f".harness/runs/{RUN_ID}/../../../escaped.txt",
        f"/{RUN_ID}/events.jsonl",
    ],
)
def test_a_returned_file_outside_the_runs_own_folder_is_refused_and_nothing_is_written(
    tmp_path: Path, relative: str
) -> None:
    """The worker's names are data: the driver finds the run's folder itself (the job's loop
    and run id) and writes nothing a returned name puts elsewhere, not even the run's own files
    sent beside it. Before: any path inside the repository was written, ``.git/hooks`` too."""
    repo = make_repo(tmp_path / "repo", {"README.md": "mine\n"})
    files = {f".harness/runs/{RUN_ID}/events.jsonl": b"{}\n", relative: b"planted\n"}
    returned = Returned(_record(None), None, files, {"task.md": b"# P\n"})

    with pytest.raises(ConfigError, match="own folder"):
        import_returned(returned, repo, _job(tmp_path / "progress" / "task.md"), Place(repo))

    assert git(repo, "status", "--porcelain", "--ignored") == ""
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "progress").exists()


def test_a_returned_run_id_that_is_not_one_name_takes_no_file(tmp_path: Path) -> None:
    """A job that named no run id takes its result's; one that is not a single name finds no
    folder of the run's, so nothing returned is written."""
    repo = make_repo(tmp_path / "repo", {"README.md": "mine\n"})
    record = TaskRecord(name="task", status="passed", run_id="..")
    files = {".harness/runs/../x.txt": b"x"}

    with pytest.raises(ConfigError, match="own folder \\(None\\)"):
        import_returned(Returned(record, None, files, {}), repo, _job(None, None), Place(repo))

    assert not (repo / ".harness").exists()


def test_a_returned_progress_folder_inside_git_or_outside_is_refused(tmp_path: Path) -> None:
    """A job that named no progress file has its folder from the worker: never in ``.git``
    (a hook written there would run here) nor outside the shipped folder."""
    repo = make_repo(tmp_path / "repo", {"README.md": "mine\n"})
    for home in (repo / ".git" / "hooks", tmp_path / "elsewhere"):
        returned = Returned(_record(None), None, {}, {"pre-commit": b"#!/bin/sh\n"}, home)
        with pytest.raises(ConfigError, match="returned progress folder"):
            import_returned(returned, repo, _job(None), Place(repo))
        assert not (home / "pre-commit").exists()
    returned = Returned(_record(None), None, {}, {"a.md": b"# P\n"}, repo / "progress")
    import_returned(returned, repo, _job(None), Place(repo))
    assert (repo / "progress" / "a.md").read_bytes() == b"# P\n"


def test_run_branch_names() -> None:
    assert is_run_branch("harness/fix-api.1a2b3c4d.3f9c1e2a", RUN_ID)
    assert is_run_branch("harness/fix-api.3f9c1e2a", RUN_ID)  # a loop made without a key
    assert not is_run_branch("harness/fix-api.1a2b3c4d.3f9c1e2b", RUN_ID)
    assert not is_run_branch("harness/fix/api.1a2b3c4d.3f9c1e2a", RUN_ID)
    assert not is_run_branch("xharness/fix.1a2b3c4d.3f9c1e2a", RUN_ID)


# --- what the driver ships: a shallow repository, the loop's folder around it ------------------


def test_a_shallow_repository_is_shipped_and_cloned_on_the_worker(tmp_path: Path) -> None:
    full = make_repo(tmp_path / "full", {"a.txt": "1\n"})
    (full / "a.txt").write_text("2\n")
    git(full, "commit", "-qam", "second")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{full}", str(shallow))
    git(shallow, "checkout", "-qb", "base")
    bundle = tmp_path / "repo.bundle"
    bundle.write_bytes(ray_backend._bundle_all(shallow))
    refused = subprocess.run(["git", "clone", "-q", str(bundle), str(tmp_path / "plain")],
                             capture_output=True, text=True)  # fmt: skip
    assert refused.returncode != 0  # what a plain clone of it does

    boundary, head = ray_backend._shallow_of(shallow)
    worker = tmp_path / "worker" / "top" / "repo"
    ray_backend._clone_bundle(bundle, worker, boundary, head)

    assert (boundary, head) == (git(full, "rev-parse", "HEAD") + "\n", "refs/heads/base")
    assert git(worker, "rev-parse", "HEAD") == git(full, "rev-parse", "HEAD")
    assert git(worker, "symbolic-ref", "HEAD") == "refs/heads/base"
    assert (worker / "a.txt").read_text() == "2\n"
    assert git(worker, "status", "--porcelain") == ""
    assert ray_backend._shallow_of(full) == ("", "")  # a full one is cloned as before


def test_the_loops_folder_around_its_repository_is_shipped_without_runs_or_links(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "instance"
    repo = make_repo(folder / "repo", {"code.py": "x = 1\n"})
    (folder / "loop.toml").write_text('goal = "g"\n')
    (folder / "held_out" / "tests").mkdir(parents=True)
    (folder / "held_out" / "tests" / "test_x.py").write_text("def test(): pass\n")
    (folder / ".harness" / "runs" / "old").mkdir(parents=True)
    (folder / ".harness" / "runs" / "old" / "events.jsonl").write_text("{}\n")
    (folder / "credentials").symlink_to(tmp_path / "elsewhere")
    task = BatchTask(name="i", loop=str(folder / "loop.toml"), workspace=str(repo),
                     model=f"scripted:{folder / 'oracle.json'}")  # fmt: skip

    assert ray_backend.shipped_top(task, repo) == folder
    assert ray_backend.folder_files(folder, repo) == {
        "held_out/tests/test_x.py": b"def test(): pass\n",
        "loop.toml": b'goal = "g"\n',
    }
    copy = tmp_path / "worker" / "top"  # where the worker lays the shipped folder
    placed = placed_task(task, Place(shipped=folder.resolve(), copy=copy, cwd=tmp_path))
    assert (placed.loop, placed.workspace, placed.model) == (
        str(copy / "loop.toml"), str(copy / "repo"), f"scripted:{copy / 'oracle.json'}"
    )  # fmt: skip
    assert placed_task(task, Place()) == task  # in place: as given
    inside = BatchTask(name="i", loop=str(repo / "loop.toml"))
    assert ray_backend.shipped_top(inside, repo) == repo
    apart = BatchTask(name="i", loop=str(tmp_path / "other" / "loop.toml"))
    with pytest.raises(ConfigError, match="must lie in the repository or hold it"):
        ray_backend.shipped_top(apart, repo)
