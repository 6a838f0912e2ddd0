"""What the Claude Code and Codex runners set up before a session, checked against the real
programs where they can answer without a model: Codex reads the harness's configuration and
its one-model catalog; each agent's answer is read from its own output; a missing program or a
version known not to work stops the run before round 1 with the install command."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from harness import ScriptedModel
from harness.core.errors import ConfigError
from harness.gateway.gateway import GatewayAddress
from harness.runners.claude_code import ClaudeCodeRunner, final_of_stream
from harness.runners.codex import CodexRunner, final_of_events
from tests.runners.installed import program

GATEWAY = GatewayAddress("http://127.0.0.1:48213", "harness-run-token", "test-model")


def test_codex_reads_the_harness_s_configuration_and_knows_only_the_run_s_model(
    tmp_path: Path,
) -> None:
    codex = program("codex", "codex")
    runner = CodexRunner(ScriptedModel([]), path=codex)
    home, workspace = tmp_path / "home", tmp_path / "work"
    workspace.mkdir()
    invocation = runner.invocation("fix it", GATEWAY, home, workspace)
    assert invocation.argv == [
        str(codex), "exec", "--json", "--skip-git-repo-check", "--ephemeral",
        "--cd", str(workspace), "-",
    ]  # fmt: skip
    assert invocation.stdin == "fix it"
    assert invocation.env == {
        "CODEX_HOME": str(home / "codex"), "HARNESS_GATEWAY_TOKEN": "harness-run-token",
    }  # fmt: skip
    for name, text in invocation.files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    config = tomllib.loads(invocation.files["codex/config.toml"])
    assert config["model_providers"]["harness"]["base_url"] == "http://127.0.0.1:48213/v1"
    assert config["model_providers"]["harness"]["env_key"] == "HARNESS_GATEWAY_TOKEN"
    assert (config["approval_policy"], config["sandbox_mode"]) == ("never", "danger-full-access")
    assert "harness-run-token" not in invocation.files["codex/config.toml"]
    # Codex itself, asked for the models it knows with this CODEX_HOME, names the run's alone,
    # with its apply_patch tool.
    listed = subprocess.run(
        [str(codex), "debug", "models"], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "CODEX_HOME": str(home / "codex")}, check=True,
    )  # fmt: skip
    models = json.loads(listed.stdout)["models"]
    assert [(m["slug"], m["apply_patch_tool_type"], m.get("tool_mode")) for m in models] == [
        ("test-model", "freeform", None)
    ]
    assert models[0]["supports_search_tool"] is False
    # Codex takes every field strictly, and warns of none (the gateway's port is closed here:
    # the session ends at its first request, refused, without a retry).
    strict = subprocess.run(
        [*invocation.argv[:2], "--strict-config", *invocation.argv[2:]], input="hello",
        capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", **invocation.env},
    )  # fmt: skip
    said = [json.loads(line) for line in strict.stdout.splitlines() if line.startswith("{")]
    errors = [e for e in said if e["type"] == "error" or e.get("item", {}).get("type") == "error"]
    assert [e["message"] for e in errors] == ["Connection failed: error sending request"]
    assert strict.returncode == 1
    entry = runner.bundled_entry()
    assert entry is not None
    assert entry["slug"] != "test-model"  # the shipped entry is copied, not changed


def test_each_agent_s_answer_is_read_from_its_own_output() -> None:
    events = [
        {"type": "system", "subtype": "init"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "looking"}]}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": " fixed it "}]}},
    ]
    cut = "\n".join(map(json.dumps, events))  # a session killed before its result
    result = {"type": "result", "subtype": "success", "result": "Fixed add().", "is_error": False}
    assert final_of_stream(cut + "\n" + json.dumps(result) + "\n") == "Fixed add()."
    assert final_of_stream(cut + "\nnot json\n[1]\n") == "fixed it"
    assert final_of_stream("") == ""
    items = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "command_execution", "text": "no"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Fixed add().\n"}},
        {"type": "turn.completed", "usage": {}},
    ]
    assert final_of_events("\n".join(map(json.dumps, items))) == "Fixed add()."
    assert final_of_events("[1]\n{}\nnot json\n") == ""


@pytest.mark.parametrize(
    ("runner", "version", "problem"),
    [
        (ClaudeCodeRunner, "2.1.332 (Claude Code)", None),
        (ClaudeCodeRunner, "2.0.64 (Claude Code)", None),
        (ClaudeCodeRunner, "2.0.63 (Claude Code)", "Claude Code 2.0.63 is known not to work "
                                                   "(it has no --tools option)"),
        (ClaudeCodeRunner, "1.0.100 (Claude Code)", "Claude Code 1.0.100 is known not to work"),
        (ClaudeCodeRunner, "hello", "its --version said 'hello', not a Claude Code version"),
        (CodexRunner, "codex-cli 0.171.0", None),
        (CodexRunner, "codex-cli 0.122.0", None),
        (CodexRunner, "codex-cli 0.121.9", "Codex 0.121.9 is known not to work (it takes no "
                                           "model catalog"),
        (CodexRunner, "codex-cli 0.1.2505172129", "Codex 0.1.2505172129 is known not to work"),
    ],
)  # fmt: skip
def test_versions_known_not_to_work_stop_the_run_before_it_starts(
    runner: type[ClaudeCodeRunner | CodexRunner], version: str, problem: str | None,
    tmp_path: Path,
) -> None:  # fmt: skip
    reporter = tmp_path / runner.executable  # a program that reports only its version
    reporter.write_text(f"#!/bin/sh\necho '{version}'\n")
    reporter.chmod(0o755)
    if problem is None:
        assert runner(ScriptedModel([]), path=reporter).program == str(reporter)
        return
    with pytest.raises(ConfigError) as caught:
        runner(ScriptedModel([]), path=reporter)
    said = str(caught.value)
    assert said.startswith(f"agent.runner: {runner.name}: {problem}")
    assert said.endswith(f"install a working one with: {runner.install}")


@pytest.mark.parametrize(
    ("runner", "install"),
    [
        (ClaudeCodeRunner, "npm install --prefix /opt/harness-agents/claude-code "
                           "@anthropic-ai/claude-code@2.1.332"),
        (CodexRunner, "npm install --prefix /opt/harness-agents/codex @openai/codex@0.171.0"),
    ],
)  # fmt: skip
def test_an_agent_not_installed_is_named_with_its_install_command(
    runner: type[ClaudeCodeRunner | CodexRunner],
    install: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        runner(ScriptedModel([]))
    assert f"install it with: {install}" in str(caught.value)
    assert f"needs {runner.executable!r}, which is not on PATH" in str(caught.value)
