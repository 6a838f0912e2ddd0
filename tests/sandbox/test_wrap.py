"""``Sandbox.wrap``: the command line of a long-running process under the sandbox's boundary."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.sandbox import Limits, Sandbox

PROBE = (
    'echo "canary=${HARNESS_CANARY:-absent} given=${GIVEN:-absent} home=$HOME"; '
    "echo in > inside.txt && echo inside=ok; "
    '(echo out > "$1") 2>/dev/null && echo outside=written || echo outside=refused; '
    "head -c 3000000 /dev/zero > big.bin 2>/dev/null; echo big=$(wc -c < big.bin)"
)


def start(sandbox: Sandbox, workspace: Path, target: Path) -> tuple[str, dict[str, str]]:
    argv, env = sandbox.wrap(
        ["/bin/sh", "-c", PROBE, "sh", str(target)], cwd=workspace, env={"GIVEN": "yes"}
    )
    done = subprocess.run(
        argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=60,
        start_new_session=True, check=False,
    )  # fmt: skip
    return done.stdout, env


@pytest.mark.usefixtures("bwrap_ok")
def test_bwrap_wrap_keeps_secrets_writes_and_file_sizes_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CANARY", "s3cret")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = Path.home() / ".harness-wrap-probe"  # on the read-only root, not the private /tmp
    sandbox = Sandbox("bwrap", limits=Limits(file_size_mb=1))
    out, env = start(sandbox, workspace, outside)
    assert "HARNESS_CANARY" not in env
    assert env["GIVEN"] == "yes"
    assert "canary=absent given=yes home=/tmp/home" in out
    assert "inside=ok" in out
    assert (workspace / "inside.txt").read_text() == "in\n"
    assert "outside=refused" in out
    assert not outside.exists()
    assert "big=1048576" in out  # cut at the file size limit
    assert argv_of(sandbox, workspace)[-2:] == ["--", "true"]


def argv_of(sandbox: Sandbox, workspace: Path) -> list[str]:
    argv, _ = sandbox.wrap(["true"], cwd=workspace)
    assert "bwrap" in argv
    assert "--die-with-parent" in argv
    assert "--share-net" not in argv  # no network unless the sandbox allows it
    return argv


def test_none_wrap_keeps_the_allow_listed_environment_and_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CANARY", "s3cret")
    outside = tmp_path / "outside.txt"
    sandbox = Sandbox("none", limits=Limits(file_size_mb=1))
    out, env = start(sandbox, tmp_path, outside)
    assert "canary=absent given=yes" in out
    assert env["HOME"] != str(Path.home())
    assert "outside=written" in out  # what `none` lets through, as its warning says
    assert "big=1048576" in out


def test_a_missing_program_raises_as_starting_it_would(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-program"):
        Sandbox("none").wrap(["no-such-program"], cwd=tmp_path)
