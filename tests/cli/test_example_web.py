"""The web research example, run as examples/README.md says, against its local stand-in for the web."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import harness
from tests.cli.test_examples import assert_passed_in_two_rounds, copy_example, of_kind

SHIPPED_PORT = "8765"


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Path]:
    """A copy of the example served on a free port (the shipped port may be taken here)."""
    folder = copy_example("web-research", tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    for name in ("loop.toml", "scripted-trajectory.json"):
        path = folder / name
        path.write_text(path.read_text().replace(SHIPPED_PORT, port))
    server = subprocess.Popen(
        [sys.executable, str(folder / "serve.py"), port], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        assert f"http://127.0.0.1:{port}/" in server.stdout.readline()
        yield folder
    finally:
        server.kill()
        server.wait(10)


def test_web_research_reads_the_page_and_passes_in_two_rounds(example: Path) -> None:
    started = time.monotonic()
    result = harness("run", str(example), cwd=example.parent)
    events = assert_passed_in_two_rounds(example, "web-research", result, "every gate")
    fetches = [e for e in of_kind(events, "tool_call") if e["name"] == "fetch_url"]
    assert [(f["is_error"], "wikipedia" in f["arguments_preview"]) for f in fetches] == [
        (False, False),  # the page, read
        (True, True),  # a host off the allow-list, refused
        (False, False),
    ]
    assert fetches[0]["output_chars"] > 300
    gates = of_kind(events, "gate_report")
    assert [(g["round"], g["name"], g["passed"]) for g in gates] == [
        (1, "cites the page", False),
        (2, "cites the page", True),
        (2, "covers neap tides", True),
        (2, "quotes checked", True),
    ]
    assert gates[-1]["summary"] == (
        "3 citations, 1 sources verified, every quote found in its source"
    )
    run = next((example / ".harness" / "runs").iterdir())
    [archived] = {line.split('"id":"')[1][:14] for line in (run / "sources" / "index.jsonl").open()}
    assert fetches[0]["output_chars"] > 300
    assert archived.startswith("s-")
    notes = (example / ".harness" / "work" / "notes.md").read_text()
    assert "neap tides" in notes
    assert time.monotonic() - started < 120
