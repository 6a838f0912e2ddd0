"""`harness run` checks its models before it creates anything: a bad model string or a missing
API key exits 2 with a message naming it, and leaves no branch, worktree, progress or report.

One check runs as a person runs it, in a process of its own; the others call the command in the
test's process (:func:`harness_here`), where the model library is imported once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import harness, harness_here
from tests.conftest import git, make_repo

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HARNESS_CRITIC_MODEL"):
        monkeypatch.delenv(name, raising=False)


def _repo(tmp_path: Path, extra: str = "") -> Path:
    return make_repo(
        tmp_path / "repo",
        {
            "loop.toml": 'name = "pre"\ngoal = "say yes"\n' + extra
            + '[[gates]]\ntype = "command"\ncmd = "true"\n',
        },
    )  # fmt: skip


def _assert_nothing_created(repo: Path) -> None:
    assert git(repo, "branch", "--format=%(refname:short)") == "main"
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("nosuchprovider/foo", "no provider is called 'nosuchprovider'"),
        ("foo-model-typo", "it names no provider"),
    ],
)
def test_an_unknown_model_exits_2_before_anything_is_created(
    tmp_path: Path, model: str, named: str
) -> None:
    repo = _repo(tmp_path)
    result = harness_here("run", "--model", model, cwd=repo)
    assert result.returncode == 2, result.stderr
    assert f"model: unknown model {model!r}: {named}" in result.stderr
    assert "Traceback" not in result.stderr
    _assert_nothing_created(repo)


def test_a_missing_api_key_exits_2_naming_the_variable(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    result = harness("run", "--model", "gpt-4o-mini", cwd=repo)
    assert result.returncode == 2, result.stderr
    assert "model: model 'gpt-4o-mini' (openai) needs an API key: set OPENAI_API_KEY" in (
        result.stderr
    )
    _assert_nothing_created(repo)


def test_the_critic_model_is_checked_too(tmp_path: Path) -> None:
    repo = _repo(tmp_path, '[model_options]\napi_key = "sk-test"\n')
    result = harness_here(
        "run", "--model", "openai/local", "--critic-model", "nosuchprovider/judge",
        cwd=repo,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "harness: --critic-model: unknown model 'nosuchprovider/judge'" in result.stderr
    _assert_nothing_created(repo)


def test_an_anthropic_model_without_its_key_names_anthropic_api_key(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    result = harness_here(
        "run", "--model", "openai/local", "--critic-model", "anthropic/claude-haiku-4-5",
        cwd=repo, env={"OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert (
        "harness: --critic-model: model 'anthropic/claude-haiku-4-5' (anthropic) needs an API key: "
        in (result.stderr)
    )
    assert "ANTHROPIC_API_KEY" in result.stderr
    _assert_nothing_created(repo)


def test_a_goal_twice_the_context_window_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    """A three-step goal that cannot fit the model's window is bad set-up: exit 2 before round 1,
    with no request sent and no lock file, branch, worktree, progress or run folder left."""
    steps = "".join(
        f"Step {n}: " + "read every module and describe each function in detail. " * 90 + "\n"
        for n in (1, 2, 3)
    )  # about 4,000 tokens
    repo = _repo(
        tmp_path,
        'model = "openai/test-model"\n'
        '[model_options]\napi_key = "sk-test"\napi_base = "http://127.0.0.1:9/v1"\n'
        "context_window = 2000\n[critic]\nenabled = false\n",
    )
    toml = (repo / "loop.toml").read_text().replace('goal = "say yes"', f'goal = """{steps}"""')
    (repo / "loop.toml").write_text(toml)
    git(repo, "commit", "-qam", "a goal too long")
    result = harness_here("run", cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "goal: the task needs " in result.stderr
    assert "but openai/test-model reads at most 2,000" in result.stderr
    assert "cannot reach" not in result.stdout + result.stderr  # refused before any request
    _assert_nothing_created(repo)
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    restarted = harness_here("run", "--restart", cwd=repo)
    assert restarted.returncode == 2, restarted.stdout + restarted.stderr
    _assert_nothing_created(repo)
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (("--model", "openai/foo"), {}, "--model"),
        ((), {"HARNESS_MODEL": "openai/foo"}, "HARNESS_MODEL"),
        (("--critic-model", "openai/foo"), {"ANTHROPIC_API_KEY": "sk-x"}, "--critic-model"),
        ((), {"HARNESS_CRITIC_MODEL": "openai/foo", "ANTHROPIC_API_KEY": "sk-x"},
         "HARNESS_CRITIC_MODEL"),
    ],
)  # fmt: skip
def test_a_model_given_by_a_flag_or_variable_is_blamed_on_it_not_on_loop_toml(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    repo = _repo(tmp_path, 'model = "anthropic/claude-haiku-4-5"\n[critic]\nenabled = true\n')
    result = harness_here("run", *args, cwd=repo, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"harness: {named}: model 'openai/foo' (openai) needs an API key: set OPENAI_API_KEY "
        "in the environment, or api_key in [model_options]\n"
    )
    _assert_nothing_created(repo)


def test_a_model_from_loop_toml_is_still_blamed_on_its_field(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 'model = "openai/foo"\n')
    result = harness_here("run", cwd=repo)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "harness: loop.toml: model: model 'openai/foo' (openai) needs an API key: "
        "set OPENAI_API_KEY in the environment, or api_key in [model_options]\n"
    )
