"""The examples run from a clone installed as the README says, in a home folder under ``/tmp``.

The sandbox hides the home folder and ``/tmp``; an editable install (``pip install -e .``)
loads ``harness`` through a finder that maps it to the clone, which no ``sys.path`` entry
names. The gates run ``harness check ...`` inside the sandbox, so the clone's
package must be mounted back. No ``PYTHONPATH`` is set: the commands run as a user's do.

The virtual environment is made offline: a fresh one without pip, whose dependencies come from
the running environment through a path file, into which pip installs the clone with ``-e``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.cli.test_cli import ROOT
from tests.conftest import PLAIN_CHILD_PYTEST, git

pytestmark = pytest.mark.slow


def _tracked_files() -> list[str]:
    listed = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"]
    out = subprocess.run(listed, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [name for name in out.split("\0") if name and os.path.lexists(ROOT / name)]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home folder holding ``harness/``: this checkout's files, committed, installed with -e."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    home = tmp_path_factory.mktemp("home")
    clone = home / "harness"
    for name in _tracked_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name, follow_symlinks=False)  # skills/ is a link
    git(clone, "init", "-q", "-b", "main")
    git(clone, "config", "user.email", "test@example.com")
    git(clone, "config", "user.name", "Test")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "clone")
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", "."]
    subprocess.run(install, cwd=clone, check=True, capture_output=True, timeout=300)
    return home


def user_env(home: Path) -> dict[str, str]:
    """The clone's virtual environment active, ``HOME`` the temporary one, no ``PYTHONPATH``,
    pytest's plugins loaded as in a user's shell.

    Active as ``activate`` makes it: its ``bin`` first on ``PATH`` and ``VIRTUAL_ENV`` naming it
    (not the environment the tests run in, which the harness would take for the project's).
    """
    unset = {"PYTHONPATH", "HARNESS_MODEL", *PLAIN_CHILD_PYTEST}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    tools = os.path.dirname(sys.executable)  # ruff, which the examples' extra would install
    venv = home / "harness" / ".venv"
    env["PATH"] = os.pathsep.join([str(venv / "bin"), tools, env["PATH"]])
    env["VIRTUAL_ENV"] = str(venv)
    env["HOME"] = str(home)
    return env


def test_the_clone_s_own_package_is_the_one_imported(home: Path) -> None:
    where = subprocess.run(
        ["python", "-P", "-c", "import harness; print(harness.__file__)"],
        cwd=home, env=user_env(home), check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert where.stdout.strip() == str(home / "harness" / "harness" / "__init__.py")


# The doc-command tests that read what each example's folder holds (by a word of their ids).
DOC_TESTS_OF = {"content": "content", "research": "citations", "bugfix": "bugfix"}


@pytest.mark.parametrize("example", ["content", "research", "bugfix"])
def test_an_example_passes_from_a_clone_in_the_home_folder(home: Path, example: str) -> None:
    """The example passes, and then the README's test command's doc-command tests of that
    example pass in the same clone: they copy the example's folder without the run it holds."""
    clone = home / "harness"
    result = subprocess.run(
        ["harness", "run", "--quiet", f"examples/{example}"],
        cwd=clone, env=user_env(home), capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED: round 2 passed every gate and the review" in result.stdout
    progress = (
        clone / "examples" / example / ".harness" / "progress" / f"{example}.md"
    ).read_text()
    assert "No module named" not in progress
    assert "not found" not in progress

    docs = subprocess.run(
        [
            "python", "-m", "pytest", "tests/test_docs_commands.py", "-q", "-n", "0",
            "-p", "no:cacheprovider", "--basetemp", str(home / f"docs-{example}"),
            "-k", f"runs_as_written and {DOC_TESTS_OF[example]}",
        ],
        cwd=clone, env=user_env(home), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert docs.returncode == 0, docs.stdout + docs.stderr
    assert " passed" in docs.stdout.splitlines()[-1]
    assert "failed" not in docs.stdout.splitlines()[-1]
