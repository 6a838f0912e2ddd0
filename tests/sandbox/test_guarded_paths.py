"""A path rule holds in the sandbox too: what `[permissions]` keeps the file tools from writing
is read-only to the agent's commands, however they spell the write (`echo >`, `cp`, `sed -i`,
`mv`, `rm`, `python -c`, a link made on the way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.assemble.build import build_sandbox
from harness.spec.loop_spec import LoopSpec

WRITES = [
    "echo x >> tests/test_a.py",
    "cp /etc/hostname tests/test_a.py",
    "sed -i s/pass/0/ tests/test_a.py",
    "rm -f tests/test_a.py",
    "mv tests/test_a.py gone.py",
    "touch tests/new_test.py",
    "python3 -c \"open('tests/test_a.py', 'a').write('x')\"",
    "ln -s ../src tests/planted",
    "cd src && echo x >> ../tests/test_a.py",
    "mv tests moved",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    (ws / "loop.toml").write_text(
        'name = "g"\ngoal = "g"\n[permissions]\ndeny = ["write_file(tests/*)", "run_shell(rm *)"]\n'
    )
    return ws


@pytest.mark.usefixtures("bwrap_ok")
@pytest.mark.parametrize("command", WRITES)
def test_a_denied_path_is_read_only_to_every_command(workspace: Path, command: str) -> None:
    sandbox = build_sandbox(LoopSpec.from_toml(workspace))
    assert sandbox.backend == "bwrap"
    result = sandbox.run(command, cwd=workspace, timeout=30)
    assert result.exit_code != 0, result.output
    assert (workspace / "tests" / "test_a.py").read_text() == "def test_a(): pass\n"
    assert sorted(p.name for p in (workspace / "tests").iterdir()) == ["test_a.py"]


@pytest.mark.usefixtures("bwrap_ok")
def test_the_rest_of_the_workspace_stays_writable(workspace: Path) -> None:
    sandbox = build_sandbox(LoopSpec.from_toml(workspace))
    result = sandbox.run("echo y > src/a.py && cat tests/test_a.py", cwd=workspace, timeout=30)
    assert result.exit_code == 0, result.output
    assert (workspace / "src" / "a.py").read_text() == "y\n"
    assert "def test_a" in result.output
