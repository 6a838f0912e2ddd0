"""One round's verification: default protection, the gates, and the critic's event."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Agent, OuterLoop, ScriptedModel
from harness.errors import ConfigError
from harness.gates import CommandGate, PytestGate
from harness.verify import PYTEST_CONFIG_FILES, ROOT_TEST_FILES, default_protect
from harness.workspace_paths import protecting_pattern


def test_named_test_paths_are_protected_relative_to_the_workspace() -> None:
    gate = PytestGate("./tests/unit/ tests/it/../e2e tests/test_a.py::test_b -k slow")

    protect = default_protect([gate, CommandGate("ruff check .")])

    assert protect == ("tests/unit", "tests/e2e", "tests/test_a.py", *PYTEST_CONFIG_FILES)


@pytest.mark.parametrize("args", ["", "-x -q", ".", "./"])
def test_a_gate_on_the_whole_root_protects_test_files_anywhere(args: str) -> None:
    protect = default_protect([PytestGate(args)])

    assert protect == (*ROOT_TEST_FILES, *PYTEST_CONFIG_FILES)
    for path in ("test_top.py", "src/pkg/test_deep.py", "src/pkg/deep_test.py", "tests/data.json"):
        assert protecting_pattern(protect, path) is not None, path
    for path in ("src/pkg/core.py", "pyproject.toml", "docs/testing.md"):
        assert protecting_pattern(protect, path) is None, path


def test_an_option_value_is_not_protected() -> None:
    protect = default_protect([PytestGate("--cov src -n 2 tests")])

    assert protecting_pattern(protect, "tests/test_x.py") == "tests"
    assert protecting_pattern(protect, "src/calc.py") is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("../x", "gates: PytestGate test path '../x' is outside the workspace"),
        ("tests/../../x", "gates: PytestGate test path 'tests/../../x' is outside the workspace"),
        ("/srv/project/tests", "gates: PytestGate test path '/srv/project/tests' is absolute"),
    ],
)
def test_a_test_path_outside_the_workspace_is_a_configuration_error(
    args: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{message}"):
        default_protect([PytestGate(args)])


def test_the_outer_loop_refuses_such_a_gate_when_it_is_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="outside the workspace"):
        OuterLoop("goal", Agent(ScriptedModel([])), gates=[PytestGate("../x")], workspace=tmp_path)
