"""Around each tool call: permission rules and action hooks, in a real session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Agent, Loop, ScriptedModel, ToolCall
from harness.agent.actions import ActionCall, ActionHook, Block
from harness.core.errors import ConfigError
from harness.core.event_schema import ActionHookEvent, PermissionEvent
from harness.tools.permissions import Permissions
from tests.conftest import RecordingSink

LINT = (
    "python3 -c \"import json, os; p = json.loads(os.environ['HARNESS_ACTION'])['arguments']"
    "['path']; compile(open(p).read(), p, 'exec')\""
)


def shell(command: str) -> ToolCall:
    return ToolCall("run_shell", {"command": command})


def observations(messages: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


def test_denied_commands_never_run_and_the_agent_reads_why(tmp_path: Path) -> None:
    spellings = ["echo a && touch m1", "sh -c 'touch m2'", "echo $(touch m3)", "/usr/bin/touch m4"]
    model = ScriptedModel([*map(shell, spellings), shell("$T m5"), shell("echo ran > ok"), "done"])
    sink = RecordingSink()
    rules = Permissions(deny=["run_shell(touch*)"])
    run = Agent(model, permissions=rules).run("go", tmp_path, events=sink)
    seen = observations(run.messages)
    for text in seen[:4]:
        assert text.startswith("error: denied by rule run_shell(touch*): 'touch m")
    assert seen[4].startswith("error: denied: the command cannot be checked")
    assert not any((tmp_path / f"m{n}").exists() for n in range(1, 6))
    assert (tmp_path / "ok").read_text() == "ran\n"
    assert run.commands_run == ["echo ran > ok"]  # the denied ones never reached the shell
    events = [e for e in sink.models if isinstance(e, PermissionEvent)]
    assert [e.decision for e in events] == ["denied"] * 5 + ["allowed"]
    assert [e.source for e in events] == ["rule"] * 4 + ["unreadable", "default"]


def test_ask_with_nobody_to_ask_is_denied_unless_set_otherwise(tmp_path: Path) -> None:
    def session(rules: Permissions) -> str:
        model = ScriptedModel([shell("pip --version > asked"), "done"])
        return observations(Agent(model, permissions=rules).run("go", tmp_path).messages)[0]

    denied = session(Permissions(ask=["run_shell(pip*)"]))
    assert denied.startswith("error: denied: 'pip --version' needs a person's approval and nobody")
    assert not (tmp_path / "asked").exists()
    asked: list[str] = []
    attended_but_off = Permissions(ask=["run_shell(pip*)"], attended=False)
    model = ScriptedModel([shell("pip --version"), "done"])
    Agent(
        model, permissions=attended_but_off, asker=lambda q, t: asked.append(q) or "approved"
    ).run("go", tmp_path)
    assert asked == []  # an unattended run never waits on a person
    allowed = session(Permissions(ask=["run_shell(pip*)"], unattended="allow"))
    assert allowed.startswith("[exit code")


def test_a_lint_hook_after_write_file_reaches_the_agent_in_the_same_session(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            ToolCall(
                "write_file", {"path": "calc.py", "content": "def add(a, b)\n    return a+b\n"}
            ),
            ToolCall(
                "write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a+b\n"}
            ),
            ToolCall("read_file", {"path": "calc.py"}),
            "fixed",
        ]
    )
    sink = RecordingSink()
    lint = ActionHook("lint", "after", LINT, tools=("write_file", "edit_file"))
    run = Agent(model, hooks=[lint]).run("add", tmp_path, events=sink)
    first, second, third = observations(run.messages)
    assert first.startswith("created calc.py")
    assert "[hook lint]\n[exit code 1]" in first
    assert "SyntaxError" in first
    assert model.calls[1].messages[-1]["content"] == first  # the model read it next
    assert "[hook lint]" not in second
    assert "[hook lint]" not in third
    hooks = [e for e in sink.models if isinstance(e, ActionHookEvent)]
    assert [(e.hook, e.tool, e.outcome) for e in hooks] == [
        ("lint", "write_file", "failed"),
        ("lint", "write_file", "passed"),
    ]


def test_before_hooks_block_with_a_reason_the_agent_reads(tmp_path: Path) -> None:
    def no_secrets(call: ActionCall) -> Block | None:
        path = str(call.arguments.get("path", ""))
        return Block("secrets/ is off limits") if path.startswith("secrets/") else None

    hooks = [
        ActionHook("guard", "before", no_secrets, tools=("write_file",)),
        ActionHook("no-curl", "before", "echo no network tools; exit 3", tools=("run_shell",)),
    ]
    model = ScriptedModel(
        [
            ToolCall("write_file", {"path": "secrets/key", "content": "x"}),
            ToolCall("write_file", {"path": "notes.md", "content": "x"}),
            shell("touch ran"),
            "done",
        ]
    )
    run = Agent(model, hooks=hooks).run("go", tmp_path)
    blocked, written, refused = observations(run.messages)
    assert blocked == "error: blocked by hook guard: secrets/ is off limits"
    assert written.startswith("created notes.md")
    assert refused == "error: blocked by hook no-curl: no network tools"
    assert not (tmp_path / "secrets").exists()
    assert not (tmp_path / "ran").exists()


def test_a_hook_that_would_trigger_itself_stops_at_the_guard(tmp_path: Path) -> None:
    sink = RecordingSink()
    reviewed: list[str] = []
    reviewer_model = ScriptedModel(
        [ToolCall("write_file", {"path": "review.md", "content": "looks fine"}), "reviewed"] * 2
    )

    def review(call: ActionCall) -> str:
        """Runs a review loop whose agent writes a file: the same hook, inside itself."""
        reviewed.append(str(call.arguments["path"]))
        reviewer = Agent(reviewer_model, hooks=hooks)
        loop = Loop(
            lambda ctx: reviewer.run("review", tmp_path, events=sink).final,
            until="",
            max_iterations=2,
        )
        result = loop.run()
        return f"review loop: {result.loop_round} rounds, said {result.output}"

    hooks = [ActionHook("review", "after", review, tools=("write_file",))]
    model = ScriptedModel([ToolCall("write_file", {"path": "a.py", "content": "x = 1\n"}), "done"])
    run = Agent(model, hooks=hooks).run("go", tmp_path, events=sink)
    assert reviewed == ["a.py"]  # the reviewer's own writes did not start it again
    assert "[hook review]\nreview loop: 2 rounds, said reviewed" in observations(run.messages)[0]
    outcomes = [(e.outcome, e.detail) for e in sink.models if isinstance(e, ActionHookEvent)]
    guarded = ("guarded", "not run inside hooks review")
    assert outcomes == [guarded, guarded, ("observed", "")]
    assert (tmp_path / "review.md").read_text() == "looks fine"


def test_hooks_are_checked_when_the_agent_is_built() -> None:
    model = ScriptedModel([])
    with pytest.raises(ConfigError, match="two hooks are named 'x'"):
        Agent(model, hooks=[ActionHook("x", "after", "true"), ActionHook("x", "before", "true")])
    with pytest.raises(ConfigError, match="hooks: 'ruff check .' is not an ActionHook"):
        Agent(model, hooks=["ruff check ."])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="when must be 'before' or 'after'"):
        ActionHook("x", "during", "true")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="run must be a command or a callable"):
        ActionHook("x", "after", "  ")


def test_a_command_hook_gets_the_sessions_environment_and_the_call(tmp_path: Path) -> None:
    check = (
        'test "$MODE" = strict && python3 -c "import json, os; '
        "print(json.loads(os.environ['HARNESS_ACTION'])['arguments']['command'])\"; exit 1"
    )
    hook = ActionHook("echo-call", "after", check, tools=("run_shell",))
    model = ScriptedModel([shell("echo hi"), "done"])
    run = Agent(model, hooks=[hook]).run("go", tmp_path, env={"MODE": "strict", "API_TOKEN": "s"})
    assert observations(run.messages)[0].endswith("[hook echo-call]\n[exit code 1]\necho hi")


def test_a_hook_that_raises_blocks_before_and_is_reported_after(tmp_path: Path) -> None:
    def broken(call: ActionCall) -> str:
        raise RuntimeError(f"cannot judge {call.tool}")

    hooks = [
        ActionHook("strict", "before", broken, tools=("run_shell",)),
        ActionHook("report", "after", broken, tools=("write_file",)),
    ]
    model = ScriptedModel(
        [shell("touch ran"), ToolCall("write_file", {"path": "a.md", "content": "x"}), "done"]
    )
    run = Agent(model, hooks=hooks).run("go", tmp_path)
    blocked, written = observations(run.messages)
    assert (
        blocked
        == "error: blocked by hook strict: the hook failed: RuntimeError: cannot judge run_shell"
    )
    assert not (tmp_path / "ran").exists()
    assert written.endswith("[hook report]\nRuntimeError: cannot judge write_file")
    assert (tmp_path / "a.md").read_text() == "x"


@pytest.mark.parametrize("filler", ["x", "é"])
def test_a_command_hook_reads_the_call_as_json_even_when_its_arguments_are_long(
    tmp_path: Path, filler: str
) -> None:
    read = (
        "python3 -c \"import json, os; a = json.loads(os.environ['HARNESS_ACTION']); "
        "c = a['arguments']['content']; print(a['arguments']['path'], len(c) < 100000, c[:5])\""
    )
    hook = ActionHook("show", "after", read, tools=("write_file",), observe="always")
    content = "hello" + filler * 300_000  # more than one environment string may hold
    model = ScriptedModel([ToolCall("write_file", {"path": "big.txt", "content": content}), "ok"])
    run = Agent(model, hooks=[hook]).run("go", tmp_path)
    (observation,) = observations(run.messages)
    assert observation.endswith("[hook show]\n[exit code 0]\nbig.txt True hello")
    assert (tmp_path / "big.txt").read_text() == content


def test_an_action_too_long_even_cut_reaches_a_hook_as_json_without_its_arguments() -> None:
    from harness.agent.actions import PAYLOAD_CHARS, _payload

    rows = ["row"] * 50_000  # no single long text to cut
    payload = _payload(ActionCall("mcp__db__insert", {"rows": rows}, Path(".")))
    assert len(payload) <= PAYLOAD_CHARS
    assert json.loads(payload) == {
        "tool": "mcp__db__insert",
        "arguments": {},
        "arguments_cut": True,
        "output": None,
        "is_error": None,
    }
