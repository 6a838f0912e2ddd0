"""``bench swebench`` with an instance's container image, against the fake engine: the agent's
commands in one container kept for the instance, the workspace at the image's ``/testbed``, the
held-out gate in a throw-away container of the same image, nothing left running after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.scale.swebench import BenchOptions, run_bench
from harness.scale.swebench_envs import EnvTable
from harness.scale.swebench_instance import Instance
from harness.workspace.git_cmd import git
from tests.conftest import make_repo
from tests.sandbox.fake_engine import FakeEngine, on_path

TEST_PATCH = """\
diff --git a/tests/test_calc.py b/tests/test_calc.py
new file mode 100644
--- /dev/null
+++ b/tests/test_calc.py
@@ -0,0 +1,5 @@
+from calc import add
+
+
+def test_add():
+    assert add(2, 3) == 5
"""
FIXED = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    return on_path(tmp_path / "engine", monkeypatch)


def after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def targets(argv: list[str]) -> dict[str, str]:
    """Each bind mount's target and source."""
    found = {}
    for index, word in enumerate(argv):
        if word == "--mount":
            fields = dict(f.split("=", 1) for f in argv[index + 1].split(",") if "=" in f)
            found[fields["target"]] = fields["source"]
    return found


def test_an_instance_runs_in_its_image_with_one_kept_container(
    engine: FakeEngine, tmp_path: Path
) -> None:
    origin = make_repo(tmp_path / "repos" / "acme__calc", {"calc.py": "def add(a, b):\n    return a - b\n"})  # fmt: skip
    instance = Instance(
        instance_id="acme__calc-1", repo="acme/calc", problem_statement="add subtracts",
        base_commit=git(origin, "rev-parse", "HEAD").strip(), test_patch=TEST_PATCH,
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
    )  # fmt: skip
    calls = [
        {"name": "run_shell", "arguments": {"command": "cat calc.py"}},
        {"name": "write_file", "arguments": {"path": "calc.py", "content": FIXED}},
        {"name": "run_shell", "arguments": {"command": "grep -c + calc.py"}},
        {"name": "submit", "arguments": {"summary": "fixed"}},
    ]
    script = tmp_path / "agent.json"
    script.write_text(json.dumps({"rounds": {"1": calls}}))
    envs = EnvTable.model_validate({"env": [{"repo": "*", "image": "calc:{instance_id}"}]})
    out = tmp_path / "out"

    summary = run_bench(
        [instance],
        BenchOptions(out, f"scripted:{script}", repos=tmp_path / "repos", envs=envs,
                     max_iterations=1, workers=1),
    )  # fmt: skip

    assert (summary.resolved, summary.ended) == (1, 1)
    runs = engine.calls("run")
    kept = [run for run in runs if after(run, "--entrypoint") == "sleep"]
    assert len(kept) == 1  # one container for the instance's commands
    (start,) = kept
    assert start[-2:] == ["calc:acme__calc-1", "infinity"]
    worktree = Path(targets(start)["/testbed"])
    assert ".harness-worktrees" in worktree.parts  # the run's own worktree of the clone
    name = after(start, "--name")
    commands = [c[c.index(name) + 1 :] for c in engine.calls("exec") if "-i" in c]
    assert commands == [["/bin/sh", "-c", "cat calc.py"], ["/bin/sh", "-c", "grep -c + calc.py"]]
    gates = [run for run in runs if run is not start]
    assert gates  # the held-out gate: throw-away containers of the same image
    for run in gates:
        assert run[:3] == ["run", "--rm", "-i"]
        assert "calc:acme__calc-1" in run
        assert after(run, "-w") == "/testbed"
        assert targets(run)["/testbed"] != str(worktree)  # a clean copy, not the agent's tree
    assert after(gates[0], "--entrypoint") == "python3"  # the image's Python runs pytest
    assert engine.containers() == []  # the kept container ended with the run
    result = json.loads((out / "results.jsonl").read_text())
    assert result["resolved"] is True
    clone = out / "instances" / "acme__calc-1" / "repo"
    assert git(clone, "show", f"{result['branch']}:calc.py") == FIXED
