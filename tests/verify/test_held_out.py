"""Held-out gates: tests the agent never sees decide the round, and it hears only what is allowed.

The gate on its own: the files laid over a private copy, what the agent planted there, and what
it is told (the bug-fix example run with a held-out test: test_held_out_example.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import Sandbox
from harness.verify.gates import CommandGate, GateReport
from harness.verify.held_out import HeldOutGate, lay_over, place
from harness.verify.pytest_gate import PytestGate


def _held_out(tmp_path: Path) -> Path:
    folder = tmp_path / "held_out"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_hidden.py").write_text("def test_hidden():\n    assert 1 + 1 == 2\n")
    return folder


def test_the_files_are_laid_over_a_copy_and_the_workspace_is_left_alone(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "test_hidden.py").write_text("def test_hidden():\n    pass  # weak\n")
    seen: list[str] = []

    def look(folder: str | Path) -> GateReport:
        seen.append((Path(folder) / "tests" / "test_hidden.py").read_text())
        return GateReport(name="look", passed=True, summary="ok")

    gate = HeldOutGate(_Named(look), _held_out(tmp_path))
    report = gate.check(workspace)
    assert report.passed
    assert seen == ["def test_hidden():\n    assert 1 + 1 == 2\n"]
    assert (
        workspace / "tests" / "test_hidden.py"
    ).read_text() == "def test_hidden():\n    pass  # weak\n"
    assert report.name == "held-out look"


def test_a_link_planted_where_a_held_out_file_goes_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    target = tmp_path / "copy"
    (target / "tests").mkdir(parents=True)
    (target / "tests" / "test_hidden.py").symlink_to(outside)
    placed = lay_over(_held_out(tmp_path), target)
    assert placed == ["tests/test_hidden.py"]
    assert outside.read_text() == "keep me"
    assert not (target / "tests" / "test_hidden.py").is_symlink()
    assert "1 + 1 == 2" in (target / "tests" / "test_hidden.py").read_text()


def test_a_linked_folder_on_the_way_is_replaced_too(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "copy"
    target.mkdir()
    (target / "tests").symlink_to(elsewhere, target_is_directory=True)
    lay_over(_held_out(tmp_path), target)
    assert list(elsewhere.iterdir()) == []
    assert (target / "tests").is_dir()
    assert not (target / "tests").is_symlink()


@pytest.mark.parametrize("way_out", ["../outside/x.py", "tests/../../outside/x.py", "ABS"])
def test_a_path_that_leaves_the_copy_is_refused_and_nothing_is_touched(
    tmp_path: Path, way_out: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("keep me")
    target = tmp_path / "copy"
    target.mkdir()
    origin = tmp_path / "origin.py"
    origin.write_text("planted")
    relative = outside / "x.py" if way_out == "ABS" else Path(way_out)
    with pytest.raises(ValueError, match="is not a path inside"):
        place(origin, target, relative)
    assert (outside / "x.py").read_text() == "keep me"
    assert list(target.iterdir()) == []


def test_a_dangling_link_planted_where_a_held_out_file_goes_is_not_written_through(
    tmp_path: Path,
) -> None:
    """A link to a file that does not exist yet: written through, the held-out test would land
    wherever the agent pointed it."""
    aimed_at = tmp_path / "outside" / "written.py"
    aimed_at.parent.mkdir()
    target = tmp_path / "copy"
    (target / "tests").mkdir(parents=True)
    (target / "tests" / "test_hidden.py").symlink_to(aimed_at)

    assert lay_over(_held_out(tmp_path), target) == ["tests/test_hidden.py"]

    assert not aimed_at.exists()
    assert list(aimed_at.parent.iterdir()) == []
    laid = target / "tests" / "test_hidden.py"
    assert not laid.is_symlink()
    assert laid.read_text() == "def test_hidden():\n    assert 1 + 1 == 2\n"


@pytest.mark.parametrize("planted", ["a folder at the file", "a file at its folder"])
def test_what_the_agent_planted_in_the_way_is_replaced_and_the_gate_runs(
    tmp_path: Path, planted: str
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    if planted == "a folder at the file":
        (workspace / "tests" / "test_hidden.py").mkdir(parents=True)
        (workspace / "tests" / "test_hidden.py" / "conftest.py").write_text("planted\n")
    else:
        (workspace / "tests").write_text("planted\n")
    seen: list[list[str]] = []

    def look(folder: str | Path) -> GateReport:
        tests = Path(folder) / "tests"
        seen.append(sorted(p.relative_to(tests).as_posix() for p in tests.rglob("*")))
        seen.append([(tests / "test_hidden.py").read_text()])
        return GateReport(name="look", passed=True, summary="ok")

    report = HeldOutGate(_Named(look), _held_out(tmp_path)).check(workspace)

    assert (report.passed, report.summary) == (True, "the held-out tests passed")
    assert seen == [["test_hidden.py"], ["def test_hidden():\n    assert 1 + 1 == 2\n"]]
    assert (workspace / "tests").exists()  # the workspace itself is left as it was
    assert (workspace / "tests").is_dir() == (planted == "a folder at the file")


def test_links_in_the_workspace_are_copied_as_links_not_followed(tmp_path: Path) -> None:
    """The private copy holds the agent's links as links: what they point to (a folder of the
    user's, a file that does not exist) is neither copied in nor a reason to fail."""
    secrets = tmp_path / "home"
    secrets.mkdir()
    (secrets / "id_rsa").write_text("private key\n")
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "keys").symlink_to(secrets, target_is_directory=True)
    (workspace / "key.txt").symlink_to(secrets / "id_rsa")
    (workspace / "gone.txt").symlink_to(tmp_path / "missing")
    seen: list[object] = []

    def look(folder: str | Path) -> GateReport:
        copy = Path(folder)
        for name in ("keys", "key.txt", "gone.txt"):
            seen.append((name, (copy / name).is_symlink(), str((copy / name).readlink())))
        return GateReport(name="look", passed=True, summary="ok")

    report = HeldOutGate(_Named(look), _held_out(tmp_path)).check(workspace)

    assert report.passed
    assert seen == [
        ("keys", True, str(secrets)),
        ("key.txt", True, str(secrets / "id_rsa")),
        ("gone.txt", True, str(tmp_path / "missing")),
    ]


def test_links_in_the_held_out_folder_are_not_laid_over(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_planted.py").write_text("def test_planted():\n    pass\n")
    folder = _held_out(tmp_path)
    (folder / "tests" / "test_linked.py").symlink_to(outside / "test_planted.py")
    (folder / "tests" / "linked").symlink_to(outside, target_is_directory=True)
    target = tmp_path / "copy"
    target.mkdir()

    assert lay_over(folder, target) == ["tests/test_hidden.py"]

    assert sorted(p.name for p in (target / "tests").iterdir()) == ["test_hidden.py"]


@pytest.mark.parametrize(
    ("feedback", "summary", "failures"),
    [
        ("none", "a check the agent cannot see did not pass", []),
        ("pass_fail", "the held-out tests failed", []),
        ("ids", "the held-out tests failed", ["tests/test_hidden.py::test_secret_case"]),
    ],
)
def test_the_agent_is_told_only_what_feedback_allows(
    tmp_path: Path, feedback: str, summary: str, failures: list[str]
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    folder = tmp_path / "held_out"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_hidden.py").write_text(
        "def test_secret_case():\n    assert 'expected secret value' == 'other'\n"
    )
    inner = PytestGate("tests", sandbox=Sandbox("none"))
    report = HeldOutGate(inner, folder, feedback=feedback).check(workspace)  # type: ignore[arg-type]
    assert not report.passed
    assert (report.summary, report.failures, report.output_tail) == (summary, failures, "")
    assert "expected secret value" not in report.model_dump_json()


def test_a_passing_held_out_gate_says_so(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    gate = HeldOutGate(CommandGate("test -f tests/test_hidden.py", sandbox=Sandbox("none")),
                       _held_out(tmp_path), feedback="none")  # fmt: skip
    report = gate.check(tmp_path / "work")
    assert (report.passed, report.summary) == (True, "the held-out tests passed")


def test_bad_held_out_arguments_are_configuration_errors(tmp_path: Path) -> None:
    gate = CommandGate("true")
    with pytest.raises(ConfigError, match="held_out: .* is not a folder"):
        HeldOutGate(gate, tmp_path / "missing")
    folder = _held_out(tmp_path)
    with pytest.raises(ConfigError, match="feedback: must be one of none, pass_fail, ids"):
        HeldOutGate(gate, folder, feedback="all")  # type: ignore[arg-type]
    (tmp_path / "a file").write_text("")
    with pytest.raises(ConfigError, match="held_out: .*a file is not a folder"):
        HeldOutGate(gate, tmp_path / "a file")
    (tmp_path / "a link").symlink_to(folder, target_is_directory=True)
    with pytest.raises(ConfigError, match="held_out: .*a link is not a folder"):
        HeldOutGate(gate, tmp_path / "a link")


def test_a_held_out_gate_takes_the_name_it_is_given(tmp_path: Path) -> None:
    gate = HeldOutGate(CommandGate("true", sandbox=Sandbox("none")), _held_out(tmp_path),
                       name="hidden checks")  # fmt: skip
    (tmp_path / "work").mkdir()
    assert gate.check(tmp_path / "work").name == "hidden checks"


class _Named:
    """A gate made of a function (PredicateGate's report, without its checks)."""

    def __init__(self, check: object) -> None:
        self.name = "look"
        self._check = check

    def check(self, workspace: str | Path) -> GateReport:
        return self._check(workspace)  # type: ignore[operator, no-any-return]
