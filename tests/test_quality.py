"""The code base stays lint-clean and type-checks; CI runs these like any other test."""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", "harness", "tests", "bench", "examples")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing_in_the_package() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the dev extra")
    result = _run(sys.executable, "-m", "mypy", "harness")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_architecture_map_names_resolve_from_their_modules() -> None:
    """The layers' packages answer for the names they hold."""
    code = (
        "import sys\n"
        "from harness.models import LiteLLMModel, ScriptedModel, ToolCall\n"
        "from harness.memory import Progress, Skill\n"
        "from harness.tools import Tool, default_tools, tool\n"
        "from harness.engine import Condition, ForEach, Loop, LoopResult\n"
        "from harness.outer import OuterLoop, RunResult\n"
        "from harness.verify import CommandGate, Critic, GateReport, PredicateGate, PytestGate, Verdict\n"
        "from harness.agent import Agent, AgentRun\n"
        "from harness.scale import Fleet, Subtask\n"
        "assert 'litellm' not in sys.modules\n"
    )
    result = _run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (at any depth, ``TYPE_CHECKING`` included).

    A package's ``__init__`` may import its own submodules; a submodule importing names from its
    package's ``__init__`` is counted as importing the package. The top package's ``__init__``
    is no layer's own: importing it is counted.
    """
    modules = {}
    for file in package.rglob("*.py"):
        parts = file.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                ancestor = name.startswith(target + ".") and target != package.name
                if target and target != name and not ancestor:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(ROOT / "harness")
    assert len(graph) > 60  # the walk found the package's modules
    assert "harness.outer.loop" in graph["harness.assemble.build"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


LAYERS = {
    "core": 0,
    "models": 1,
    "sandbox": 1,
    "engine": 1,
    "memory": 1,
    "observe": 1,
    "checks": 1,
    "tools": 2,
    "gateway": 2,
    "agent": 3,
    "workspace": 3,
    "verify": 3,
    "outer": 4,
    "runners": 4,
    "research": 4,
    "connect": 5,
    "spec": 6,
    "assemble": 7,
    "replay": 8,
    "scale": 9,
    "cli": 10,
}
"""The package order of docs/architecture.md: a package imports only packages ranked below it."""


def upward_imports(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Each ``module -> module`` import from a package to one of the same rank or higher; the
    top package (``from harness import __version__``), which loads every layer's names, is above
    them all."""
    found = []
    for name, targets in sorted(graph.items()):
        source = name.split(".")[1] if name.count(".") else None
        for target in sorted(targets):
            package = target.split(".")[1] if target.count(".") else None
            if source is None or package == source:
                continue
            if package is None or layers[package] >= layers[source]:
                found.append(f"{name} -> {target}")
    return found


def test_every_package_has_a_place_in_the_order() -> None:
    packages = {p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYERS)


def test_no_package_imports_one_above_it() -> None:
    graph = import_graph(ROOT / "harness")
    assert upward_imports(graph, LAYERS) == []


def test_an_import_running_up_is_named() -> None:
    graph = {
        "harness.scale.toml_loop": {"harness.cli.runner", "harness.assemble.build"},
        "harness.assemble.build": {"harness.outer.loop"},
        "harness.outer.loop": {"harness.outer.run"},
        "harness.outer.run": set(),
        "harness.verify.gates": {"harness.tools.proc"},
        "harness.tools.proc": {"harness.verify.gates"},
        "harness.verify.base_results": {"harness", "harness.core.version"},
    }
    assert upward_imports(graph, LAYERS) == [
        "harness.scale.toml_loop -> harness.cli.runner",
        "harness.tools.proc -> harness.verify.gates",
        "harness.verify.base_results -> harness",
    ]
    equal = {"harness.agent.agent": {"harness.workspace.git"}}
    assert upward_imports(equal, LAYERS) == ["harness.agent.agent -> harness.workspace.git"]


def test_a_cycle_is_found_and_named(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("from pkg.low.a import A\n")  # its own child
    (package / "low" / "a.py").write_text("from pkg.low import b\nA = 1\n")
    (package / "low" / "b.py").write_text("import os\nfrom typing import TYPE_CHECKING\n")
    assert find_cycle(import_graph(package)) is None
    (package / "low" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.low.a import A\n"
    )
    cycle = find_cycle(import_graph(package))
    assert cycle is not None
    assert set(cycle) == {"pkg.low.a", "pkg.low.b"}
    assert cycle[0] == cycle[-1]


POOL_PLACES = {
    "harness/scale/pool.py": "the pool of many loops: one thread per job (local)",
    "harness/scale/ray_backend.py": "its Ray backend: a Ray task per job",
    "harness/scale/cluster_limiter.py": "the Ray actor that hands out a shared rate limit's turns",
    "harness/engine/foreach.py": "the engine's ForEach, the loop node programs run (DESIGN 6)",
    "harness/engine/loop.py": "the engine's Loop run from async code (a worker thread)",
}


def _parsed(package: Path) -> Iterator[tuple[Path, ast.Module]]:
    """Each module of ``package``, in order, with its syntax tree."""
    for file in sorted(package.rglob("*.py")):
        yield file, ast.parse(file.read_text(encoding="utf-8"))


def pools_in(package: Path) -> dict[str, list[str]]:
    """File -> what in it starts a pool of workers: an executor, ``multiprocessing.Pool``,
    ``asyncio.to_thread``, Ray (``ray.remote``, ``ray.init``), every ``threading.Thread`` in
    ``scale/`` and ``cli/`` (where loops are run; elsewhere a thread serves one connection or
    one reader), every ``ForEach`` outside the engine, and every ``wait(..., return_when=...)``
    (a loop starting jobs as others end: the pool's one runner, ``run_all``)."""
    found: dict[str, list[str]] = {}
    for file, tree in _parsed(package):
        relative = str(file.relative_to(package.parent))
        runs_loops = relative.startswith(("harness/scale/", "harness/cli/"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = getattr(func, "value", None)
            owner_name = owner.id if isinstance(owner, ast.Name) else ""
            if (
                (name in {"ThreadPoolExecutor", "ProcessPoolExecutor"})
                or (name == "Pool" and owner_name == "multiprocessing")
                or (name == "to_thread" and owner_name == "asyncio")
                or (name in {"remote", "init"} and owner_name == "ray")
                or (name == "Thread" and runs_loops)
                or (name == "ForEach" and not relative.startswith("harness/engine/"))
                or (name == "wait" and any(k.arg == "return_when" for k in node.keywords))
            ):
                found.setdefault(relative, []).append(f"{name} at line {node.lineno}")
    return {file: sorted(where, key=lambda w: int(w.split()[-1])) for file, where in found.items()}


def test_one_pool_runs_many_loops() -> None:
    """Best-of-N, fleets, batches, benchmarks and ``harness watch`` run their loops in the one
    pool (scale/pool.py, with its Ray backend), the first three started by its one runner;
    nothing else starts a pool or runs jobs as others end, and only the engine runs its ForEach."""
    found = pools_in(ROOT / "harness")
    assert set(found) == set(POOL_PLACES), found
    assert [where.split()[0] for where in found["harness/scale/pool.py"]] == ["Thread", "wait"]


def test_a_second_pool_is_found(tmp_path: Path) -> None:
    package = tmp_path / "harness"
    (package / "scale").mkdir(parents=True)
    (package / "scale" / "fleet.py").write_text(
        "import threading\nthreading.Thread(target=print).start()\nForEach(print, [1]).run()\n"
        "wait(running, return_when=FIRST_COMPLETED)\nwait(every)\n"  # a second runner; a wait
    )
    (package / "outer").mkdir()
    (package / "outer" / "many.py").write_text(
        "from concurrent.futures import ThreadPoolExecutor\nimport threading\n"
        "ThreadPoolExecutor(4)\nthreading.Thread(target=print)\n"  # a service thread: allowed
    )
    assert pools_in(package) == {
        "harness/outer/many.py": ["ThreadPoolExecutor at line 3"],
        "harness/scale/fleet.py": ["Thread at line 2", "ForEach at line 3", "wait at line 4"],
    }


def spec_sections() -> list[type]:
    """Every model reachable from ``LoopSpec``'s fields (its sections, their sub-sections)."""
    from pydantic import BaseModel

    from harness.spec import LoopSpec

    found: list[type] = []
    todo: list[object] = [LoopSpec]
    while todo:
        kind = todo.pop()
        if isinstance(kind, type) and hasattr(kind, "__pydantic_fields__"):
            if kind in found:
                continue
            found.append(kind)
            todo.extend(info.annotation for info in kind.__pydantic_fields__.values())
        elif not (isinstance(kind, type) and issubclass(kind, BaseModel)):
            todo.extend(typing.get_args(kind))  # unions, lists, dicts, Annotated
    return found


BOUNDS = ("gt", "ge", "lt", "le")
CHECK_WORDS = ("must be", "expected a positive", "must lie")
"""How a hand-written check of a bound says what it refuses."""


def declared(sections: list[type]) -> tuple[dict[tuple[str, object], str], dict[str, str]]:
    """(field name, numeric default) -> where it is declared; bounded field name -> where."""
    defaults: dict[tuple[str, object], str] = {}
    bounded: dict[str, str] = {}
    for section in sorted(sections, key=lambda kind: kind.__name__):
        for name, info in section.__pydantic_fields__.items():  # type: ignore[attr-defined]
            where = f"{section.__name__}.{name}"
            value = info.default
            # 0 and 1 are every counter's start: too common to tell a copy from a coincidence
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and value not in (0, 1)
            ):
                defaults.setdefault((name, float(value)), where)
            if any(getattr(m, key, None) is not None for m in info.metadata for key in BOUNDS):
                bounded.setdefault(name, where)
    return defaults, bounded


def _number(node: ast.expr | None) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    return None


def _checked_name(node: ast.AST) -> str | None:
    """The field a hand-written check names: ``raise ConfigError(f"NAME: ...")`` or
    ``positive_finite("NAME", ...)``."""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
        first = node.exc.args[0]
        text = first.values[0] if isinstance(first, ast.JoinedStr) and first.values else first
        if isinstance(text, ast.Constant) and isinstance(text.value, str):
            name, _, said = text.value.partition(": ")
            return name if said.startswith(CHECK_WORDS) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        first = node.args[0]
        if node.func.id == "positive_finite" and isinstance(first, ast.Constant):
            return str(first.value)
    return None


def redeclarations(package: Path, sections: list[type]) -> list[str]:
    """Each default or bound of a spec section written again outside the section declaring it:
    a keyword or a dataclass field of the same name (or the last part of its name, ``threshold``
    for ``compaction_threshold``) with the same number, or a hand-written check naming it."""
    defaults, bounded = declared(sections)
    declaring = {(Path(sys.modules[k.__module__].__file__ or "").resolve(), k.__name__)
                 for s in sections for k in s.__mro__ if hasattr(k, "__pydantic_fields__")}  # fmt: skip
    lines: list[str] = []
    found: list[tuple[int, str]] = []  # of one file, sorted by line
    for file, tree in _parsed(package):
        where = file.relative_to(package.parent)
        for node in ast.walk(tree):
            pairs: list[tuple[str, ast.expr | None, int]] = []
            if isinstance(node, ast.FunctionDef):
                args = [*node.args.posonlyargs, *node.args.args]
                tail = list(
                    zip(
                        args[len(args) - len(node.args.defaults) :], node.args.defaults, strict=True
                    )
                )
                tail += list(zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True))
                pairs = [(arg.arg, default, node.lineno) for arg, default in tail]
            elif isinstance(node, ast.ClassDef) and (file.resolve(), node.name) not in declaring:
                pairs = [(s.target.id, s.value, s.lineno) for s in node.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]  # fmt: skip
            for name, default, line in pairs:
                value = _number(default)
                homes_of = [home for (field, number), home in defaults.items()
                            if value == number and (name == field or field.endswith(f"_{name}"))]  # fmt: skip
                if homes_of:
                    found.append(
                        (line, f"{where}:{line}: {name}={value:g} re-declares {homes_of[0]}")
                    )
            checked = _checked_name(node)
            if checked in bounded:
                line = getattr(node, "lineno", 0)
                said = (
                    f"{where}:{line}: a check of {checked} re-declares {bounded[checked]}'s bounds"
                )
                found.append((line, said))
        lines.extend(said for _, said in sorted(found))
        found.clear()
    return lines


def test_a_default_or_a_bound_of_the_loop_spec_is_declared_once() -> None:
    """Every default and bound ``LoopSpec``'s sections hold lives there only: a runtime class
    takes the section's (``AGENT_DEFAULTS.max_steps``, ``check_field(AgentConfig, ...)``)."""
    sections = spec_sections()
    names = {section.__name__ for section in sections}
    assert {"LoopSpec", "AgentConfig", "CriticConfig", "Budget", "SubagentsConfig"} <= names
    assert redeclarations(ROOT / "harness", sections) == []


def test_a_default_typed_again_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "runner.py").write_text(
        "class Agent:\n"
        "    def __init__(self, *, max_steps: int = 50, shell_timeout: float = 120.0) -> None:\n"
        "        if max_steps < 1:\n"
        '            raise ConfigError(f"max_steps: must be a positive integer, got {max_steps}")\n'
        "\n"
        "class Strategy:\n"
        "    threshold: float = 0.8\n"
        "    keep: int = 50\n"
    )
    assert redeclarations(package, spec_sections()) == [
        "pkg/runner.py:2: max_steps=50 re-declares AgentConfig.max_steps",
        "pkg/runner.py:2: shell_timeout=120 re-declares AgentConfig.shell_timeout",
        "pkg/runner.py:4: a check of max_steps re-declares AgentConfig.max_steps's bounds",
        "pkg/runner.py:7: threshold=0.8 re-declares AgentConfig.compaction_threshold",
    ]


MAX_MODULE_LINES = 400
"""A module is read top to bottom: past this many lines it holds more than one thing."""


def long_modules(package: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    """Each module of ``package`` longer than ``limit`` lines, with its length."""
    found = []
    for file in sorted(package.rglob("*.py")):
        lines = len(file.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{file.relative_to(package.parent)}: {lines} lines")
    return found


def test_no_module_is_over_400_lines() -> None:
    assert long_modules(ROOT / "harness") == []


def test_a_long_module_is_named(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n" * 400)
    (package / "long.py").write_text("x = 1\n" * 401)
    assert long_modules(package) == ["pkg/long.py: 401 lines"]


def types_made_per_check(package: Path) -> list[str]:
    """Each ``check_value(...)`` in ``package`` whose type is written in the call: its checker is
    cached by the type, and a type made anew on every call is never found there again."""
    found = []
    for file, tree in _parsed(package):
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "check_value"
                and node.args
                and isinstance(node.args[0], ast.Subscript)
            ):
                found.append(f"{file.relative_to(package.parent)}:{node.lineno}")
    return found


def test_a_checked_type_is_made_once() -> None:
    assert types_made_per_check(ROOT / "harness") == []


def test_a_type_made_in_the_check_is_named(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "once.py").write_text("Count = int\ncheck_value(Count, 1, 'n')\n")
    (package / "each.py").write_text("x = 1\nsection.check_value(Annotated[int, 1], 1, 'n')\n")
    assert types_made_per_check(package) == ["pkg/each.py:2"]
