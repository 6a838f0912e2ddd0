"""The sandbox policy as the command lines that carry it: bubblewrap's mounts and namespaces,
and the limits shell, each exact and then run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

import harness.sandbox.bwrap
from harness.sandbox.bwrap import (
    MOUNT_POINTS_BYTES,
    RUNTIME_DIRS,
    SANDBOX_HOME,
    STATE_GLOBS,
    STATE_NAMES,
    bwrap_argv,
    bwrap_problem,
    hide,
)
from harness.sandbox.limits import MB, Cgroup, Limits, limits_prefix, nproc_prefix

ROOT = os.geteuid() == 0
HAS_BWRAP = shutil.which("bwrap") is not None


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for folder in (".git", ".harness/runs", "src"):
        (ws / folder).mkdir(parents=True)
    (ws / ".harness" / "loop.escalation.md").write_text("x")
    (ws / ".harness" / "b.lock").write_text("")
    (ws / ".harness" / "a.lock").write_text("")
    (ws / ".harness" / "notes.md").write_text("the workspace's own")
    (ws / ".harness" / "progress").symlink_to(ws / "src")  # a link is never mounted
    return ws


def test_the_bwrap_command_line_is_exactly_the_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    ws = workspace(tmp_path)
    extra_ro, extra_rw = tmp_path / "ro", tmp_path / "rw"
    extra_ro.mkdir()
    argv = bwrap_argv(
        ["pytest", "-q"], workspace=ws, cwd=ws / "src", network=False, tmp_bytes=7 * MB,
        readonly=[extra_ro, tmp_path / "missing"], writable=[extra_rw],
    )  # fmt: skip
    head = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--perms", "1777", "--size", str(7 * MB), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--size", str(7 * MB), "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]  # fmt: skip
    head += [  # the host's unix sockets out of reach
        part
        for path in RUNTIME_DIRS
        if path.is_dir() and not path.is_symlink()
        for part in ("--size", str(MOUNT_POINTS_BYTES), "--tmpfs", str(path))
    ]
    head += ["--size", str(MOUNT_POINTS_BYTES), "--tmpfs", str(home)]  # the home hidden
    assert argv[: len(head)] == head
    rest = argv[len(head) :]
    while rest[0] == "--ro-bind" and rest[1] == rest[2] and rest[1].startswith("/tmp/"):
        rest = rest[3:]  # the interpreter's folders under /tmp, mounted back read-only
    binds = [
        "--bind", str(ws), str(ws),
        "--bind", str(extra_rw), str(extra_rw),
        "--ro-bind", str(ws / ".git"), str(ws / ".git"),
        "--ro-bind", str(ws / ".harness/runs"), str(ws / ".harness/runs"),
        "--ro-bind", str(extra_ro), str(extra_ro),
        "--ro-bind", str(ws / ".harness/loop.escalation.md"), str(ws / ".harness/loop.escalation.md"),
        "--ro-bind", str(ws / ".harness/a.lock"), str(ws / ".harness/a.lock"),
        "--ro-bind", str(ws / ".harness/b.lock"), str(ws / ".harness/b.lock"),
        "--remount-ro", str(home),
        "--unshare-all", "--die-with-parent", "--new-session",
    ]  # fmt: skip
    tail = ["--cap-drop", "ALL"] if ROOT else []
    tail += ["--chdir", str(ws / "src"), "--", "pytest", "-q"]
    assert rest == binds + tail
    assert "--share-net" not in argv
    assert STATE_NAMES == (".git", ".harness/runs", ".harness/progress")
    assert STATE_GLOBS == (".harness/*.escalation.md", ".harness/*.lock")


@pytest.mark.parametrize("where", ["/", "missing", "workspace", "workspace/inner"])
def test_a_home_that_is_the_root_missing_or_in_the_workspace_is_not_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    ws = tmp_path / "workspace"
    (ws / "inner").mkdir(parents=True)
    monkeypatch.setenv("HOME", where if where == "/" else str(tmp_path / where))
    argv = bwrap_argv(["true"], workspace=ws, cwd=ws, network=True, tmp_bytes=MB)
    assert argv.count("--remount-ro") == 1  # /dev only
    assert argv.count("--tmpfs") == 2  # /dev/shm and /tmp


def test_the_home_is_found_through_its_real_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setenv("HOME", str(tmp_path / "link"))
    argv = bwrap_argv(["true"], workspace=tmp_path / "real" / "..", cwd=tmp_path, network=False,
                      tmp_bytes=MB)  # fmt: skip
    assert str(tmp_path / "real") not in argv  # the workspace holds the home, by its real path
    ws = tmp_path / "ws"
    ws.mkdir()
    hidden = bwrap_argv(["true"], workspace=ws, cwd=ws, network=False, tmp_bytes=MB)
    assert hidden[len(hidden) - hidden[::-1].index("--remount-ro")] == str(tmp_path / "real")


def test_network_is_shared_only_when_asked(tmp_path: Path) -> None:
    ws = tmp_path
    shared = bwrap_argv(["true"], workspace=ws, cwd=ws, network=True, tmp_bytes=MB)
    index = shared.index("--new-session")
    assert shared[index + 1] == "--share-net"
    assert shared.count("--share-net") == 1
    assert "/run" not in shared  # the host's resolver may need it
    closed = bwrap_argv(["true"], workspace=ws, cwd=ws, network=False, tmp_bytes=MB)
    assert "--share-net" not in closed
    if Path("/run").is_dir():
        assert closed[closed.index("/run") - 3 :][:4] == [
            "--size", str(MOUNT_POINTS_BYTES), "--tmpfs", "/run"
        ]  # fmt: skip


def test_programs_on_path_under_an_emptied_runtime_folder_are_mounted_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as NixOS's /run/current-system/sw/bin: a runtime folder emptied must not take PATH with it
    monkeypatch.setattr(harness.sandbox.bwrap, "RUNTIME_DIRS", (Path("/usr"),))
    monkeypatch.setenv("PATH", "/usr/bin")
    argv = bwrap_argv(["true"], workspace=tmp_path, cwd=tmp_path, network=False, tmp_bytes=MB)
    emptied = argv.index("/usr")
    assert argv[emptied - 3 : emptied + 1] == [
        "--size", str(MOUNT_POINTS_BYTES), "--tmpfs", "/usr"
    ]  # fmt: skip
    usr_bin = str(Path("/usr/bin").resolve())
    binds = [argv[i : i + 3] for i in range(emptied, len(argv)) if argv[i] == "--ro-bind"]
    assert ["--ro-bind", usr_bin, usr_bin] in binds


def held_out(tmp_path: Path) -> Path:
    ws = workspace(tmp_path)
    (ws / "held").mkdir()
    (ws / "held" / "test_secret.py").write_text("assert answer() == 42\n")
    (ws / "held.py").write_text("SECRET = 42\n")
    (ws / "to_folder").symlink_to(ws / "held")
    (ws / "to_file").symlink_to(ws / "held.py")
    return ws


def test_held_out_paths_are_shown_empty_after_every_bind(tmp_path: Path) -> None:
    ws = held_out(tmp_path)
    shown_empty = [
        "--size", str(MOUNT_POINTS_BYTES), "--tmpfs", str(ws / "held"),
        "--remount-ro", str(ws / "held"),
        "--ro-bind", "/dev/null", str(ws / "held.py"),
    ]  # fmt: skip
    # a missing path and links (to a folder, to a file) need no mount
    paths = [ws / "gone", ws / "to_folder", ws / "held", ws / "to_file", ws / "held.py"]
    assert hide(paths) == shown_empty
    assert hide([]) == []
    argv = bwrap_argv(["true"], workspace=ws, cwd=ws, network=True, tmp_bytes=MB,
                      unseen=[ws / "held", ws / "held.py"])  # fmt: skip
    # after the workspace's bind and its read-only parts, which would show them again
    namespaces = argv.index("--unshare-all")
    assert argv[namespaces - len(shown_empty) : namespaces] == shown_empty
    assert argv.count(str(ws / "held")) == 2
    assert max(i for i, part in enumerate(argv) if part == "--bind") < namespaces - 9


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
def test_held_out_paths_are_empty_and_read_only_inside(tmp_path: Path) -> None:
    ws = held_out(tmp_path)
    script = (
        "ls -A held; cat held.py 2>/dev/null | wc -c; "  # empty, or not readable at all
        "(echo no > held/forged) 2>/dev/null || echo folder-read-only; "
        "(echo no > held.py) 2>/dev/null || echo file-read-only; "
        "cat src/../.harness/notes.md"
    )
    argv = bwrap_argv(["/bin/sh", "-c", script], workspace=ws, cwd=ws, network=False,
                      tmp_bytes=4 * MB, unseen=[ws / "held", ws / "held.py"])  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0 and "namespace" in done.stderr:
        pytest.skip(f"bwrap cannot make namespaces here: {done.stderr.strip()}")
    assert done.stdout.split("\n") == [
        "0", "folder-read-only", "file-read-only", "the workspace's own",
    ], done.stderr  # fmt: skip
    assert (ws / "held" / "test_secret.py").read_text() == "assert answer() == 42\n"
    assert (ws / "held.py").read_text() == "SECRET = 42\n"
    assert not (ws / "held" / "forged").exists()


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
def test_the_command_line_runs_and_holds(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    script = (
        "echo ok > src/made.txt; "
        "(echo no > .git/forged) 2>/dev/null || echo git-read-only; "
        "(echo no > .harness/a.lock) 2>/dev/null || echo lock-read-only; "
        "echo mine > .harness/notes.md && echo notes-writable; "
        "(echo no > /etc/harness-test) 2>/dev/null || echo root-read-only; "
        "test -d /tmp/home && echo home"
    )
    argv = bwrap_argv(["/bin/sh", "-c", script], workspace=ws, cwd=ws, network=False,
                      tmp_bytes=4 * MB)  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0 and "namespace" in done.stderr:
        pytest.skip(f"bwrap cannot make namespaces here: {done.stderr.strip()}")
    assert done.stdout.split() == [
        "git-read-only", "lock-read-only", "notes-writable", "root-read-only", "home",
    ]  # fmt: skip
    assert (ws / "src" / "made.txt").read_text() == "ok\n"
    assert not (ws / ".git" / "forged").exists()
    assert (ws / ".harness" / "a.lock").read_text() == ""
    assert bwrap_problem() is None  # the probe agrees that bwrap works here


def test_the_limits_shell_is_exact_with_and_without_a_cgroup(tmp_path: Path) -> None:
    limits = Limits(memory_mb=300, file_size_mb=2)
    assert limits_prefix(limits, None) == [
        "/bin/sh", "-c", "ulimit -c 0; ulimit -f 4096; ulimit -v 307200; exec \"$@\"", "sh",
    ]  # fmt: skip


def test_the_limits_shell_really_lowers_the_limits_and_runs_the_command(tmp_path: Path) -> None:
    limits = Limits(memory_mb=300, file_size_mb=2)
    argv = limits_prefix(limits, None) + [
        "/bin/sh",
        "-c",
        "ulimit -c; ulimit -f; ulimit -v; echo $0",
        "named",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=True)
    assert done.stdout.split() == ["0", "4096", "307200", "named"]


def test_nproc_prefix_bounds_the_processes_with_prlimit() -> None:
    expected = ["prlimit", "--nproc=37:37", "--"] if shutil.which("prlimit") else []
    assert nproc_prefix(Limits(processes=37)) == expected


def test_limits_have_documented_defaults_floors_and_names() -> None:
    assert Limits() == Limits(memory_mb=4096, processes=512, file_size_mb=1024, tmp_mb=512,
                              output_mb=64, write_mb=4096)  # fmt: skip
    Limits(memory_mb=16, processes=4, file_size_mb=1, tmp_mb=1, output_mb=1, write_mb=1)
    for field, low in (("memory_mb", 15), ("processes", 3), ("file_size_mb", 0), ("tmp_mb", 0),
                       ("output_mb", 0), ("write_mb", 0)):  # fmt: skip
        with pytest.raises(ValidationError, match=field):
            Limits(**{field: low})
    with pytest.raises(ValidationError, match="cpu"):
        Limits(cpu=1)  # type: ignore[call-arg]
    assert Limits(memory_mb=64, processes=9, file_size_mb=3, output_mb=5).names() == {
        "memory": "memory limit (64 MB)", "processes": "process limit (9)",
        "file_size": "file size limit (3 MB)", "output": "output limit (5 MB)",
        "write": "write limit (4096 MB)",
    }  # fmt: skip


def test_a_v2_cgroup_is_given_its_bounds_and_joined_first(tmp_path: Path) -> None:
    group = tmp_path / "harness-v2"
    group.mkdir()
    cgroup = Cgroup({"pids": group, "memory": group}, Limits(processes=40, memory_mb=100))
    written = {f.name: f.read_text() for f in group.iterdir()}
    assert written == {"pids.max": "40", "memory.max": str(100 * MB), "memory.swap.max": "0"}
    assert cgroup.places() == [group]
    assert limits_prefix(Limits(file_size_mb=1), cgroup) == [
        "/bin/sh", "-c", f"echo 0 > {group}/cgroup.procs; ulimit -c 0; ulimit -f 2048; "
        'exec "$@"', "sh",
    ]  # fmt: skip


def test_a_v1_cgroup_writes_each_controller_and_joins_both(tmp_path: Path) -> None:
    pids, memory = tmp_path / "pids" / "h", tmp_path / "memory" / "h"
    pids.mkdir(parents=True)
    memory.mkdir(parents=True)
    cgroup = Cgroup({"pids": pids, "memory": memory}, Limits(processes=8, memory_mb=32))
    assert {f.name: f.read_text() for f in pids.iterdir()} == {"pids.max": "8"}
    assert {f.name: f.read_text() for f in memory.iterdir()} == {
        "memory.limit_in_bytes": str(32 * MB)
    }
    assert cgroup.places() == [memory, pids]
    script = limits_prefix(Limits(), cgroup)[2]
    assert script.startswith(f"echo 0 > {memory}/cgroup.procs; echo 0 > {pids}/cgroup.procs; ")
    assert "ulimit -v" not in script  # the cgroup bounds memory for the whole command


def test_a_v2_cgroup_without_swap_control_still_bounds_memory(tmp_path: Path) -> None:
    group = tmp_path / "g"
    group.mkdir()
    (group / "memory.swap.max").mkdir()  # cannot be written: optional
    Cgroup({"pids": group, "memory": group}, Limits())
    assert (group / "memory.max").read_text() == str(4096 * MB)
    (group / "pids.max").unlink()
    (group / "pids.max").mkdir()  # the process bound is not optional
    with pytest.raises(IsADirectoryError):
        Cgroup({"pids": group, "memory": group}, Limits())


@pytest.mark.parametrize(
    ("pids_events", "memory_events", "exceeded"),
    [("max 0\n", "low 0\noom_kill 0\n", None), ("max 3\n", "oom_kill 0\n", "processes"),
     ("max 0\n", "oom 2\noom_kill 1\n", "memory"), ("max 1\n", "oom_kill 1\n", "processes"),
     ("", "", None), ("max \n", "oom_kill\n", None), ("maximum 5\n", "oom 4\n", None)],
)  # fmt: skip
def test_a_cgroup_names_the_bound_the_kernel_enforced(
    tmp_path: Path, pids_events: str, memory_events: str, exceeded: str | None
) -> None:
    group = tmp_path / "g"
    group.mkdir()
    cgroup = Cgroup({"pids": group, "memory": group}, Limits())
    (group / "pids.events").write_text(pids_events)
    (group / "memory.events").write_text(memory_events)
    assert cgroup.exceeded() == exceeded


def test_a_v1_cgroup_reads_the_memory_controllers_oom_control(tmp_path: Path) -> None:
    pids, memory = tmp_path / "pids", tmp_path / "memory"
    pids.mkdir()
    memory.mkdir()
    cgroup = Cgroup({"pids": pids, "memory": memory}, Limits())
    assert cgroup.exceeded() is None  # no event files at all
    (memory / "memory.events").write_text("oom_kill 9\n")  # a v2 file name: not read for v1
    assert cgroup.exceeded() is None
    (memory / "oom_control").write_text("oom_kill 9\n")
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert cgroup.exceeded() == "memory"


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
def test_the_python_running_harness_works_inside_wherever_it_lives(tmp_path: Path) -> None:
    # its folders under /tmp (a virtual environment made there) are mounted back over the
    # private /tmp; PYTHONPATH reaches the command as it is
    code = "import harness.sandbox.bwrap as b; print(b.__file__)"
    argv = bwrap_argv([sys.executable, "-c", code], workspace=tmp_path, cwd=tmp_path,
                      network=False, tmp_bytes=4 * MB)  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert done.stdout.strip() == harness.sandbox.bwrap.__file__, done.stderr  # this very code


def fake_bwrap(tmp_path: Path, script: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "bwrap").write_text(script)
    (folder / "bwrap").chmod(0o755)
    return folder


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    bwrap_problem.cache_clear()
    yield
    bwrap_problem.cache_clear()


@pytest.mark.parametrize(
    ("script", "problem"),
    [("#!/bin/sh\necho 'setting up' >&2\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n",
      "bwrap does not work here (bwrap: No permissions to create a new namespace); user "
      "namespaces may be disabled"),
     ("#!/bin/sh\nexit 3\n", "bwrap does not work here (exit code 3); user namespaces may be disabled"),
     ("#!/bin/sh\nexit 0\n", None)],
)  # fmt: skip
def test_the_probe_says_why_bwrap_cannot_be_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None, script: str,
    problem: str | None,
) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(fake_bwrap(tmp_path, script)))
    assert bwrap_problem() == problem


def test_the_probe_names_a_missing_or_broken_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert bwrap_problem() == (
        "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    )
    bwrap_problem.cache_clear()
    monkeypatch.setenv("PATH", str(fake_bwrap(tmp_path, "#!/no/such/interpreter\n")))
    assert (bwrap_problem() or "").startswith("bwrap could not be started: [Errno 2]")


def test_the_probe_runs_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    folder = fake_bwrap(tmp_path, f"#!/bin/sh\necho run >> {tmp_path}/runs\nexit 0\n")
    monkeypatch.setenv("PATH", str(folder))
    assert (bwrap_problem(), bwrap_problem()) == (None, None)
    assert (tmp_path / "runs").read_text() == "run\n"


def test_without_prlimit_no_process_prefix_is_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nproc_prefix(Limits(processes=37)) == []


def test_limits_cannot_be_changed_once_made() -> None:
    limits = Limits()
    with pytest.raises(ValidationError, match="frozen"):
        limits.memory_mb = 1  # type: ignore[misc]
    assert limits.memory_mb == 4096


def test_the_probe_needs_the_network_namespace_every_command_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    # a machine that can share the network but not make a namespace of its own
    script = (
        '#!/bin/sh\nfor arg; do [ "$arg" = --share-net ] && exit 0; done\n'
        "echo 'bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted' >&2\nexit 1\n"
    )
    monkeypatch.setenv("PATH", str(fake_bwrap(tmp_path, script)))
    assert bwrap_problem() == (
        "bwrap does not work here (bwrap: loopback: Failed RTM_NEWADDR: Operation not "
        "permitted); user namespaces may be disabled"
    )
