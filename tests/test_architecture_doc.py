"""docs/architecture.md is true: every main name it lists imports from where it says (from
``harness`` itself when written alone), and its layers and ranks are the ones
tests/test_quality.py enforces."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

from tests.test_quality import LAYERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
_ROW = re.compile(r"^\| (\d+) \| `(\w+)/` \| (.*) \| (.*) \|$")


def rows(text: str) -> list[tuple[int, str, list[str]]]:
    """Each layer's rank, package and main names, from the table."""
    found = []
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            rank, package, _, names = match.groups()
            found.append((int(rank), package, re.findall(r"`([^`]+)`", names)))
    return found


def where(name: str) -> tuple[str, str]:
    """The module and attribute a documented name is imported as."""
    if ":" in name:  # an entry point: module:function
        module, _, attribute = name.partition(":")
        return module, attribute
    if "." in name:
        module, _, attribute = name.rpartition(".")
        return module, attribute
    return "harness", name


def missing(names: list[str]) -> list[str]:
    """The names that do not import as documented, each with why."""
    failures = []
    for name in names:
        module, attribute = where(name)
        try:
            getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    return failures


def test_every_name_the_map_says_can_be_imported_imports() -> None:
    names = [name for _, _, listed in rows(DOC.read_text()) for name in listed]
    assert len(names) > 30  # the table was read
    code = (
        "import sys\n"
        "from tests.test_architecture_doc import missing\n"
        f"print('\\n'.join(missing({names!r})))\n"
        "assert 'litellm' not in sys.modules, 'a main name imported litellm'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        cwd=DOC.parents[1],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_a_name_that_is_not_there_is_named() -> None:
    assert missing(["OuterLoop", "harness.workspace.git.open_workspace"]) == []
    assert missing(["EventLog", "harness.cli.main:nothing", "harness.nowhere.Name"]) == [
        "EventLog: AttributeError: module 'harness' has no attribute 'EventLog'",
        "harness.cli.main:nothing: AttributeError: module 'harness.cli.main' has no attribute "
        "'nothing'",
        "harness.nowhere.Name: ModuleNotFoundError: No module named 'harness.nowhere'",
    ]


def test_the_map_ranks_the_layers_the_quality_checks_enforce() -> None:
    ranked = {package: rank for rank, package, _ in rows(DOC.read_text())}
    assert ranked == LAYERS
