"""The harness's resolved verdict agrees with the official ``swebench`` grader on every instance.

For each instance of the dataset, with the reference patch (gold) and without one (empty), the
same checkout is judged twice: by the held-out pytest gate ``harness bench swebench`` decides
with (the test patch's files laid over a copy, the ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` tests
run), and by the official grader reading a test log in the format its evaluation script writes
(``pytest -rA`` on the test files between its start and end markers, the exit code after),
parsed by its own pytest log parser and graded by its own rule. No docker: only the log grading
is used.

The official parser reads a test id up to the first space (``line.split()``), and the
published files hold the ids it produced, cut there (``test_x[$A$`` for ``test_x[$A$ foo]``);
its grader matches such a cut id among the ids it parsed, cut the same way, or by prefix. The
dataset holds its ids so (the sqlparse instance has fourteen tests with spaces, eight cut ids,
one standing for five tests), and both judges are given exactly those ids, cut again at the
first space should an id be whole: the harness resolves them against its own collection.

Slow (twenty real pytest runs of each kind, some with hundreds of test ids): marked ``slow``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sandbox import Sandbox
from harness.scale.swebench import apply_in_scratch, clone
from harness.scale.swebench_instance import Instance, load_instances
from harness.verify.held_out import HeldOutGate, lay_over
from harness.verify.pytest_gate import PytestGate
from harness.workspace.git_cmd import git
from tests.realworld.test_swebench import INSTANCES, repos  # noqa: F401 - the fixture

grading = pytest.importorskip(
    "swebench.harness.grading", reason="the grading extra: pip install -e '.[grading]'"
)
constants = pytest.importorskip("swebench.harness.constants")
swebench_types = pytest.importorskip("swebench.types")

pytestmark = pytest.mark.slow
BY_ID = {instance.instance_id: instance for instance in load_instances(INSTANCES)}


def checkout(instance: Instance, mirrors: Path, folder: Path, *, gold: bool) -> Path:
    """The instance's repository at ``base_commit``, with the reference patch when ``gold``."""
    repo = folder / "repo"
    clone(instance, mirrors, repo)
    if gold:
        git(repo, "apply", "--whitespace=nowarn", "-", stdin=instance.patch)
    return repo


def held_out(instance: Instance, repo: Path, folder: Path) -> Path:
    """The files the test patch writes, as the benchmark lays them out."""
    files = folder / "held_out"
    files.mkdir()
    for path, content in apply_in_scratch(repo, instance.base_commit, instance.test_patch).items():
        if content is not None:
            (files / path).parent.mkdir(parents=True, exist_ok=True)
            (files / path).write_bytes(content)
    return files


def official_log(instance: Instance, repo: Path, files: Path, folder: Path) -> Path:
    """The test log the official evaluation script writes: ``pytest -rA`` on the test files, with
    the test patch applied, between its markers, and the exit code."""
    tree = folder / "evaluated"
    shutil.copytree(repo, tree, ignore=shutil.ignore_patterns(".git"))
    lay_over(files, tree)
    paths = sorted({test.partition("::")[0] for test in instance.tests})
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *paths],
        cwd=tree, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    log = folder / "test_output.txt"
    log.write_text(
        f"{constants.START_TEST_OUTPUT}\n{ran.stdout}{ran.stderr}\n{constants.END_TEST_OUTPUT}\n"
        f"{constants.TEST_EXIT_CODE}: {ran.returncode}\n"
    )
    return log


def published(ids: list[str]) -> list[str]:
    """Test ids as the published files hold them: cut at the first space."""
    return [test.split(maxsplit=1)[0] for test in ids]


def official_verdict(instance: Instance, log: Path) -> str:
    fail_to_pass, pass_to_pass = published(instance.FAIL_TO_PASS), published(instance.PASS_TO_PASS)
    spec = swebench_types.TestSpec(
        instance_id=instance.instance_id, image="", eval_script_list=[], repo=instance.repo,
        version=instance.version, FAIL_TO_PASS=fail_to_pass, PASS_TO_PASS=pass_to_pass,
        log_parser="parse_log_pytest",
    )  # fmt: skip
    status_map, valid = grading.get_logs_eval(spec, str(log))
    assert valid, log.read_text()[-2000:]
    expected = {constants.FAIL_TO_PASS: fail_to_pass, constants.PASS_TO_PASS: pass_to_pass}
    report = grading.get_eval_tests_report(status_map, expected)
    return str(grading.get_resolution_status(report))


@pytest.mark.parametrize("oracle", ["gold", "empty"])
@pytest.mark.parametrize("instance_id", list(BY_ID))
def test_the_harness_and_the_official_grader_agree(
    repos: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
    instance_id: str,
    oracle: str,
) -> None:
    instance = BY_ID[instance_id]
    repo = checkout(instance, repos, tmp_path, gold=oracle == "gold")
    files = held_out(instance, repo, tmp_path)
    tests = " ".join(shlex.quote(test) for test in published(instance.tests))

    harness_resolved = (
        HeldOutGate(PytestGate(tests, sandbox=Sandbox("none")), files).check(repo).passed
    )
    official = official_verdict(instance, official_log(instance, repo, files, tmp_path))

    full = constants.ResolvedStatus.FULL.value
    assert (harness_resolved, official == full) == (oracle == "gold", oracle == "gold"), official
