"""The loop's command hooks (``on_round``, ``on_escalate``) run inside the sandbox."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.assemble.build import build_loop, build_sandbox
from harness.core.errors import ConfigError
from harness.core.sink import NULL_SINK
from harness.spec import LoopSpec
from tests.cli.test_cli import harness, write_loop
from tests.conftest import make_repo
from tests.sandbox.conftest import bwrap_ok  # noqa: F401 - the fixture

CANARY = "canary-7d2e-hook-secret"

HOOK = """\
kind=$1
{
  echo "canary=${HARNESS_CANARY:-absent}"
  echo "token=${HOOK_TOKEN:-absent}"
  echo "report=${HARNESS_ROUND_REPORT:+given}${HARNESS_ESCALATION_REPORT:+given}"
  if grep -qs CANARY_VALUE /proc/*/environ; then echo environ=leaked; else echo environ=absent; fi
  if cat OUTSIDE > /dev/null 2>&1; then echo outside=visible; else echo outside=hidden; fi
  echo escaped >> OUTSIDE 2>/dev/null
  if (echo x >> GIT_CONFIG) 2>/dev/null; then echo git=written; else echo git=refused; fi
} > "FOLDER/hook-$kind.txt"
"""

LOOP = """\
name = "hooked"
goal = "out.txt says yes"
isolation = "none"
model = "scripted:author.json"
max_iterations = 1
on_round = "sh {hook} round"
on_escalate = "sh {hook} escalate"

[critic]
enabled = false

[[gates]]
type = "command"
name = "says yes"
cmd = "grep -q yes out.txt"

[sandbox]
backend = "{backend}"

[hooks]
env = ["HOOK_TOKEN"]
"""


def run_hooks(tmp_path: Path, backend: str) -> tuple[dict[str, dict[str, str]], Path, Path]:
    """A loop that fails once (so both hooks run), started with a canary in its environment."""
    project = make_repo(tmp_path / "project", {"README.md": "x\n"})
    outside = tmp_path / "outside.txt"
    outside.write_text("original")
    hook = project / "hook.sh"
    hook.write_text(
        HOOK.replace("CANARY_VALUE", CANARY)
        .replace("OUTSIDE", str(outside))
        .replace("GIT_CONFIG", str(project / ".git" / "config"))
        .replace("FOLDER", str(project))
    )
    write = {"name": "write_file", "arguments": {"path": "out.txt", "content": "no"}}
    (project / "author.json").write_text(json.dumps([write, "done"]))
    write_loop(project, LOOP.format(hook=hook, backend=backend))
    env = {"HARNESS_CANARY": CANARY, "HOOK_TOKEN": "given-to-hooks"}
    run = harness("run", "--quiet", cwd=project, env=env)
    assert run.returncode == 3, run.stderr  # escalated: the gate failed
    found = {}
    for kind in ("round", "escalate"):
        lines = (project / f"hook-{kind}.txt").read_text().splitlines()
        found[kind] = dict(line.split("=", 1) for line in lines)
    return found, project, outside


@pytest.mark.usefixtures("bwrap_ok")
def test_hooks_under_bwrap_get_only_their_environment_and_the_loops_folder(
    tmp_path: Path,
) -> None:
    found, project, outside = run_hooks(tmp_path, "bwrap")
    for kind in ("round", "escalate"):
        assert found[kind] == {
            "canary": "absent",
            "token": "given-to-hooks",  # [hooks] env
            "report": "given",
            "environ": "absent",
            "outside": "hidden",
            "git": "refused",
        }, kind
    assert outside.read_text() == "original"  # a write lands, at most, in its private /tmp
    assert "\nx\n" not in (project / ".git" / "config").read_text()


def test_hooks_without_a_sandbox_reach_what_the_harness_reaches(tmp_path: Path) -> None:
    found, _, outside = run_hooks(tmp_path, "none")
    for kind in ("round", "escalate"):
        assert found[kind]["canary"] == "absent"  # still the allow-listed environment
        assert found[kind]["token"] == "given-to-hooks"
        assert found[kind]["environ"] == "leaked"  # through the harness's /proc entry
        assert found[kind]["outside"] == "visible"
    assert outside.read_text() == "originalescaped\nescaped\n"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[hooks]\nenv = ["NOT-A-NAME"]', "field 'hooks.env[0]'"),
        ("[hooks]\nnetwork = 3", "field 'hooks.network'"),
        ('[hooks]\nshell = "bash"', "field 'hooks.shell': unknown field"),
    ],
)
def test_bad_hooks_settings_name_the_field(tmp_path: Path, section: str, message: str) -> None:
    write_loop(tmp_path, f'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n{section}\n')
    with pytest.raises(ConfigError, match=re.escape(message)):
        LoopSpec.from_toml(tmp_path)


def test_hooks_get_their_own_variables_and_network_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_SANDBOX_ENV", raising=False)  # only loop.toml's names
    body = 'goal = "g"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    body += '[sandbox]\nbackend = "none"\nenv = ["CI"]\n'
    write_loop(tmp_path, body + '[hooks]\nenv = ["CHAT_TOKEN"]\nnetwork = true\n')
    config = LoopSpec.from_toml(tmp_path)
    agent, hooks = build_sandbox(config), build_sandbox(config, hooks=True)
    assert (agent.env_names, agent.network) == (("CI",), False)
    assert (hooks.env_names, hooks.network) == (("CI", "CHAT_TOKEN"), True)
    write_loop(tmp_path, body.replace("backend", "network = true\nbackend"))
    config = LoopSpec.from_toml(tmp_path)
    assert build_sandbox(config, hooks=True).network  # as [sandbox] unless [hooks] says


def test_hooks_run_in_the_agents_sandbox_unless_hooks_say_otherwise(tmp_path: Path) -> None:
    body = 'goal = "g"\nmodel = "scripted:none.json"\n[[gates]]\ntype = "command"\ncmd = "true"\n'
    body += '[sandbox]\nbackend = "none"\n'
    (tmp_path / "none.json").write_text("[]", encoding="utf-8")
    for hooks, own in [("", False), ("[hooks]\nnetwork = false\n", False),
                       ("[hooks]\nnetwork = true\n", True), ('[hooks]\nenv = ["CHAT"]\n', True)]:  # fmt: skip
        write_loop(tmp_path, body + hooks)
        settings = build_loop(LoopSpec.from_toml(tmp_path), events=NULL_SINK).settings
        made = settings.hook_sandbox is not None
        assert (made, settings.hooks_sandbox() is not settings.agent.sandbox) == (own, own), hooks
