"""The static check of added lines that reach into the test machinery: each reach named, ordinary
code left alone, and a round that reaches failing before its gates run."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from harness import Agent, OuterLoop, PytestGate, Sandbox, ScriptedModel, StopReason, ToolCall
from harness.verify.machinery import added_lines, machinery_reaches, reaches
from tests.conftest import git, make_repo
from tests.verify.verdict_tricks import TRICKS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix" / "project"


def found(code: str) -> list[str]:
    return [f"{r.line} {r.what}" for r in reaches("m.py", code, set(range(1, 100)))]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import atexit\n", ["1 imports atexit"]),
        ("import _pytest.reports as r\n", ["1 imports _pytest.reports"]),
        ("from _pytest.config import Config\n", ["1 imports _pytest.config"]),
        ("import pluggy\n", ["1 imports pluggy"]),
        ("from atexit import register\n", ["1 imports atexit"]),
        ("import os\nos._exit(0)\n", ["2 ends the process with os._exit"]),
        ("from os import _exit\n", ["1 imports os._exit"]),
        ("import os as o\no._exit(0)\n", ["2 ends the process with os._exit"]),
        ("import sys\nsys.modules['x'] = None\n", ["2 changes sys.modules"]),
        ("import sys\ndel sys.modules['_pytest.runner']\n", ["2 changes sys.modules"]),
        ("import sys\nsys.modules.update(x=None)\n", ["2 changes sys.modules"]),
        ("import sys\nsys.meta_path.insert(0, object())\n", ["2 changes sys.meta_path"]),
        ("import sys\nsys.exit = print\n", ["2 replaces sys.exit"]),
        ("from sys import modules\n", ["1 imports sys.modules"]),
        ("import builtins\nbuiltins.print = len\n", ["2 replaces builtins.print"]),
        ("__builtins__['open'] = len\n", ["1 changes __builtins__"]),
        ("import builtins\nsetattr(builtins, 'open', len)\n", ["2 replaces a name in builtins"]),
        ("import sys\nf = sys._getframe(1)\n", ["2 walks the interpreter's frames (sys._getframe)"]),
        ("import gc\ngc.get_objects()\n",
         ["2 searches the interpreter's objects (gc.get_objects)"]),
        ("from gc import get_referrers\n",
         ["1 searches the interpreter's objects (gc.get_referrers)"]),
        ("import sys\nsys.settrace(None)\n", ["2 traces the interpreter (sys.settrace)"]),
        ("import os\nos.dup2(1, 9)\n", ["2 re-points a file descriptor (os.dup2)"]),
        ("import os\nos.closerange(3, 99)\n",
         ["2 closes file descriptors it did not open (os.closerange)"]),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
         ["2 signals its own process or its parent (os.kill)"]),
        ("import importlib\nimportlib.import_module('_pytest.runner')\n",
         ["2 imports _pytest.runner"]),
        ("__import__('atexit')\n", ["1 imports atexit"]),
        ("import pytest\n@pytest.hookimpl(wrapper=True)\ndef f(): pass\n",
         ["2 uses pytest.hookimpl"]),
        ("from pytest import TestReport, raises\n", ["1 imports pytest.TestReport"]),
    ],
)  # fmt: skip
def test_each_reach_is_named_on_its_line(code: str, expected: list[str]) -> None:
    assert found(code) == expected


ORDINARY = '''
import builtins, gc, json, os, signal, subprocess, sys
import pytest

def main(argv=None):
    """A command line tool: ordinary things that sound close to the machinery."""
    module = sys.modules.get("numpy")
    loaded = "json" in sys.modules
    print("hello", file=sys.stderr)
    gc.collect()
    os.kill(child_pid, signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    subprocess.run(["true"], check=True)
    with open("x.json") as f:
        data = json.load(f)
    self._exit = True
    exit_code = builtins.len([1])
    with pytest.raises(ValueError):
        int("x")
    sys.exit(0 if data else 1)
'''


def test_ordinary_code_does_not_trip_it() -> None:
    assert found(ORDINARY) == []
    assert found("def broken(:\n    import atexit\n") == []  # cannot even be imported


def test_the_bugfix_example_and_the_tricks(tmp_path: Path) -> None:
    sources = {p.relative_to(EXAMPLE).as_posix(): p.read_text() for p in EXAMPLE.rglob("*.py")}
    assert all(reaches(name, text, set(range(1, 999))) == [] for name, text in sources.items())
    assert all(found(code) for code in TRICKS.values())  # each of the eight is seen


def test_only_added_lines_count() -> None:
    before = "import atexit\n\ndef add(a, b):\n    return a - b\n"
    after = "import atexit\n\ndef add(a, b):\n    import os; os._exit(0)\n    return a - b\n"
    assert added_lines(before, after) == {4}
    assert [str(r) for r in reaches("calc.py", after, added_lines(before, after))] == [
        "calc.py:4 ends the process with os._exit"
    ]
    assert added_lines(None, "a\nb\n") == {1, 2}
    assert added_lines("a\nb\n", "a\nc\n") == {2}


def test_changed_files_are_read_from_the_workspace_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("import atexit\n")
    (tmp_path / "notes.txt").write_text("import atexit\n")
    (tmp_path / "linked.py").symlink_to(tmp_path / "calc.py")
    changed = ["calc.py", "notes.txt", "linked.py", "gone.py"]

    found_here = machinery_reaches(changed, tmp_path, lambda path: None)

    assert [str(r) for r in found_here] == [
        "calc.py:1 imports atexit",
        "linked.py:1 cannot be read as a Python file, so it cannot be checked",
    ]
    base = {"calc.py": "import atexit\n"}
    assert machinery_reaches(["calc.py"], tmp_path, base.get) == []  # it was there before


def example_repo(root: Path) -> Path:
    """The example's project as this checkout tracks it (no caches a run left beside it)."""
    tracked = git(EXAMPLE, "ls-files").split()
    return make_repo(root, {name: (EXAMPLE / name).read_text() for name in tracked})


@pytest.mark.parametrize("trick", TRICKS)
def test_a_round_that_applies_a_trick_to_the_bugfix_example_fails_naming_the_line(
    tmp_path: Path, trick: str
) -> None:
    repo = example_repo(tmp_path / "repo")
    package = "invoicing/__init__.py"
    code = (repo / package).read_text() + TRICKS[trick]
    model = ScriptedModel([ToolCall("write_file", {"path": package, "content": code}), "Done."])

    result = OuterLoop(
        "fix the invoicing library so that its tests pass",
        Agent(model, max_steps=3, sandbox=Sandbox("none")),
        gates=[PytestGate("tests")],
        workspace=repo,
        max_iterations=1,
    ).run()

    assert result.stop_reason is StopReason.MAX_ITERATIONS
    (round_,) = result.rounds
    assert round_.outcome == "failed: test machinery"
    (report,) = round_.gates
    assert report.summary.startswith(f"non-test code reaches into the test machinery: {package}:")
    assert report.failures
    assert all(f.startswith(f"{package}:") for f in report.failures)
    first = int(report.failures[0].split(":")[1])
    assert first > len((EXAMPLE / package).read_text().splitlines())  # on a line it added


def test_added_lines_of_a_long_file_compare_only_what_lies_between_the_shared_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = "".join(f"line {n}\n" for n in range(5000))
    lines = before.splitlines(keepends=True)
    after = "".join([*lines[:1340], "if not dims:\n", "    return\n", *lines[1340:]])
    compared: list[tuple[int, int]] = []
    real = difflib.SequenceMatcher

    def counting(
        junk: None, a: list[str], b: list[str], autojunk: bool
    ) -> difflib.SequenceMatcher[str]:
        compared.append((len(a), len(b)))
        return real(junk, a, b, autojunk=autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", counting)
    assert added_lines(before, after) == {1341, 1342}
    assert compared == [(0, 2)]
    # the ends shared, yet a line moved between them is added where it now stands
    moved = "".join([*lines[:10], lines[20], *lines[10:20], *lines[21:]])
    assert added_lines(before, moved) == {11}
    assert added_lines(before, before) == set()
    assert added_lines("a\nb\n", "a\nb\nb\n") == {3}
    assert added_lines("b\nb\n", "a\nb\nb\n") == {1}
    assert added_lines("x\n", "") == set()
