"""The code base stays lint-clean and type-checks; CI runs these like any other test."""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
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
    """DESIGN's layout: each module named there answers for what it holds."""
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
    package's ``__init__`` is counted as importing the package.
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
                if target and target != name and not name.startswith(target + "."):
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
    assert "harness.outer.loop" in graph["harness.spec.build"]
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
    "connect": 5,
    "spec": 6,
    "scale": 7,
    "cli": 8,
}
"""The package order of docs/architecture.md: a package imports only packages ranked below it."""


def upward_imports(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Each ``module -> module`` import from a package to one of the same rank or higher."""
    found = []
    for name, targets in sorted(graph.items()):
        source = name.split(".")[1] if name.count(".") else None
        for target in sorted(targets):
            package = target.split(".")[1] if target.count(".") else None
            if source is None or package is None or package == source:
                continue
            if layers[package] >= layers[source]:
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
        "harness.scale.toml_loop": {"harness.cli.runner", "harness.spec.build"},
        "harness.spec.build": {"harness.outer.loop"},
        "harness.outer.loop": {"harness.outer.run"},
        "harness.outer.run": set(),
        "harness.verify.gates": {"harness.tools.proc"},
        "harness.tools.proc": {"harness.verify.gates"},
    }
    assert upward_imports(graph, LAYERS) == [
        "harness.scale.toml_loop -> harness.cli.runner",
        "harness.tools.proc -> harness.verify.gates",
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


def pools_in(package: Path) -> dict[str, list[str]]:
    """File -> what in it starts a pool of workers: an executor, ``multiprocessing.Pool``,
    ``asyncio.to_thread``, Ray (``ray.remote``, ``ray.init``), every ``threading.Thread`` in
    ``scale/`` and ``cli/`` (where loops are run; elsewhere a thread serves one connection or
    one reader), and every ``ForEach`` outside the engine."""
    found: dict[str, list[str]] = {}
    for file in sorted(package.rglob("*.py")):
        relative = str(file.relative_to(package.parent))
        runs_loops = relative.startswith(("harness/scale/", "harness/cli/"))
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
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
            ):
                found.setdefault(relative, []).append(f"{name} at line {node.lineno}")
    return found


def test_one_pool_runs_many_loops() -> None:
    """Best-of-N, fleets, batches, benchmarks and ``harness watch`` run their loops in the one
    pool (scale/pool.py, with its Ray backend); nothing else starts a pool, and only the engine
    runs its ForEach."""
    found = pools_in(ROOT / "harness")
    assert set(found) == set(POOL_PLACES), found
    assert [where.split()[0] for where in found["harness/scale/pool.py"]] == ["Thread"]


def test_a_second_pool_is_found(tmp_path: Path) -> None:
    package = tmp_path / "harness"
    (package / "scale").mkdir(parents=True)
    (package / "scale" / "fleet.py").write_text(
        "import threading\nthreading.Thread(target=print).start()\nForEach(print, [1]).run()\n"
    )
    (package / "outer").mkdir()
    (package / "outer" / "many.py").write_text(
        "from concurrent.futures import ThreadPoolExecutor\nimport threading\n"
        "ThreadPoolExecutor(4)\nthreading.Thread(target=print)\n"  # a service thread: allowed
    )
    assert pools_in(package) == {
        "harness/outer/many.py": ["ThreadPoolExecutor at line 3"],
        "harness/scale/fleet.py": ["Thread at line 2", "ForEach at line 3"],
    }
