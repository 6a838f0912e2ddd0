"""The critic's default model: another family's when one is configured and reachable.

Whole runs go through litellm's real providers against the local servers: the author on the
Anthropic-compatible one, another family's critic on the OpenAI-compatible one, each reached
through the provider's own environment variables, as a person's keys reach the real services.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.assemble.build_critic import loop_critic
from harness.models.other_family import OTHER_FAMILY_CRITICS, other_family_candidates
from harness.spec import LoopSpec
from harness.verify.critic import Critic
from tests.anthropic_server import AnthropicServer
from tests.cli.test_cli import harness_here
from tests.openai_server import OpenAIServer, Text, ToolCalls

AUTHOR = "anthropic/claude-sonnet-4-5"
VERDICT = ToolCalls(
    (("call_v", "verdict", json.dumps({"reasons": ["says yes"], "fixes": [], "score": 9})),)
)
NOTE = f"note: the critic uses the author's model ({AUTHOR}); a model grading its own work"
KEYS = [variable for variable, _ in OTHER_FAMILY_CRITICS] + [
    "HARNESS_CRITIC_MODEL",
    "OPENAI_API_BASE",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY",
]


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def servers() -> Iterator[tuple[AnthropicServer, OpenAIServer]]:
    with AnthropicServer(deadline=120) as author, OpenAIServer(deadline=120) as other:
        yield author, other


def _project(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "family"
        goal = "out.txt must say yes"
        model = "{AUTHOR}"
        isolation = "none"
        max_iterations = 1
        [model_options]
        num_retries = 0
        [[gates]]
        type = "command"
        cmd = "grep -qx yes out.txt"
        """)
        + extra
    )
    return tmp_path


def _author_writes_yes(server: AnthropicServer) -> None:
    write = json.dumps({"path": "out.txt", "content": "yes\n"})
    server.queue(ToolCalls((("toolu_1", "write_file", write),)), Text("Wrote yes."))


def test_a_key_for_another_family_makes_its_model_the_critic(
    tmp_path: Path, servers: tuple[AnthropicServer, OpenAIServer]
) -> None:
    author, other = servers
    _author_writes_yes(author)
    other.queue(VERDICT)
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_API_BASE": author.api_base,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_API_BASE": other.api_base,
    }
    result = harness_here("run", cwd=_project(tmp_path), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [r.body["model"] for r in author.requests] == ["claude-sonnet-4-5"] * 2
    assert [(r.path, r.body["model"]) for r in other.requests] == [
        ("/v1/chat/completions", "gpt-4.1")
    ]
    assert NOTE not in result.stderr
    [run] = (tmp_path / ".harness" / "runs").iterdir()
    report = harness_here("report", run.name, cwd=tmp_path, env=env)
    assert "critic: openai/gpt-4.1" in report.stdout


def test_without_another_family_the_author_reviews_and_the_run_says_so(
    tmp_path: Path, servers: tuple[AnthropicServer, OpenAIServer]
) -> None:
    author, other = servers
    _author_writes_yes(author)
    author.queue(VERDICT)
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_API_BASE": author.api_base}
    result = harness_here("run", cwd=_project(tmp_path), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(author.requests) == 3  # the verdict too
    assert other.requests == []
    assert NOTE in result.stderr


def test_candidates_are_named_models_then_keyed_ones_of_another_provider() -> None:
    environ = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": ""}
    named = ["claude-3-5-haiku-20241022", "deepseek/deepseek-chat"]
    assert other_family_candidates(AUTHOR, named, environ) == [
        "deepseek/deepseek-chat",
        "openai/gpt-4.1",
    ]  # the author's provider left out, an empty key is no key
    assert other_family_candidates("gpt-4o", [], environ) == ["anthropic/claude-sonnet-4-5"]
    assert other_family_candidates(AUTHOR, ["nosuchprovider/x"], {}) == []


def _critic_model(tmp_path: Path, extra: str) -> str:
    critic = loop_critic(LoopSpec.from_toml(_project(tmp_path, extra)))
    assert isinstance(critic, Critic)
    return critic.model.name


def test_a_reachable_named_model_comes_first_and_an_unreachable_one_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fleet = '[fleet]\nsubtasks = ["a"]\nmodel = "deepseek/deepseek-chat"\n'
    assert _critic_model(tmp_path, fleet) == "openai/gpt-4.1"  # no DEEPSEEK_API_KEY
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")
    assert _critic_model(tmp_path, fleet) == "deepseek/deepseek-chat"
    named = '[critic]\nmodel = "anthropic/claude-3-5-haiku-20241022"\n'
    assert _critic_model(tmp_path, named) == "anthropic/claude-3-5-haiku-20241022"


def test_the_authors_server_or_a_scripted_author_keeps_the_critic_on_the_author(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    project = _project(tmp_path)
    toml = (project / "loop.toml").read_text()
    served = toml.replace("num_retries = 0\n", 'num_retries = 0\napi_base = "http://127.0.0.1:9"\n')
    (project / "loop.toml").write_text(served)
    assert loop_critic(LoopSpec.from_toml(project)).label == AUTHOR  # type: ignore[union-attr]
    scripted = toml.replace(f'"{AUTHOR}"', '"scripted:author.json"')
    (project / "author.json").write_text("[]")
    (project / "loop.toml").write_text(scripted)
    assert loop_critic(LoopSpec.from_toml(project)).label.startswith("scripted:")  # type: ignore[union-attr]


def test_a_cascades_later_model_of_another_family_is_the_critic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-ds")
    project = _project(tmp_path)
    toml = (project / "loop.toml").read_text().replace(f'model = "{AUTHOR}"\n', "")
    cascade = f'[agent]\nmodels = ["{AUTHOR}", "deepseek/deepseek-chat"]\n'
    (project / "loop.toml").write_text(toml + cascade)
    critic = loop_critic(LoopSpec.from_toml(project))
    assert isinstance(critic, Critic)
    assert critic.model.name == "deepseek/deepseek-chat"  # before the keyed openai/gpt-4.1
