"""A push's token reaches git through the environment, for an http(s) remote only, after any
GIT_CONFIG_* entries already set."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from harness.connect.git_publish import _token_env
from harness.workspace.git_cmd import run_git
from tests.conftest import git, make_repo


def test_a_token_travels_as_a_header_in_the_environment_for_an_http_remote_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    git(repo, "remote", "add", "origin", "https://host.example/acme/widgets.git")
    git(repo, "remote", "add", "local", str(tmp_path / "bare.git"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # the user's own entry stays in force
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.abbrev")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "12")

    env = _token_env(repo, "origin", "tok-123")

    header = "Authorization: Basic " + base64.b64encode(b"x-access-token:tok-123").decode()
    assert env == {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_1": "http.extraHeader",
        "GIT_CONFIG_VALUE_1": header,
    }
    assert run_git(repo, ("config", "--get", "http.extraHeader"), env).stdout.strip() == header
    assert run_git(repo, ("config", "--get", "core.abbrev"), env).stdout.strip() == "12"
    assert _token_env(repo, "local", "tok-123") == {}
    assert _token_env(repo, "origin", None) == {}
