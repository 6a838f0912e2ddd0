"""A command that fills its workspace's disk is stopped at the write limit, whatever its files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sandbox import Limits, Sandbox
from harness.sandbox.limits import MB, DiskWatch

FILL = "for i in $(seq 60); do head -c 5242880 /dev/urandom > part$i || exit 9; done; echo filled"
"""300 MB in files of 5 MB each: every one under the file size limit."""


def _written(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.glob("part*"))


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_many_small_files_are_stopped_at_the_write_limit(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Before: only one file's size was bounded; 3.7 GB went into a workspace in 5 s."""
    if backend == "bwrap":
        request.getfixturevalue("bwrap_ok")
    sandbox = Sandbox(backend, limits=Limits(write_mb=40, file_size_mb=8))  # type: ignore[arg-type]

    result = sandbox.run(FILL, cwd=tmp_path, timeout=120)

    assert result.limit == "write limit (40 MB)", result.output[-300:]
    assert result.status == "killed: write limit (40 MB) exceeded"
    assert "filled" not in result.output
    # Stopped soon after the bound, not at 300 MB. The bound counts the whole disk's growth, so
    # what other processes write meanwhile (the suite's other workers) can stop it a little early:
    # the lower bound still catches a limit off by a unit (KB for MB) or stopping at once.
    assert 20 * MB <= _written(tmp_path) < 150 * MB


def test_a_writable_folder_counts_and_a_command_within_the_limit_runs_on(tmp_path: Path) -> None:
    workspace, cache = tmp_path / "ws", tmp_path / "cache"
    workspace.mkdir()
    cache.mkdir()
    sandbox = Sandbox("none", limits=Limits(write_mb=40))

    small = sandbox.run("head -c 5242880 /dev/urandom > part1 && echo ok", cwd=workspace,
                        timeout=60)  # fmt: skip
    big = sandbox.run(f"cd {cache} && {FILL}", cwd=workspace, timeout=120, writable=[cache])

    assert (small.exit_code, small.limit, small.output) == (0, None, "ok\n")
    assert big.limit == "write limit (40 MB)"


def test_the_disk_watch_counts_growth_not_what_was_there(tmp_path: Path) -> None:
    (tmp_path / "before").write_bytes(b"x" * (4 * MB))
    watch = DiskWatch([tmp_path, tmp_path / "missing"])
    assert watch.grown() < 2 * MB  # what other processes happen to write, at most
    (tmp_path / "after").write_bytes(b"y" * (8 * MB))
    assert watch.grown() > 7 * MB
