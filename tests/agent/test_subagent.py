"""The subagent tool: a child session on its own model, inside the parent's budget and depth."""

from __future__ import annotations

from pathlib import Path

from harness import Agent, AgentStop, ScriptedModel, ToolCall
from harness.agent.subagent import Profile, Subagents
from harness.core.event_schema import ModelCall, SubagentEvent
from harness.core.stop import StopReason
from harness.models.budget import Budget, Meter, MeteredModel
from tests.conftest import RecordingSink

CHILD_PROMPT = "You search the code and answer in one line."
TASK = "Where is add defined? Write what you find to notes.md."


def delegate(profile: str = "searcher", **more: object) -> ToolCall:
    return ToolCall("subagent", {"task": TASK, "profile": profile, **more})


def child_script() -> list[object]:
    return [
        ToolCall("search", {"pattern": "def add"}),
        ToolCall("write_file", {"path": "notes.md", "content": "add: calc.py line 1\n"}),
        "add is defined in calc.py, line 1",
    ]


def setup(tmp_path: Path, budget: Budget, sink: RecordingSink | None = None):  # type: ignore[no-untyped-def]
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    parent = ScriptedModel([delegate(), "the helper found it", "spare"], name="parent-model")
    child = ScriptedModel(child_script(), name="child-model")
    profile = Profile(
        model=child,
        system_prompt=CHILD_PROMPT,
        tools=("search", "read_file", "write_file"),
        max_steps=5,
    )
    meter = Meter(budget)
    agent = Agent(
        MeteredModel(parent, meter, events=sink or RecordingSink()),
        max_tokens=100,
        subagents=Subagents(profiles={"searcher": profile}),
    )
    return agent, parent, child, meter


def test_the_childs_answer_is_the_parents_observation_and_its_tokens_count(
    tmp_path: Path,
) -> None:
    sink = RecordingSink()
    agent, parent, child, meter = setup(tmp_path, Budget(tokens=1_000_000), sink)
    run = agent.run("find add", tmp_path, events=sink)
    assert run.stop_reason is AgentStop.ANSWERED
    assert run.final == "the helper found it"
    observation = run.messages[3]["content"]
    assert observation == (
        "subagent answered in 3 step(s):\nadd is defined in calc.py, line 1\n"
        "files changed: notes.md"
    )
    assert parent.calls[1].messages[-1]["content"] == observation
    # A fresh context: the child saw its own system prompt and the task, nothing of the parent's.
    first = child.calls[0].messages
    assert first == [
        {"role": "system", "content": CHILD_PROMPT},
        {"role": "user", "content": TASK},
    ]
    assert {t["function"]["name"] for t in child.calls[0].tools} == {
        "search",
        "read_file",
        "write_file",
    }
    assert "subagent" in {t["function"]["name"] for t in parent.calls[0].tools}
    assert (tmp_path / "notes.md").read_text() == "add: calc.py line 1\n"
    # One budget: the child's three calls are in the parent's usage and the run's meter.
    (child_run,) = run.subagents
    assert child_run.usage.calls == 3
    assert child_run.usage.total_tokens > 0
    assert run.usage.calls == 5
    assert run.usage.total_tokens == meter.usage.total_tokens
    parent_tokens = run.usage.total_tokens - child_run.usage.total_tokens
    assert 0 < parent_tokens < run.usage.total_tokens
    assert run.files_written == {"notes.md"}
    (event,) = [e for e in sink.models if isinstance(e, SubagentEvent)]
    assert (event.profile, event.depth, event.model, event.stop_reason) == (
        "searcher",
        1,
        "child-model",
        "answered",
    )
    assert event.tokens == child_run.usage.total_tokens
    assert event.files == ["notes.md"]


def test_a_child_that_would_pass_what_is_left_is_stopped(tmp_path: Path) -> None:
    probe_sink = RecordingSink()
    (tmp_path / "probe").mkdir()
    probe, *_ = setup(tmp_path / "probe", Budget(tokens=1_000_000), probe_sink)
    probe.run("find add", tmp_path / "probe", events=probe_sink)
    calls = [e for e in probe_sink.models if isinstance(e, ModelCall)]
    assert [e.model for e in calls] == ["parent-model", *["child-model"] * 3, "parent-model"]
    parent_first, child_first, child_second = calls[:3]
    # Room for the parent's first call and the child's first, not for the child's second: its
    # prompt fits, but not with the 100 tokens it may answer with.
    spent = child_first.prompt_tokens + child_first.completion_tokens
    spent += parent_first.prompt_tokens + parent_first.completion_tokens
    budget = Budget(tokens=spent + child_second.prompt_tokens + 50)
    (tmp_path / "real").mkdir()
    sink = RecordingSink()
    agent, parent, child, meter = setup(tmp_path / "real", budget, sink)
    run = agent.run("find add", tmp_path / "real", events=sink)
    observation = run.messages[3]["content"]
    assert observation.startswith("error: the subagent was stopped after 1 step(s): ")
    assert "token budget" in observation
    assert len(child.calls) == 1  # the call that would have passed the budget was never made
    assert run.subagents[0].stop_reason is AgentStop.INTERRUPTED
    assert meter.usage.total_tokens == spent
    assert meter.usage.total_tokens <= budget.tokens
    assert run.stop_reason is AgentStop.INTERRUPTED  # what is left is too little for it too
    assert run.interruption is not None
    assert run.interruption.reason is StopReason.BUDGET_TOKENS
    (event,) = [e for e in sink.models if isinstance(e, SubagentEvent)]
    assert event.stop_reason == "interrupted"


def test_depth_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    grandchild = ScriptedModel(["grandchild answer"], name="grandchild")
    child = ScriptedModel([delegate("deeper"), "child saw the refusal"], name="child")
    profiles = {
        "searcher": Profile(model=child, tools=("subagent", "read_file"), max_steps=3),
        "deeper": Profile(model=grandchild, tools=("read_file",), max_steps=3),
    }
    parent = ScriptedModel([delegate(), "done"])
    run = Agent(parent, subagents=Subagents(profiles=profiles, max_depth=1)).run("go", tmp_path)
    child_run = run.subagents[0]
    refusal = child_run.messages[3]["content"]
    assert refusal == (
        "error: refused: subagents nest at most 1 deep, and this session is at depth 1"
    )
    assert grandchild.calls == []
    assert run.messages[3]["content"].startswith("subagent answered in 2 step(s):\nchild saw")
    # One level more is allowed at max_depth=2, and no further.
    grandchild = ScriptedModel(["grandchild answer"], name="grandchild")
    child = ScriptedModel([delegate("deeper"), "child done"], name="child")
    profiles = {
        "searcher": Profile(model=child, tools=("subagent", "read_file"), max_steps=3),
        "deeper": Profile(model=grandchild, tools=("read_file",), max_steps=3),
    }
    parent = ScriptedModel([delegate(), "done"])
    run = Agent(parent, subagents=Subagents(profiles=profiles, max_depth=2)).run("go", tmp_path)
    nested = run.subagents[0].subagents[0]
    assert nested.final == "grandchild answer"
    assert {t["function"]["name"] for t in grandchild.calls[0].tools} == {"read_file"}


def test_unknown_profiles_and_tools_outside_the_profile_are_refused(tmp_path: Path) -> None:
    child = ScriptedModel([], name="child")
    profiles = {"searcher": Profile(model=child, tools=("read_file",))}
    parent = ScriptedModel(
        [
            delegate("nobody"),
            delegate("searcher", tools=["run_shell"]),
            "done",
        ]
    )
    run = Agent(parent, subagents=Subagents(profiles=profiles)).run("go", tmp_path)
    unknown, outside = (m["content"] for m in run.messages if m["role"] == "tool")
    assert unknown == "error: no subagent profile 'nobody'; the profiles are: searcher"
    assert outside.startswith("error: tools not available to the subagent: run_shell;")
    assert child.calls == []
    assert run.subagents == []
