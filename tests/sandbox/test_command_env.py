"""The environment a sandboxed command gets: an allow-list, whatever the harness's own holds."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.sandbox import Sandbox
from harness.sandbox.command_env import ALLOWED_NAMES, allowed_env, safe_env, with_python_first

BIN = str(Path(sys.executable).parent)
HARNESS_ENV = {
    "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "xterm", "TZ": "UTC",
    "LC_ALL": "C", "LC_CTYPE": "en_GB.UTF-8", "HOME": "/root",
    "OPENAI_API_KEY": "sk-live", "DATABASE_URL": "postgres://u:p@db/x", "AWS_PROFILE": "prod",
    "XLC_FAKE": "x", "PYTHONPATH": "/src", "lang": "lower",
}  # fmt: skip


def test_only_the_allowed_names_and_lc_variables_reach_a_sandboxed_command() -> None:
    env = allowed_env(home="/sandbox/home", base=HARNESS_ENV)
    assert env == {
        "PATH": f"{BIN}{os.pathsep}/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "xterm",
        "TZ": "UTC", "LC_ALL": "C", "LC_CTYPE": "en_GB.UTF-8", "HOME": "/sandbox/home",
        "PYTHONDONTWRITEBYTECODE": "1",
    }  # fmt: skip
    assert ALLOWED_NAMES == ("PATH", "LANG", "TERM", "TZ")


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_python_in_a_sandboxed_command_writes_no_byte_code(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "bwrap":
        request.getfixturevalue("bwrap_ok")
    (tmp_path / "calc.py").write_text("ANSWER = 42\n")
    result = Sandbox(backend).run(  # type: ignore[arg-type]
        [sys.executable, "-c", "import calc; print(calc.ANSWER)"], cwd=tmp_path, timeout=60
    )
    assert (result.exit_code, result.output.strip()) == (0, "42")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calc.py"]  # no __pycache__/


def test_names_asked_for_and_values_set_on_purpose_are_added_home_is_the_sandboxs() -> None:
    env = allowed_env(
        home="/h", names=["AWS_PROFILE", "NOT_SET"], extra={"HOME": "/other", "CI": "1"},
        base=HARNESS_ENV,
    )  # fmt: skip
    assert env["AWS_PROFILE"] == "prod"
    assert "NOT_SET" not in env
    assert (env["CI"], env["HOME"]) == ("1", "/other")  # extra is applied last, on purpose
    assert "OPENAI_API_KEY" not in env
    assert "DATABASE_URL" not in env


def test_without_a_base_the_harness_own_environment_is_filtered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    monkeypatch.setenv("HARNESS_TEST_SECRET_TOKEN", "t0ken")
    monkeypatch.setenv("HARNESS_TEST_PLAIN", "plain")
    env = allowed_env(home="/h")
    assert env["TZ"] == "Europe/Paris"
    assert "HARNESS_TEST_PLAIN" not in env
    assert "HARNESS_TEST_SECRET_TOKEN" not in env
    denied = safe_env()
    assert denied["HARNESS_TEST_PLAIN"] == "plain"
    assert "HARNESS_TEST_SECRET_TOKEN" not in denied


def test_the_deny_list_drops_secret_names_and_keeps_the_rest() -> None:
    env = safe_env(HARNESS_ENV, {"GITHUB_TOKEN": "set-on-purpose", "EXTRA": "1"})
    assert "OPENAI_API_KEY" not in env
    assert (env["DATABASE_URL"], env["HOME"], env["EXTRA"]) == ("postgres://u:p@db/x", "/root", "1")
    assert env["GITHUB_TOKEN"] == "set-on-purpose"  # extra is the caller's own choice
    assert env["PATH"] == f"{BIN}{os.pathsep}/usr/bin:/bin"


def test_the_running_python_comes_first_on_path_once() -> None:
    assert with_python_first({"PATH": "/bin"}) == {"PATH": f"{BIN}{os.pathsep}/bin"}
    already = {"PATH": f"{BIN}{os.pathsep}/bin"}
    assert with_python_first(dict(already)) == already
    later = {"PATH": f"/bin{os.pathsep}{BIN}"}
    assert with_python_first(later)["PATH"] == f"{BIN}{os.pathsep}/bin{os.pathsep}{BIN}"
    assert with_python_first({"PATH": ""}) == {"PATH": BIN}
    assert with_python_first({}) == {"PATH": f"{BIN}{os.pathsep}{os.defpath}"}


def test_a_project_environment_comes_first_and_the_running_python_second() -> None:
    project = "/work/project/.venv/bin"
    env = with_python_first({"PATH": "/bin"}, project)
    assert env["PATH"] == os.pathsep.join([project, BIN, "/bin"])
    assert (
        allowed_env(home="/h", base={"PATH": "/bin"}, first_on_path=project)["PATH"]
        == (env["PATH"])
    )


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_the_names_harness_sandbox_env_lists_reach_a_command_and_no_others(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "bwrap":
        request.getfixturevalue("bwrap_ok")
    monkeypatch.setenv("HARNESS_SANDBOX_ENV", " CI_PROXY,PIP_INDEX_URL  LISTED_UNSET,")
    monkeypatch.setenv("CI_PROXY", "http://proxy:3128")
    monkeypatch.setenv("PIP_INDEX_URL", "http://index/simple")
    monkeypatch.setenv("NOT_LISTED", "kept out")
    monkeypatch.delenv("LISTED_UNSET", raising=False)
    sandbox = Sandbox(backend, env=["PIP_INDEX_URL"])  # type: ignore[arg-type]
    assert sandbox.env_names == ("PIP_INDEX_URL", "CI_PROXY", "LISTED_UNSET")
    result = sandbox.run("env", cwd=tmp_path, timeout=60)
    passed = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    assert (passed["CI_PROXY"], passed["PIP_INDEX_URL"]) == (
        "http://proxy:3128",
        "http://index/simple",
    )
    assert "NOT_LISTED" not in passed
    assert "LISTED_UNSET" not in passed
    assert "HARNESS_SANDBOX_ENV" not in passed  # the list itself is not passed on


def test_without_harness_sandbox_env_only_the_loop_s_names_are_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARNESS_SANDBOX_ENV", raising=False)
    assert Sandbox("none", env=["CI"]).env_names == ("CI",)
    monkeypatch.setenv("HARNESS_SANDBOX_ENV", " , ")
    assert Sandbox("none").env_names == ()


@pytest.mark.parametrize("word", ["1ST", "A-B", "PATH=/x", "$HOME"])
def test_a_word_in_harness_sandbox_env_that_is_no_variable_name_is_refused(
    monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    monkeypatch.setenv("HARNESS_SANDBOX_ENV", f"CI,{word}")
    with pytest.raises(ConfigError) as refused:
        Sandbox("none")
    assert str(refused.value) == f"HARNESS_SANDBOX_ENV: {word!r} is not the name of a variable"
