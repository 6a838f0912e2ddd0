"""No debris: what runs that passed, failed, were cancelled or killed leave, and ``harness clean``."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.memory.lock import LoopLock
from harness.memory.progress import Progress
from harness.memory.run_state import RunState
from harness.workspace.git import open_workspace
from tests.cli.test_cli import harness
from tests.conftest import git, make_repo

pytestmark = pytest.mark.usefixtures("own_tmpdir")  # `harness clean` sweeps it

LOOP = """\
name = "tidy"
goal = "write done.txt"
model = "scripted:{script}"
isolation = "worktree"
progress = ".harness/progress/tidy.md"
[critic]
enabled = false
[[gates]]
type = "command"
name = "done"
cmd = "test -s done.txt"
"""
PASSES = [{"name": "write_file", "arguments": {"path": "done.txt", "content": "yes"}}, "done"]
SLOW = [{"name": "run_shell", "arguments": {"command": "touch started && sleep 30"}}]
ERRS = [{"name": "write_file", "arguments": {"path": "half.txt", "content": "half"}}]
"""Some work, then an error (the script ends): a run that did nothing leaves no branch at all."""


KEPT_PASSED = (
    "tidy: kept {branch}: it holds a passed round that no branch of yours holds "
    "(merge it, or `harness clean --branch {branch}`)"
)


def current_branch(repo: Path) -> str:
    """The run branch the loop's progress file names."""
    branch = RunState.read(Progress.load(repo / ".harness/progress/tidy.md")).branch
    assert branch is not None
    return branch


def project(tmp_path: Path) -> Path:
    repo = make_repo(
        tmp_path / "repo", {"README.md": "mine\n", ".gitignore": ".harness/\n", "loop.toml": ""}
    )
    for name, script in {"passes": PASSES, "errs": ERRS, "slow": SLOW}.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(script))
    (repo / "loop.toml").write_text(LOOP.format(script=tmp_path / "passes.json"))
    git(repo, "commit", "-qam", "loop")
    git(repo, "branch", "harness/tidy-notmine1")  # the user's own, named like a run
    git(repo, "branch", "harness/tidy-0badc0de")  # likewise, without the run's config key
    return repo


def run_branches(repo: Path) -> set[str]:
    refs = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/harness/")
    return set(refs.split()) - {"harness/tidy-notmine1", "harness/tidy-0badc0de"}


def runs_only(stdout: str) -> list[str]:
    """The lines about the loops' runs, without those about folders parked for the next run."""
    return [line for line in stdout.splitlines() if ": removed parked " not in line]


def worktrees(repo: Path) -> list[Path]:
    listing = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [Path(line.split(" ", 1)[1]) for line in listing if line.startswith("worktree ")]


def _hear_ctrl_c() -> None:
    """In the child: take SIGINT as a terminal would deliver it, even when this test runs in a
    background job (which starts with SIGINT ignored, and Python keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cancelled_run(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A run stopped with Ctrl-C (SIGINT) while its agent runs a long command."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "run", "--restart", "--quiet",
         "--model", f"scripted:{tmp_path / 'slow.json'}"],
        cwd=repo,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_hear_ctrl_c,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(repo.parent.glob(".harness-worktrees/repo/*/started")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def killed_during_start_up(repo: Path) -> None:
    """A process killed (SIGKILL) right after start-up made its branch and worktree, before
    progress.md named them: what ``open_workspace`` leaves when the kill lands there."""
    code = (
        "import os, signal, sys\n"
        "from harness.workspace.git import open_workspace\n"
        "progress = os.path.join(sys.argv[1], '.harness/progress/tidy.md')\n"
        "open_workspace(sys.argv[1], isolation='worktree', loop_name='tidy', loop_key=progress)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_clean_leaves_only_the_resumable_run_after_passed_error_cancelled_and_killed_runs(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path)
    assert harness("run", "--quiet", cwd=repo).returncode == 0  # PASSED
    passed = current_branch(repo)
    errs = f"scripted:{tmp_path / 'errs.json'}"
    error = harness("run", "--restart", "--model", errs, cwd=repo)  # ERROR
    assert error.returncode == 1, error.stderr
    assert "`harness run` resumes it, `harness clean` removes it" in error.stdout
    assert "note: the earlier run's branch harness/tidy." in error.stderr  # the passed run's
    assert harness("run", "--restart", "--quiet", "--model", errs, cwd=repo).returncode == 1
    killed_during_start_up(repo)
    cancelled = cancelled_run(repo, tmp_path)  # CANCELLED: the current, resumable run
    assert cancelled.returncode == 3, cancelled.stderr
    assert cancelled.stdout.startswith("CANCELLED:")
    resumable = RunState.read(Progress.load(repo / ".harness/progress/tidy.md")).branch
    assert resumable is not None
    before = run_branches(repo)
    assert len(before) == 5  # passed, 2 errors, killed, cancelled: all still there
    assert len(worktrees(repo)) == 5  # the checkout, 2 errors, killed, cancelled

    dry = harness("clean", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would remove branch") == 3
    assert run_branches(repo) == before

    result = harness("clean", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert f"tidy: kept {resumable}: resumable by `harness run`" in result.stdout
    assert KEPT_PASSED.format(branch=passed) in result.stdout  # set aside, but it passed
    assert result.stdout.count("removed branch") == 3
    assert f"removed branch {passed}" not in result.stdout
    assert result.stdout.count("removed worktree") == 3
    assert run_branches(repo) == {resumable, passed}
    assert [p.name for p in worktrees(repo)] == ["repo", resumable.removeprefix("harness/")]
    # The user's own branches and checkout are untouched.
    refs = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    assert {"main", "harness/tidy-notmine1", "harness/tidy-0badc0de"} <= set(refs)
    assert git(repo, "status", "--porcelain") == ""
    # The resumable run resumes.
    resumed = harness("run", "--quiet", "--model", f"scripted:{tmp_path / 'passes.json'}", cwd=repo)
    assert resumed.returncode == 0, resumed.stderr
    [parked] = list((repo.parent / ".harness-worktrees/repo/.parked").iterdir())
    [checkout] = list((repo.parent / ".harness-worktrees/repo/.checkouts").iterdir())
    final = harness("clean", cwd=repo)
    assert sorted(final.stdout.splitlines()) == sorted([
        f"tidy: kept {resumable}: it holds the passed work (merge it, or `git branch -D {resumable}`)",
        KEPT_PASSED.format(branch=passed),
        f"tidy: removed parked worktree {parked}",
        f"tidy: removed parked checkout {checkout}",
    ])  # fmt: skip
    assert not (repo.parent / ".harness-worktrees").exists()
    assert [p.name for p in worktrees(repo)] == ["repo"]


def test_a_passed_run_set_aside_goes_only_when_named(tmp_path: Path) -> None:
    repo = project(tmp_path)
    assert harness("run", "--quiet", cwd=repo).returncode == 0
    passed = current_branch(repo)
    errs = f"scripted:{tmp_path / 'errs.json'}"
    assert harness("run", "--restart", "--quiet", "--model", errs, cwd=repo).returncode == 1
    errored = current_branch(repo)

    plain = harness("clean", cwd=repo)

    assert sorted(runs_only(plain.stdout)) == sorted([
        KEPT_PASSED.format(branch=passed), f"tidy: kept {errored}: resumable by `harness run`",
    ])  # fmt: skip
    assert run_branches(repo) == {passed, errored}
    named = harness("clean", "--branch", passed, "--branch", "harness/tidy-00000000", cwd=repo)

    assert named.returncode == 0, named.stderr
    assert named.stdout.splitlines() == [
        f"tidy: removed branch {passed}",
        "harness/tidy-00000000: not a run branch of the loops under .; nothing done",
    ]
    assert run_branches(repo) == {errored}  # only the branch named was cleaned


def test_a_merged_pass_goes_and_include_passed_takes_the_unmerged_one(tmp_path: Path) -> None:
    repo = project(tmp_path)
    assert harness("run", "--quiet", cwd=repo).returncode == 0
    merged = current_branch(repo)
    # Another fix: the same one made in the same second would be the very commit now merged.
    other = tmp_path / "passes-otherwise.json"
    write = {"name": "write_file", "arguments": {"path": "done.txt", "content": "yes, again"}}
    other.write_text(json.dumps([write, "done"]))
    again = harness("run", "--restart", "--quiet", "--model", f"scripted:{other}", cwd=repo)
    assert again.returncode == 0
    unmerged = current_branch(repo)
    errs = f"scripted:{tmp_path / 'errs.json'}"
    assert harness("run", "--restart", "--quiet", "--model", errs, cwd=repo).returncode == 1
    git(repo, "merge", "--quiet", "--ff-only", merged)

    first = harness("clean", cwd=repo)

    assert f"tidy: removed branch {merged}" in first.stdout
    assert KEPT_PASSED.format(branch=unmerged) in first.stdout
    assert unmerged in run_branches(repo)
    second = harness("clean", "--include-passed", cwd=repo)
    assert f"tidy: removed branch {unmerged}" in second.stdout
    assert unmerged not in run_branches(repo)


def test_clean_leaves_a_running_loop_alone(tmp_path: Path) -> None:
    repo = project(tmp_path)
    killed_during_start_up(repo)
    before = run_branches(repo)
    with LoopLock(repo / ".harness/progress/tidy.md"):
        result = harness("clean", cwd=repo)
    assert result.returncode == 0
    assert result.stdout.startswith("tidy: running, left alone")
    assert run_branches(repo) == before
    assert harness("clean", cwd=repo).stdout.count("removed branch") == 1
    assert run_branches(repo) == set()
    assert [p.name for p in worktrees(repo)] == ["repo"]
    assert not (tmp_path / ".harness-worktrees").exists()  # the empty folders went too


def test_an_old_escalation_report_goes_once_the_loop_passes(tmp_path: Path) -> None:
    repo = project(tmp_path)
    report = repo / ".harness/progress/tidy.escalation.md"
    idle = tmp_path / "idle.json"
    idle.write_text(json.dumps(["nothing done"]))
    failed = harness("run", "--quiet", "--max-iterations", "1", "--model", f"scripted:{idle}",
                     cwd=repo)  # fmt: skip
    assert failed.returncode == 3
    assert report.is_file()
    passed = harness("run", "--quiet", "--max-iterations", "2", cwd=repo)
    assert passed.returncode == 0, passed.stderr
    assert not report.exists()


# --- two loops in one repository never share a run branch --------------------------------------

TWIN = """\
name = "{name}"
goal = "write done.txt"
model = "scripted:{script}"
isolation = "worktree"
max_iterations = 1
[critic]
enabled = false
[[gates]]
type = "command"
name = "done"
cmd = "test -s done.txt"
"""


def twins(tmp_path: Path, names: tuple[str, str]) -> tuple[Path, list[Path]]:
    """Two loops in one repository whose names make the same branch stem, each escalated."""
    (tmp_path / "errs.json").write_text(json.dumps(["done"]))
    files = {".gitignore": ".harness/\nprogress/\n"}
    for name, folder in zip(names, ("one", "two"), strict=True):
        files[f"{folder}/loop.toml"] = TWIN.format(name=name, script=tmp_path / "errs.json")
    repo = make_repo(tmp_path / "repo", files)
    loops = [repo / "one" / "loop.toml", repo / "two" / "loop.toml"]
    for loop in loops:
        result = harness("run", "--quiet", str(loop), cwd=repo)
        assert result.returncode == 3, result.stderr  # escalated: resumable
    return repo, loops


def test_loops_whose_names_make_one_stem_get_branches_of_their_own(tmp_path: Path) -> None:
    repo, loops = twins(tmp_path, ("fix.api", "fix-api"))
    branches = sorted(run_branches(repo))

    assert len(branches) == 2
    assert branches[0].rsplit(".", 1)[0] != branches[1].rsplit(".", 1)[0]  # different prefixes
    cleaned = harness("clean", "one", cwd=repo)

    assert cleaned.returncode == 0, cleaned.stderr
    assert sorted(run_branches(repo)) == branches  # each is the resumable run of its own loop
    assert not any("removed" in line for line in runs_only(cleaned.stdout))


def test_clean_of_one_unnamed_loop_leaves_another_s_resumable_run(tmp_path: Path) -> None:
    repo, loops = twins(tmp_path, ("loop", "loop"))
    before = run_branches(repo)
    held = worktrees(repo)

    cleaned = harness("clean", "one", cwd=repo)

    assert cleaned.returncode == 0, cleaned.stderr
    assert not any("removed" in line for line in runs_only(cleaned.stdout)), cleaned.stdout
    assert run_branches(repo) == before
    assert worktrees(repo) == held
    resumed = harness("run", "--quiet", "--max-iterations", "2", str(loops[1]), cwd=repo)
    assert "cannot resume" not in resumed.stderr


HOLDER = """\
import sys
from pathlib import Path
from harness.workspace.git import open_workspace
workspace = open_workspace(Path(sys.argv[1]), isolation="worktree", loop_name="held", run_id=sys.argv[2])
with workspace.clean_checkout((), at_base=True) as checkout:
    print(checkout.parent, flush=True)
    sys.stdin.read()  # holds the checkout until its input ends
workspace.finish()
"""


def holding_a_checkout(repo: Path, run_id: str) -> tuple[subprocess.Popen[str], Path]:
    """A process holding a gates' checkout in ``repo``'s pool, and the checkout's folder."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo), run_id],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_clean_removes_a_checkout_its_killed_holder_left_never_one_a_live_run_holds(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path)
    killed, abandoned = holding_a_checkout(repo, "r1")
    live, held = holding_a_checkout(repo, "r2")
    assert abandoned.name.startswith("inuse-")
    assert held.name.startswith("inuse-")
    killed.kill()  # SIGKILL: nothing of the process runs on, its checkout stays in use
    killed.wait()
    assert abandoned.is_dir()

    dry = harness("clean", "--dry-run", cwd=repo)
    assert f"tidy: would remove abandoned checkout {abandoned}" in dry.stdout.splitlines()
    assert abandoned.is_dir()
    cleaned = harness("clean", cwd=repo)

    assert cleaned.returncode == 0, cleaned.stderr
    assert f"tidy: removed abandoned checkout {abandoned}" in cleaned.stdout.splitlines()
    assert str(held) not in cleaned.stdout + dry.stdout  # a live run's: not even listed
    assert not abandoned.exists()
    assert (held / "tree" / "README.md").read_text() == "mine\n"  # untouched
    assert live.communicate("", timeout=60)[0] == ""  # it hands its checkout back, and ends
    assert live.returncode == 0
    assert not held.exists()


def test_park_false_in_loop_toml_neither_parks_nor_takes_a_parked_folder(tmp_path: Path) -> None:
    repo = project(tmp_path)
    assert harness("run", "--quiet", cwd=repo).returncode == 0  # parking on: the default
    place = repo.parent / ".harness-worktrees/repo"
    [worktree] = list((place / ".parked").iterdir())
    [checkout] = list((place / ".checkouts").iterdir())
    (repo / "loop.toml").write_text("park = false\n" + LOOP.format(script=tmp_path / "passes.json"))
    git(repo, "commit", "-qam", "no parking")

    again = harness("run", "--restart", "--quiet", cwd=repo)

    assert again.returncode == 0, again.stderr
    assert list((place / ".parked").iterdir()) == [worktree]  # not taken, none added
    assert list((place / ".checkouts").iterdir()) == [checkout]
    assert sorted(p.name for p in place.iterdir()) == [".checkouts", ".parked"]  # none kept


def test_a_named_loop_toml_that_cannot_be_read_is_bad_usage_and_a_folder_cleans_the_rest(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "a project\n"})
    good, bad = repo / "good", repo / "bad"
    for folder in (good, bad):
        folder.mkdir()
    (good / "loop.toml").write_text('name = "good"\ngoal = "g"\n')
    (bad / "loop.toml").write_text('name = "bad"\ngoal = "g"\nmax_iterations = "many"\n')
    named = harness("clean", str(bad / "loop.toml"), cwd=repo)
    assert named.returncode == 2, named.stdout + named.stderr
    assert f"{bad / 'loop.toml'}: skipped, cannot be read" in named.stdout
    assert "max_iterations" in named.stdout
    folder = harness("clean", str(repo), cwd=repo)
    assert folder.returncode == 0, folder.stdout + folder.stderr
    assert f"{bad / 'loop.toml'}: skipped, cannot be read" in folder.stdout
    assert f"{good / 'loop.toml'}: skipped" not in folder.stdout


def test_clean_removes_what_a_deleted_clone_parked_beside_the_repository(tmp_path: Path) -> None:
    repo = project(tmp_path)
    gone = make_repo(tmp_path / "gone", {"README.md": "gone\n"})
    kept = make_repo(tmp_path / "kept", {"README.md": "kept\n"})
    parked = {}
    for clone in (gone, kept):
        ws = open_workspace(clone, loop_name="one")
        with ws.clean_checkout(()):
            pass
        ws.finish(park=True)
        place = tmp_path / ".harness-worktrees" / clone.name
        parked[clone.name] = [*(place / ".parked").iterdir(), *(place / ".checkouts").iterdir()]
    shutil.rmtree(gone)
    lines = [f"tidy: {{}} {folder} (parked for {gone}, which is gone)" for folder in parked["gone"]]

    dry = harness("clean", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    assert sorted(dry.stdout.splitlines()) == sorted(x.format("would remove") for x in lines)
    assert all(folder.is_dir() for folder in parked["gone"])
    result = harness("clean", cwd=repo)

    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted(x.format("removed") for x in lines)
    assert not (tmp_path / ".harness-worktrees" / "gone").exists()
    assert all(folder.is_dir() for folder in parked["kept"])
    assert sorted((tmp_path / ".harness-worktrees").iterdir()) == [
        tmp_path / ".harness-worktrees/kept"
    ]
