"""Packages load their exported names on first use: reading a loop.toml imports no driver."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_reading_a_loop_spec_imports_neither_the_driver_nor_the_tools_nor_litellm() -> None:
    loaded = _modules_after("from harness.spec import LoopSpec")
    assert "harness.spec.loop_spec" in loaded
    assert "harness.outer.rules" in loaded
    for heavy in ("harness.outer.loop", "harness.tools.builtin", "harness.agent.agent", "litellm"):
        assert heavy not in loaded


def test_an_exported_name_loads_its_module_once_asked_and_stays() -> None:
    loaded = _modules_after(
        "import harness.outer as o\n"
        "assert 'harness.outer.loop' not in sys.modules\n"
        "first = o.OuterLoop\n"
        "assert 'OuterLoop' in vars(o) and o.OuterLoop is first"
    )
    assert "harness.outer.loop" in loaded


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    import harness.tools

    with pytest.raises(AttributeError, match="module 'harness.tools' has no attribute 'Nope'"):
        harness.tools.Nope  # noqa: B018


LAZY = ("harness", "harness.engine", "harness.memory", "harness.outer", "harness.sandbox",
        "harness.tools")  # fmt: skip


@pytest.mark.parametrize("package", LAZY)
def test_every_name_a_package_lists_is_one_it_loads(package: str) -> None:
    module = importlib.import_module(package)
    exports = vars(module)["_EXPORTS"]
    assert sorted(module.__all__) == sorted(exports)  # each listed name has a module
    for name in module.__all__:
        assert getattr(module, name) is getattr(importlib.import_module(exports[name]), name)


@pytest.mark.parametrize(
    ("statement", "absent"),
    [
        ("import harness.engine.bounds", "harness.engine.loop"),  # a loop's cap on rounds
        ("import harness.sandbox.limits", "harness.sandbox.sandbox"),  # [sandbox] limits
        ("import harness.memory.progress", "harness.memory.skill"),  # progress.md alone
    ],
)
def test_a_module_of_a_package_loads_without_the_rest_of_it(statement: str, absent: str) -> None:
    loaded = _modules_after(statement)
    assert statement.removeprefix("import ") in loaded
    assert absent not in loaded
