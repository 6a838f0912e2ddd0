"""A run says once, in its output and its event log, when commands are not sandboxed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.sandbox.sandbox import NOT_SANDBOXED
from tests.cli.test_cli import harness, write_loop
from tests.cli.test_cli_features import ANSWER_LOOP, say, script


@pytest.mark.parametrize("backend", ["none", "bwrap"])
def test_the_run_announces_backend_none_and_only_none(
    tmp_path: Path, backend: str, bwrap_ok: None
) -> None:
    script(tmp_path, "author.json", [say("yes"), "done"])
    extra = f'[critic]\nenabled = false\n[sandbox]\nbackend = "{backend}"'
    write_loop(tmp_path, ANSWER_LOOP.format(extra=extra))

    result = harness("run", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    (log,) = (tmp_path / ".harness" / "runs").glob("*/events.jsonl")
    starts = [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "run_start"]
    if backend == "none":
        assert result.stderr.count(NOT_SANDBOXED) == 1
        assert NOT_SANDBOXED + " (backend 'none')" in starts[0]["warning"]
    else:
        assert NOT_SANDBOXED not in result.stderr
        assert starts[0]["warning"] is None
