"""A whole `harness run` over litellm's real HTTP path, against a local OpenAI-compatible server.

The author's tool calls, the gate, and the critic's verdict all travel as real chat-completions
requests and responses; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import harness
from tests.openai_server import OpenAIServer, Status, Text, ToolCalls

VERDICT = ToolCalls(
    (("call_v", "verdict", json.dumps({"reasons": ["correct"], "fixes": [], "score": 9})),)
)
"""The critic's reply: the verdict tool called with a passing score."""


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(deadline=120) as running:
        yield running


def _project(tmp_path: Path, server: OpenAIServer) -> Path:
    (tmp_path / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "http"
        goal = "out.txt must say yes"
        model = "openai/test-model"
        isolation = "none"
        max_iterations = 2
        [model_options]
        api_base = "{server.api_base}"
        api_key = "not-a-real-key"
        timeout = 10
        num_retries = 1
        retry_backoff = 0.05
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = "grep -qx yes out.txt"
        """)
    )
    return tmp_path


def test_a_run_through_litellm_passes_with_a_retry_and_an_independent_verdict(
    tmp_path: Path, server: OpenAIServer
) -> None:
    write = json.dumps({"path": "out.txt", "content": "yes\n"})
    server.queue(
        Status(503),  # the provider hiccups once: retried
        ToolCalls((("call_1", "write_file", write),)),
        Text("I wrote yes to out.txt."),
        VERDICT,
    )
    result = harness("run", "--quiet", cwd=_project(tmp_path, server))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "yes\n"
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 4
    assert {t["function"]["name"] for t in bodies[1]["tools"]} >= {"write_file", "run_shell"}
    tool_result = bodies[2]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert tool_result["tool_call_id"] == "call_1"
    critic = bodies[3]
    assert [t["function"]["name"] for t in critic["tools"]] == ["verdict"]  # offered only that
    assert [m["role"] for m in critic["messages"]] == ["system", "user"]
    assert "I wrote yes" in critic["messages"][1]["content"]  # the final answer is the artifact
    assert all(r.headers.get("authorization") == "Bearer not-a-real-key" for r in server.requests)


def test_a_provider_that_refuses_the_key_stops_with_error_after_one_request(
    tmp_path: Path, server: OpenAIServer
) -> None:
    server.queue(Status(401, "invalid api key"))
    result = harness("run", "--quiet", cwd=_project(tmp_path, server))
    assert result.returncode == 1
    assert len(server.requests) == 1  # never retried
    assert "model openai/test-model: authentication failed: AuthenticationError (status 401), " in (
        result.stdout  # the verdict line
    )
    report = (tmp_path / "progress" / "http.escalation.md").read_text()
    assert "ERROR" in report
    assert "401" in report


def test_a_model_the_provider_does_not_know_is_bad_configuration_exit_2(
    tmp_path: Path, server: OpenAIServer
) -> None:
    """Preflight cannot know every provider's catalogue: a 404 found mid-run is a mistyped model,
    exit 2 naming it, after one request (never retried), not exit 1 as an internal error."""
    server.queue(Status(404, "The model `test-model` does not exist or you do not have access"))
    result = harness("run", "--quiet", cwd=_project(tmp_path, server))
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(server.requests) == 1
    verdict = result.stdout.splitlines()[0]
    assert verdict.startswith("ERROR: round 1 failed: model error: model openai/test-model: ")
    assert "unknown model: NotFoundError (status 404), not retryable after 1 attempt" in verdict
    assert verdict.endswith(
        "the provider does not know 'openai/test-model': check the model's name"
    )
    assert "internal error" not in result.stdout + result.stderr


def test_a_server_error_mid_run_stays_an_error_exit_1(tmp_path: Path, server: OpenAIServer) -> None:
    """The other side of the boundary: only bad set-up exits 2; a provider failing is exit 1."""
    server.queue(Status(500, "boom"), Status(500, "boom"))
    result = harness("run", "--quiet", cwd=_project(tmp_path, server))
    assert result.returncode == 1, result.stdout + result.stderr
    assert len(server.requests) == 2  # num_retries = 1
    assert "server error: InternalServerError (status 500), gave up after 2 attempts" in (
        result.stdout
    )


def test_a_cost_budget_over_an_unpriced_model_is_named_at_the_start_and_its_calls_reported(
    tmp_path: Path, server: OpenAIServer
) -> None:
    project = _project(tmp_path, server)
    with (project / "loop.toml").open("a") as toml:
        toml.write("[budget]\ncost_usd = 0.5\n")
    write = json.dumps({"path": "out.txt", "content": "yes\n"})
    server.queue(
        ToolCalls((("call_1", "write_file", write),)),
        Text("I wrote yes to out.txt."),
        VERDICT,
    )
    result = harness("run", cwd=project)
    assert result.returncode == 0, result.stderr
    first_line, second_line = result.stderr.splitlines()[:2]
    assert second_line.startswith("note: the critic uses the author's model")
    assert first_line == (
        "note: budget.cost_usd ($0.5) cannot be enforced for openai/test-model: no price is "
        "known for it, so its calls count as unpriced and cost $0; set budget.tokens to bound them"
    )
    [run_dir] = (project / ".harness" / "runs").iterdir()
    report = harness("report", run_dir.name, cwd=project)
    assert report.returncode == 0, report.stderr
    assert "3 model calls (3 unpriced)" in report.stdout
    assert "note: budget.cost_usd ($0.5) cannot be enforced for openai/test-model" in report.stdout


AUTHOR_NOTE = (
    "note: the critic uses the author's model (openai/test-model); a model grading its own "
    "work is lenient"
)


@pytest.mark.parametrize(
    ("critics", "models", "noted"),
    [  # the first model of the list that can be called reviews; none callable: the author
        ('["nosuchprovider/judge", "openai/judge", "openai/other"]', ["test-model"] * 2 + ["judge"], False),
        ('["nosuchprovider/judge"]', ["test-model"] * 3, True),
    ],
)  # fmt: skip
def test_a_critic_model_list_uses_its_first_callable_model_else_the_author_and_says_so(
    tmp_path: Path, server: OpenAIServer, critics: str, models: list[str], noted: bool
) -> None:
    project = _project(tmp_path, server)
    toml = (project / "loop.toml").read_text()
    toml = toml.replace(
        "max_iterations = 2\n", f"max_iterations = 2\n[critic]\nmodel = {critics}\n"
    )
    (project / "loop.toml").write_text(toml)
    write = json.dumps({"path": "out.txt", "content": "yes\n"})
    server.queue(
        ToolCalls((("call_1", "write_file", write),)),
        Text("I wrote yes to out.txt."),
        VERDICT,
    )
    result = harness("run", cwd=project)
    assert result.returncode == 0, result.stderr
    assert [r.body["model"] for r in server.requests] == models
    assert (AUTHOR_NOTE in result.stderr) is noted
