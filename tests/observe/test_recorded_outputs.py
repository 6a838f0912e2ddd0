"""A run recorded by an earlier version (trajectory version 1, kept in ``recordings/``) reads
the same today: ``harness show``, ``report`` (text and HTML) and ``replay`` print, byte for
byte, what they printed when it was recorded.

The recording is a two-round run of a scripted model (round 1 fails its gate, round 2 passes
gate and critic; one observation long enough to be stored by hash), packed with its git
repository. Only the folder it is unpacked in and the id of the replay's own run differ from one
unpacking to the next; both are put back as the expected files spell them.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from tests.cli.test_cli import harness

RECORDINGS = Path(__file__).parent / "recordings"
RUN = "038b8c57"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recorded")
    with tarfile.open(RECORDINGS / "v1-run.tar.gz") as packed:
        packed.extractall(root, filter="data")
    return root / "project"


def _expected(name: str) -> str:
    return (RECORDINGS / "v1-expected" / name).read_text(encoding="utf-8")


def _printed(project: Path, *args: str) -> str:
    result = harness(*args, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_show_prints_the_old_recording_as_it_did(project: Path) -> None:
    assert _printed(project, "show", RUN) == _expected("show.txt")
    assert _printed(project, "show", RUN, "--round", "2") == _expected("show-round-2.txt")


def test_report_prints_the_old_recording_as_it_did(project: Path) -> None:
    assert _printed(project, "report", RUN) == _expected("report.txt")
    page = project.parent / "report.html"
    _printed(project, "report", RUN, "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert str(project.parent) in html  # the run folder's path, where it was unpacked
    assert html.replace(str(project.parent), "ROOT") == _expected("report.html")


def test_replay_of_the_old_recording_finds_no_divergence(project: Path) -> None:
    printed = _printed(project, "replay", RUN, "--repo", ".")
    new_run = re.search(r"recorded again as run ([0-9a-f]{8})", printed)
    assert new_run is not None
    assert new_run.group(1) != RUN
    assert printed.replace(new_run.group(1), "NEW") == _expected("replay.txt")
