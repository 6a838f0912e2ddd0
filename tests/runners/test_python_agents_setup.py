"""The aider and mini-swe-agent runners' set-up, without running the agents: what each is started
with, how its answer is read from what it leaves in its home, and which programs are refused
before round 1 (a version known not to work, none installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import ScriptedModel
from harness.core.errors import ConfigError
from harness.gateway import GatewayAddress
from harness.runners import mini_swe_agent, runner_class
from harness.runners.aider import AiderRunner
from harness.runners.mini_swe_agent import MiniSweAgentRunner

GATEWAY = GatewayAddress(base_url="http://127.0.0.1:48213", token="harness-t0ken", model="m-1")


MINI_OWN = "env/lib/python3.12/site-packages/minisweagent/config/mini.yaml"
"""Where an environment holding mini-swe-agent holds its own configuration."""


def reporter(folder: Path, name: str, says: str) -> Path:
    """A program that answers any question with ``says`` (a version, a banner), in the ``bin``
    of an environment that holds mini's own configuration too."""
    program = folder / "env" / "bin" / name
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(f"#!/bin/sh\necho '{says}'\n")
    program.chmod(0o755)
    (folder / MINI_OWN).parent.mkdir(parents=True, exist_ok=True)
    (folder / MINI_OWN).write_text("agent: {}\n")
    return program


def test_the_names_in_loop_toml_are_these_runners() -> None:
    assert runner_class("aider") is AiderRunner
    assert runner_class("mini-swe-agent") is MiniSweAgentRunner


def test_aider_is_started_offline_but_for_the_gateway(tmp_path: Path) -> None:
    model = ScriptedModel([], context_window=50_000)
    runner = AiderRunner(model, path=reporter(tmp_path, "aider", "aider 0.86.2"))
    home = tmp_path / "home"
    started = runner.invocation("fix it\n", GATEWAY, home, tmp_path)
    argv = started.argv
    assert argv[0] == str(tmp_path / "env" / "bin" / "aider")
    named = argv[argv.index("--model") + 1]
    assert named == "openai/m-1"
    for offline in ("--no-check-update", "--no-show-release-notes", "--analytics-disable",
                    "--no-detect-urls", "--no-auto-commits", "--yes-always"):  # fmt: skip
        assert offline in argv
    # the metadata file names the model aider is given: else aider downloads a price table
    metadata = Path(argv[argv.index("--model-metadata-file") + 1])
    assert metadata.parent == home
    told = json.loads(started.files[metadata.name])
    assert list(told) == [named]
    assert told[named]["max_input_tokens"] == 50_000  # the loop's model's window
    # read after the repository's model settings: every request goes to the gateway
    settings = Path(argv[argv.index("--model-settings-file") + 1])
    gateway = {"api_base": "http://127.0.0.1:48213/v1", "base_url": "http://127.0.0.1:48213/v1"}
    assert settings.parent == home
    assert json.loads(started.files[settings.name]) == [
        {"name": "aider/extra_params", "extra_params": gateway}
    ]
    task = Path(argv[argv.index("--message-file") + 1])
    assert started.files[task.relative_to(home).as_posix()] == "fix it\n"
    for history in ("--chat-history-file", "--input-history-file"):
        assert Path(argv[argv.index(history) + 1]).parent == home  # not in the worktree
    assert started.env == {
        "OPENAI_API_BASE": "http://127.0.0.1:48213/v1",
        "OPENAI_API_KEY": "harness-t0ken",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm downloads no price table
        "TERM": "dumb",
    }
    assert started.files[".gitconfig"] == "[user]\n\tname = aider\n\temail = aider@localhost\n"
    assert started.stdin is None


def test_mini_is_started_unattended_with_its_task_in_a_configuration_file(tmp_path: Path) -> None:
    runner = MiniSweAgentRunner(ScriptedModel([]), path=reporter(tmp_path, "mini", "usage"))
    home = tmp_path / "home"
    task = 'Fix "it": a\\b\n\ttab ☃ {{task}} --- # x'
    started = runner.invocation(task, GATEWAY, home, tmp_path)
    argv = started.argv
    assert argv[1:9] == [
        "--model", "openai/m-1", "--yolo", "--exit-immediately", "--cost-limit", "0",
        "--output", str(home / "mini.trajectory.json"),
    ]  # fmt: skip
    own = str(tmp_path / MINI_OWN)  # by its path: not a mini.yaml of the worktree
    assert argv[9:] == ["--config", own, "--config", str(home / "mini.harness.yaml")]
    config = json.loads(started.files["mini.harness.yaml"])  # JSON, read by mini as YAML
    assert config == {
        "run": {"task": task},
        "model": {
            "model_kwargs": {"api_base": "http://127.0.0.1:48213/v1"},
            "cost_tracking": "ignore_errors",
        },
    }
    assert started.env["OPENAI_API_KEY"] == "harness-t0ken"
    assert started.env["MSWEA_CONFIGURED"] == "true"  # no first-run wizard
    assert started.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert started.env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] == "1"
    assert started.env["MSWEA_GLOBAL_CONFIG_DIR"] == str(home / ".config/mini-swe-agent")


CHAT_HISTORY = """\

# aider chat started at 2026-12-04 21:00:00

> Aider v0.86.2
> Model: openai/m-1 with diff edit format

#### # Goal
#### make the tests pass

Refusing the dash.

itsdangerous.py
```python
<<<<<<< SEARCH
        self.sep = sep
=======
        self.sep = want_bytes(sep)
>>>>>>> REPLACE
```

> Tokens: 2.5k sent, 60 received.
> Applied edit to itsdangerous.py
> Fix lint errors in itsdangerous.py? (Y)es/(N)o [Yes]: y

Those lint errors were there before.

> Tokens: 2.6k sent, 9 received.
"""


def test_aider_s_answer_is_its_last_reply_without_its_notes(tmp_path: Path) -> None:
    runner = AiderRunner(ScriptedModel([]), path=reporter(tmp_path, "aider", "aider 0.86.2"))
    (tmp_path / "aider.chat.history.md").write_text(CHAT_HISTORY)
    assert runner.final_message("anything", tmp_path) == "Those lint errors were there before."
    (tmp_path / "aider.chat.history.md").write_text(CHAT_HISTORY.rsplit("Those", 1)[0])
    answer = runner.final_message("anything", tmp_path)
    assert answer.startswith("Refusing the dash.\n\nitsdangerous.py\n```python\n<<<<<<< SEARCH")
    assert answer.endswith(">>>>>>> REPLACE\n```")  # a line starting with ">" is not a note
    (tmp_path / "aider.chat.history.md").unlink()
    assert runner.final_message(" what it printed \n", tmp_path) == "what it printed"


def test_mini_s_answer_is_what_it_submitted_else_its_last_reply(tmp_path: Path) -> None:
    runner = MiniSweAgentRunner(ScriptedModel([]), path=reporter(tmp_path, "mini", "usage"))
    messages = [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "assistant", "content": "Looking.", "extra": {"actions": []}},
        {"role": "tool", "content": "<output/>"},
        {"role": "assistant", "content": "Done: refused the dash.", "tool_calls": []},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
    ]
    trajectory = tmp_path / "mini.trajectory.json"
    info = {"exit_status": "Submitted", "submission": "the dash is refused\n", "mini_version": "2"}
    trajectory.write_text(json.dumps({"info": info, "messages": messages}))
    assert runner.final_message("stdout", tmp_path) == "the dash is refused"
    trajectory.write_text(json.dumps({"info": {**info, "submission": ""}, "messages": messages}))
    assert runner.final_message("stdout", tmp_path) == "Done: refused the dash."
    trajectory.write_text("{not json")
    assert runner.final_message(" stdout \n", tmp_path) == "stdout"


@pytest.mark.parametrize(
    ("runner", "says", "name", "planted"),
    [
        (AiderRunner, "aider 0.86.2", "aider.chat.history.md",
         "#### task\nthe host's secret file\n"),
        (MiniSweAgentRunner, "usage", "mini.trajectory.json",
         json.dumps({"info": {"submission": "the host's secret file"}, "messages": []})),
    ],
)  # fmt: skip
def test_an_answer_file_the_agent_made_a_link_is_not_followed(
    runner: type[AiderRunner | MiniSweAgentRunner], says: str, name: str, planted: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The agent writes its home: a link there names a file of the agent's choosing."""
    program = reporter(tmp_path, runner.executable, says)
    session = runner(ScriptedModel([]), path=program)
    outside = tmp_path / "outside.txt"  # a file of the host's, out of the sandbox's sight
    outside.write_text(planted)
    home = tmp_path / "home"
    home.mkdir()
    (home / name).symlink_to(outside)
    assert session.final_message(" what it printed \n", home) == "what it printed"
    (home / name).unlink()
    (home / name).write_text(planted)  # the same text, written there: read
    assert session.final_message(" what it printed \n", home) == "the host's secret file"


@pytest.mark.parametrize(
    ("runner", "says", "problem"),
    [
        (AiderRunner, "aider 0.86.2", None),
        (AiderRunner, "aider 0.90.0", None),
        (AiderRunner, "hello", "`--version` said 'hello', which is not aider's answer"),
        (MiniSweAgentRunner, "This is mini-swe-agent version 2.4.6.", None),
        (MiniSweAgentRunner, "usage: mini [OPTIONS]", None),  # its banner silenced
        (MiniSweAgentRunner, "This is mini-swe-agent version 1.17.3.",
         "mini-swe-agent 1.x is known not to work"),
    ],
)  # fmt: skip
def test_versions_known_not_to_work_stop_the_run_before_it_starts(
    runner: type[AiderRunner | MiniSweAgentRunner], says: str, problem: str | None,
    tmp_path: Path,
) -> None:  # fmt: skip
    program = reporter(tmp_path, runner.executable, says)
    if problem is None:
        assert runner(ScriptedModel([]), path=program).program == str(program)
        return
    with pytest.raises(ConfigError) as caught:
        runner(ScriptedModel([]), path=program)
    said = str(caught.value)
    assert said.startswith(f"agent.runner: {runner.name}: {problem}")
    assert said.endswith(f"install a working one with: {runner.install}")


@pytest.mark.parametrize(
    ("runner", "install"),
    [
        (AiderRunner, "python3 -m venv /opt/harness-agents/aider && "
                      "/opt/harness-agents/aider/bin/pip install aider-chat==0.86.2"),
        (MiniSweAgentRunner, "python3 -m venv /opt/harness-agents/mini-swe-agent && "
                             "/opt/harness-agents/mini-swe-agent/bin/pip install "
                             "mini-swe-agent==2.4.6"),
    ],
)  # fmt: skip
def test_an_agent_not_installed_is_named_with_its_install_command(
    runner: type[AiderRunner | MiniSweAgentRunner], install: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        runner(ScriptedModel([]))
    assert f"install it with: {install}" in str(caught.value)
    assert f"needs {runner.executable!r}, which is not on PATH" in str(caught.value)


def test_minis_own_configuration_is_taken_from_its_newest_python(tmp_path: Path) -> None:
    program = reporter(tmp_path, "mini", "usage")  # its mini.yaml under python3.12
    for older in ("python3.8", "python3.9"):  # by name, each would come after python3.12
        own = tmp_path / MINI_OWN.replace("python3.12", older)
        own.parent.mkdir(parents=True)
        own.write_text("agent: {}\n")
    assert mini_swe_agent.own_config(str(program)) == tmp_path / MINI_OWN


def test_a_mini_without_its_own_configuration_beside_it_is_refused(tmp_path: Path) -> None:
    program = reporter(tmp_path, "mini", "usage")
    (tmp_path / MINI_OWN).unlink()
    with pytest.raises(ConfigError) as caught:
        MiniSweAgentRunner(ScriptedModel([]), path=program)
    assert str(caught.value).startswith(
        f"agent.path: mini-swe-agent's own mini.yaml is not where it installs it beside {program}"
    )
