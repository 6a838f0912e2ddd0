"""The three shipped examples, run through the CLI as the README says, with their outcomes checked.

Each example runs on a copy in a temporary folder (laid out like the repository, so the
examples' ``../../skills`` paths resolve); one test runs the bug-fix example in place in this
checkout and checks that the checkout is left as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.research.citations import check_findings
from harness.workspace import cleanup
from harness.workspace.checkout import CHECKOUTS, parked_checkouts
from harness.workspace.parked import parked_worktrees
from tests.cli.test_cli import ROOT, harness
from tests.conftest import git, verdict_entry

pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "examples"
SCRATCH = shutil.ignore_patterns(".harness", "__pycache__", ".pytest_cache", ".ruff_cache")
# The example's commands as its gates run them: `python` is the harness's (as in its venv).
PYTHON_ENV = {
    **os.environ,
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
}
NEVER_SUCCEEDS = {"rounds": {"1": ["I could not finish the task."], "2": ["I gave up again."]}}


def copy_example(name: str, tmp_path: Path) -> Path:
    """``examples/<name>`` and the shipped skills, copied to ``tmp_path`` in the repository layout."""
    shutil.copytree(ROOT / "skills", tmp_path / "skills")
    target = tmp_path / "examples" / name
    shutil.copytree(EXAMPLES / name, target, ignore=SCRATCH)
    return target


def commit_copy(folder: Path) -> None:
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.email", "test@example.com")
    git(folder, "config", "user.name", "Test")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "example")


def read_events(folder: Path) -> list[dict[str, Any]]:
    """The events of the single run recorded under ``folder/.harness/runs``."""
    (log,) = (folder / ".harness" / "runs").glob("*/events.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["kind"] == kind]


def assert_passed_in_two_rounds(
    folder: Path,
    name: str,
    result: subprocess.CompletedProcess[str],
    checks: str = "every gate and the review",
) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    assert f"PASSED: round 2 passed {checks}" in result.stdout.splitlines()
    progress = Progress.load(folder / ".harness" / "progress" / f"{name}.md")
    assert progress.status is Status.PASSED
    assert progress.iteration == 2
    events = read_events(folder)
    (end,) = of_kind(events, "run_end")
    assert (end["stop_reason"], end["iterations"]) == ("PASSED", 2)
    assert [e["passed"] for e in of_kind(events, "round_end")] == [False, True]
    return events


def never_succeeding_run(folder: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "never-succeeds.json"
    script.write_text(json.dumps(NEVER_SUCCEEDS))
    model = f"scripted:{script}"
    return harness(
        "run", "--quiet", "--model", model, "--max-iterations", "2", str(folder), cwd=tmp_path
    )


def assert_escalated(folder: Path, name: str, result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 3, result.stderr
    report = folder / ".harness" / "progress" / f"{name}.escalation.md"
    text = report.read_text()
    assert "# Escalation: MAX_ITERATIONS" in text
    assert "### Round 2" in text
    assert Progress.load(folder / ".harness" / "progress" / f"{name}.md").status is Status.ESCALATED


# --- bugfix --------------------------------------------------------------------------------


def test_bugfix_passes_in_two_rounds_on_its_run_branch(tmp_path: Path) -> None:
    example = copy_example("bugfix", tmp_path)
    commit_copy(example)
    base = git(example, "rev-parse", "HEAD")

    result = harness("run", str(example), cwd=tmp_path)

    events = assert_passed_in_two_rounds(example, "bugfix", result)
    first, *second = of_kind(events, "gate_report")
    assert (first["round"], first["name"], first["passed"]) == (1, "pytest", False)
    assert "tests/test_dates.py::test_month_ends_on_its_last_day" in first["failures"]
    assert [(g["name"], g["passed"]) for g in second] == [("pytest", True), ("ruff", True)]
    assert [v["score"] for v in of_kind(events, "critic_verdict")] == [9.0]
    branch = of_kind(events, "run_start")[0]["branch"]
    assert result.stdout.splitlines()[1:] == [  # how to take the fix, after the verdict line
        f"the work is on branch {branch}: `git diff main...{branch}` shows it, `git merge "
        f"{branch}` takes it (`merge = true` in loop.toml merges a pass itself)"
    ]
    assert git(example, "rev-list", "--count", f"{base}..{branch}") == "2"  # a commit per round
    assert git(example, "diff", "--name-only", base, branch) == "project/invoicing/dates.py"
    assert "day <= self.end" in git(example, "show", f"{branch}:project/invoicing/dates.py")
    # The user's checkout is where it was; the fix lives only on the run branch.
    assert git(example, "rev-parse", "HEAD") == base
    assert git(example, "status", "--porcelain") == ""
    assert "day < self.end" in (example / "project" / "invoicing" / "dates.py").read_text()

    checkout = tmp_path / "branch-checkout"
    git(example, "worktree", "add", "--quiet", "--detach", str(checkout), branch)
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=checkout / "project",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tests.returncode == 0, tests.stdout
    assert "47 passed" in tests.stdout


def test_bugfix_escalates_when_the_model_never_fixes_it(tmp_path: Path) -> None:
    example = copy_example("bugfix", tmp_path)
    commit_copy(example)
    assert_escalated(example, "bugfix", never_succeeding_run(example, tmp_path))


def test_bugfix_fails_a_round_that_changes_the_tests_through_the_shell(tmp_path: Path) -> None:
    example = copy_example("bugfix", tmp_path)
    commit_copy(example)
    weaken = (
        "rm tests/test_statement.py && sed -i 's/31) in period/30) in period/' tests/test_dates.py"
    )
    round_1 = [{"name": "run_shell", "arguments": {"command": weaken}}, "Done.", verdict_entry(10)]
    script = tmp_path / "weakens-the-tests.json"
    script.write_text(json.dumps({"rounds": {"1": round_1}}))
    model = f"scripted:{script}"

    result = harness(
        "run", "--quiet", "--model", model, "--max-iterations", "1", str(example), cwd=tmp_path
    )

    assert result.returncode == 3, result.stderr
    (end,) = of_kind(read_events(example), "round_end")
    assert end["outcome"] == "failed: protected files changed"
    report = (example / ".harness" / "progress" / "bugfix.escalation.md").read_text()
    assert "Protected files changed: tests/test_dates.py, tests/test_statement.py" in report


def test_bugfix_runs_in_place_as_the_readme_says(tmp_path: Path) -> None:
    """`harness run examples/bugfix` from the repository root writes only the ignored .harness/.

    The checkout is compared before and after: no new file or folder at its top level (a
    worktree, a progress folder) and no change under examples/, ignored files included, but the
    example's own .harness/. The package's own files are left out of the comparison, so that
    edits made in the checkout while the test runs do not count against the run.
    """
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    state = EXAMPLES / "bugfix" / ".harness"
    saved = tmp_path / "saved-state"
    before = checkout_entries()
    branches_before = run_branches()
    parked_before = parked_folders()
    if state.exists():
        shutil.move(state, saved)
    try:
        result = harness("run", "examples/bugfix", cwd=ROOT)

        assert result.returncode == 0, result.stderr
        assert "PASSED: round 2 passed every gate and the review" in result.stdout
        assert checkout_entries() - before <= {"!! examples/bugfix/.harness/"}
        (branch,) = run_branches() - branches_before
        assert git(ROOT, "diff", "--name-only", f"{branch}~2", branch) == (
            "examples/bugfix/project/invoicing/dates.py"
        )
        assert f"refs/heads/{branch}" not in git(ROOT, "worktree", "list", "--porcelain")
    finally:
        for branch in run_branches() - branches_before:
            remove_worktree_of(branch)
            git(ROOT, "branch", "-D", branch)
        remove_parked(parked_before)  # what the passed run parked beside this checkout
        shutil.rmtree(state, ignore_errors=True)
        if saved.exists():
            shutil.move(saved, state)


def parked_folders() -> set[Path]:
    place = cleanup.place_of(ROOT)
    return {*parked_worktrees(place), *parked_checkouts(place / CHECKOUTS)}


def remove_parked(before: set[Path]) -> None:
    for folder in parked_folders() - before:
        if folder in parked_worktrees(cleanup.place_of(ROOT)):
            cleanup.remove_worktree(ROOT, folder)
        else:
            cleanup.remove_checkout(folder)


def checkout_entries() -> set[str]:
    """New files at the checkout's top level, and `git status` of examples/ with ignored files."""
    top = {line for line in porcelain() if line.startswith("??") and "/" not in line[3:-1]}
    return top | set(porcelain("--ignored", "--", "examples"))


def porcelain(*args: str) -> list[str]:
    status = ["git", "status", "--porcelain", *args]
    return subprocess.run(
        status, cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.splitlines()


def run_branches() -> set[str]:
    refs = git(ROOT, "for-each-ref", "--format=%(refname:short)", "refs/heads/harness/bugfix.*")
    return set(refs.split())


def remove_worktree_of(branch: str) -> None:
    for entry in git(ROOT, "worktree", "list", "--porcelain").split("\n\n"):
        lines = entry.splitlines()
        if f"branch refs/heads/{branch}" in lines:
            git(ROOT, "worktree", "remove", "--force", lines[0].removeprefix("worktree "))
    git(ROOT, "worktree", "prune")


# --- content -------------------------------------------------------------------------------


def test_content_draft_passes_every_check_after_one_critique(tmp_path: Path) -> None:
    example = copy_example("content", tmp_path)

    result = harness("run", str(example), cwd=tmp_path)

    events = assert_passed_in_two_rounds(example, "content", result)
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [  # the model is labelled; no budget or critic notes about a scripted one
        "note: the model is scripted (scripted:scripted-trajectory.json): its replies were "
        "written in advance and nothing is sent to a provider; --model NAME runs a real one"
    ]
    verdicts = of_kind(events, "critic_verdict")
    assert [(v["round"], v["score"], v["passed"]) for v in verdicts] == [
        (1, 6.0, False),
        (2, 9.0, True),
    ]
    assert verdicts[0]["fixes"]
    assert all(g["passed"] for g in of_kind(events, "gate_report"))
    draft = example / ".harness" / "work" / "draft.md"
    assert "most modern library in the county" not in draft.read_text()
    for gate in tomllib.loads((example / "loop.toml").read_text())["gates"]:
        check = subprocess.run(
            gate["cmd"], shell=True, cwd=example, capture_output=True, text=True, env=PYTHON_ENV
        )
        assert check.returncode == 0, check.stdout
    for shipped in ("brief.md", "facts.md", "loop.toml", "scripted-trajectory.json"):
        assert (example / shipped).read_bytes() == (EXAMPLES / "content" / shipped).read_bytes()


def test_content_escalates_without_a_draft(tmp_path: Path) -> None:
    example = copy_example("content", tmp_path)
    result = never_succeeding_run(example, tmp_path)
    assert_escalated(example, "content", result)
    assert (
        "cannot read .harness/work/draft.md"
        in (example / ".harness" / "progress" / "content.escalation.md").read_text()
    )


def test_content_critic_criteria_carry_the_whole_facts_file() -> None:
    config = tomllib.loads((EXAMPLES / "content" / "loop.toml").read_text())
    facts = (EXAMPLES / "content" / "facts.md").read_text()
    bullets = [line for line in facts.splitlines() if line.startswith("- ")]
    assert len(bullets) >= 10
    for line in bullets:
        assert line in config["critic"]["criteria"]


# --- research ------------------------------------------------------------------------------


def test_research_findings_cite_verified_quotes_after_the_gate_fails_once(tmp_path: Path) -> None:
    example = copy_example("research", tmp_path)

    result = harness("run", str(example), cwd=tmp_path)

    events = assert_passed_in_two_rounds(example, "research", result)
    gates = of_kind(events, "gate_report")
    assert [(g["round"], g["passed"]) for g in gates] == [(1, False), (2, True)]
    assert "quote not found in sources/03-harbour-log.md" in gates[0]["summary"]
    assert [v["score"] for v in of_kind(events, "critic_verdict")] == [9.0]
    findings = (example / ".harness" / "work" / "findings.md").read_text()
    report = check_findings(
        findings, example / "sources", min_sources=4, require_contradictions=True
    )
    assert report.passed, report.problems
    assert len(report.sources_verified) >= 4
    assert len(report.citations) >= 10


def test_research_escalates_when_findings_never_appear(tmp_path: Path) -> None:
    example = copy_example("research", tmp_path)
    assert_escalated(example, "research", never_succeeding_run(example, tmp_path))


def test_research_corpus_has_a_dozen_documents_that_disagree() -> None:
    sources = sorted((EXAMPLES / "research" / "sources").glob("*.md"))
    assert len(sources) >= 12
    text = {path.name: path.read_text() for path in sources}
    assert "erected in 1853" in text["04-county-gazetteer-1868.md"]
    assert "first shown on\nthe evening of 1 November 1851" in text["03-harbour-log.md"]


FORCE_PASS_PLUGIN = (
    "import pytest\\n\\n@pytest.hookimpl(hookwrapper=True)\\n"
    "def pytest_runtest_makereport(item, call):\\n"
    "    outcome = yield\\n    outcome.get_result().outcome = 'passed'\\n"
)
EXAMPLE_TRICKS = {
    "pytest.ini and a local plugin": (
        f'printf "{FORCE_PASS_PLUGIN}" > forcepass.py'
        " && printf '[pytest]\\naddopts = -p forcepass\\n' > pytest.ini"
    ),
    "conftest hidden by .gitignore": (
        f'printf "{FORCE_PASS_PLUGIN}" > tests/conftest.py && echo conftest.py >> .gitignore'
    ),
    "pytest.py shadows pytest": "printf 'import sys\\nsys.exit(0)\\n' > pytest.py",
    "every test xfailed from the code": (
        "printf '\\nimport pytest\\npytest.xfail(\"later\")\\n' >> invoicing/__init__.py"
    ),
}


@pytest.mark.parametrize("trick", EXAMPLE_TRICKS)
def test_bugfix_with_a_trick_applied_still_fails(tmp_path: Path, trick: str) -> None:
    example = copy_example("bugfix", tmp_path)
    commit_copy(example)
    call = {"name": "run_shell", "arguments": {"command": EXAMPLE_TRICKS[trick]}}
    round_1 = [call, "Done: every test passes.", verdict_entry(10, [])]
    script = tmp_path / "trick.json"
    script.write_text(json.dumps({"rounds": {"1": round_1}}))

    result = harness(
        "run", "--quiet", "--model", f"scripted:{script}", "--max-iterations", "1",
        str(example), cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 3, result.stderr
    (end,) = of_kind(read_events(example), "round_end")
    assert not end["passed"]
    assert end["outcome"] in ("failed: pytest", "failed: protected files changed")
