"""Which set-up command makes an instance's environment, at which commit (the table, [env] commit)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from harness.assemble.env_setup import project_env
from harness.core.errors import ConfigError
from harness.scale.swebench import BenchOptions, loop_toml
from harness.scale.swebench_envs import EnvTable, load_env_table
from harness.scale.swebench_instance import Instance
from harness.spec import LoopSpec
from harness.workspace.git_cmd import git
from tests.conftest import make_repo

TABLE = """\
[[env]]
repo = "*"
setup = "uv pip install -e ."

[[env]]
repo = "pallets/flask"
setup = "uv pip install -e . pytest"

[[env]]
repo = "pallets/flask"
version = "2.0"
setup = "uv pip install -e . pytest==7.4"
python = "python3.11"
"""


def instance(repo: str = "pallets/flask", version: str = "", env_commit: str = "") -> Instance:
    return Instance(
        instance_id="x-1", repo=repo, base_commit="a" * 40, problem_statement="fix it",
        test_patch="p", FAIL_TO_PASS=["t"], version=version, environment_setup_commit=env_commit,
    )  # fmt: skip


@pytest.fixture
def table(tmp_path: Path) -> EnvTable:
    (tmp_path / "envs.toml").write_text(TABLE)
    return load_env_table(tmp_path / "envs.toml")


@pytest.mark.parametrize(
    ("repo", "version", "setup"),
    [
        ("pallets/flask", "2.0", "uv pip install -e . pytest==7.4"),  # repo and version
        ("pallets/flask", "2.1", "uv pip install -e . pytest"),  # the repo's "*"
        ("pallets/click", "2.0", "uv pip install -e ."),  # "*" and "*"
    ],
)
def test_the_most_specific_entry_is_taken(
    table: EnvTable, repo: str, version: str, setup: str
) -> None:
    recipe = table.recipe(instance(repo, version))
    assert recipe is not None
    assert recipe.setup == setup


def test_without_a_matching_entry_the_harness_python_runs_the_tests() -> None:
    only = EnvTable.model_validate({"env": [{"repo": "pallets/flask", "setup": "true"}]})
    assert only.recipe(instance("pallets/click")) is None
    toml = tomllib.loads(
        loop_toml(instance("pallets/click"), BenchOptions(Path("o"), "gold", envs=only))
    )
    assert "env" not in toml


def test_the_loop_makes_the_environment_at_the_environment_commit(table: EnvTable) -> None:
    options = BenchOptions(Path("o"), "gold", envs=table)
    toml = tomllib.loads(loop_toml(instance(version="2.0", env_commit="b" * 40), options))
    assert toml["env"] == {
        "setup": "uv pip install -e . pytest==7.4", "commit": "b" * 40, "python": "python3.11"
    }  # fmt: skip
    toml = tomllib.loads(loop_toml(instance(), options))  # no environment commit: the base
    assert toml["env"] == {"setup": "uv pip install -e . pytest", "commit": "a" * 40}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[env]]\nrepo = "flask"\nsetup = "x"\n', "field 'env[0].repo': String should match"),
        ('[[env]]\nrepo = "a/b; rm"\nsetup = "x"\n', "field 'env[0].repo': String should match"),
        ('[[env]]\nrepo = "a/b"\n', "field 'env[0]': Value error, give one of setup"),
        ('[[env]]\nrepo = "a/b"\nsetup = "x"\nimage = "y"\n', "and image (one holding it)"),
        ('[[env]]\nrepo = "a/b"\nimage = "y"\nworkdir = "testbed"\n', "'env[0].workdir'"),
        ('[[env]]\nrepo = "a/b"\nimage = "y"\nengine = "lxc"\n', "'env[0].engine'"),
        ("[[env]\n", "not valid TOML"),
    ],
)
def test_a_bad_table_names_the_file_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "envs.toml").write_text(text)
    with pytest.raises(ConfigError, match=f"^{tmp_path / 'envs.toml'}: .*") as caught:
        load_env_table(tmp_path / "envs.toml")
    assert message in str(caught.value)


def test_env_commit_needs_a_setup(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text(f'goal = "g"\n[env]\ncommit = "{"a" * 40}"\n')
    with pytest.raises(ConfigError, match=r"field 'env.commit': the commit a set-up runs at"):
        LoopSpec.from_toml(tmp_path)


def test_an_env_commit_the_repository_lacks_is_named(tmp_path: Path) -> None:
    loop = (
        f'goal = "g"\n[sandbox]\nbackend = "none"\n[env]\nsetup = "true"\ncommit = "{"c" * 40}"\n'
    )
    repo = make_repo(tmp_path / "repo", {"loop.toml": loop})
    with pytest.raises(ConfigError, match=rf"field 'env.commit': {'c' * 40} is not a commit of"):
        project_env(LoopSpec.from_toml(repo))


def test_clones_at_one_env_commit_share_one_environment_made_from_that_commit(
    tmp_path: Path,
) -> None:
    """Two instances of one repository (two clones, the base past the environment commit):
    the set-up runs once, at the environment commit, and both get that environment."""
    origin = make_repo(tmp_path / "origin", {"version.txt": "at the environment commit\n"})
    env_commit = git(origin, "rev-parse", "HEAD").strip()
    (origin / "version.txt").write_text("at the base\n")
    git(origin, "commit", "-qam", "base")
    loop = (
        'goal = "g"\n[sandbox]\nbackend = "none"\n'
        f'[env]\nsetup = "cat version.txt >> made.txt"\ncommit = "{env_commit[:12]}"\n'
    )
    envs = []
    for name in ("one", "two"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        (clone / "loop.toml").write_text(loop)
        env = project_env(LoopSpec.from_toml(clone))
        assert env is not None
        envs.append(env)

    assert envs[0] == envs[1]  # one environment, the same source and interpreter
    assert envs[0].source is not None
    assert envs[0].source.parent.parent.name == "commits"
    assert envs[0].source.parent.name.startswith(env_commit[:16])
    assert (envs[0].source / "made.txt").read_text() == "at the environment commit\n"  # once


IMAGES = """\
[[env]]
repo = "*"
setup = "uv pip install -e ."

[[env]]
repo = "astropy/astropy"
image = "sweb.eval.x86_64.{instance_id}:latest"
python = "/opt/miniconda3/envs/testbed/bin/python"

[[env]]
repo = "pallets/flask"
image = "flask-env:2"
workdir = "/src/flask"
engine = "podman"
"""


def test_an_image_entry_runs_the_instance_in_its_image_with_one_kept_container(
    tmp_path: Path,
) -> None:
    (tmp_path / "envs.toml").write_text(IMAGES)
    options = BenchOptions(Path("o"), "gold", envs=load_env_table(tmp_path / "envs.toml"))

    toml = tomllib.loads(loop_toml(instance("astropy/astropy"), options))

    assert "env" not in toml  # the image holds the environment: nothing is set up
    assert toml["sandbox"] == {
        "backend": "docker", "image": "sweb.eval.x86_64.x-1:latest", "workdir": "/testbed",
        "keep": True, "image_python": "/opt/miniconda3/envs/testbed/bin/python",
    }  # fmt: skip
    flask = tomllib.loads(loop_toml(instance("pallets/flask"), options))["sandbox"]
    assert flask == {"backend": "podman", "image": "flask-env:2", "workdir": "/src/flask",
                     "keep": True}  # fmt: skip
    click = tomllib.loads(loop_toml(instance("pallets/click"), options))
    assert "sandbox" not in click
    assert click["env"]["setup"] == "uv pip install -e ."


def test_the_loop_toml_of_an_image_entry_is_a_valid_loop(tmp_path: Path) -> None:
    (tmp_path / "envs.toml").write_text(IMAGES)
    options = BenchOptions(Path("o"), "gold", envs=load_env_table(tmp_path / "envs.toml"))
    (tmp_path / "held_out").mkdir()
    (tmp_path / "repo").mkdir()
    (tmp_path / "loop.toml").write_text(loop_toml(instance("astropy/astropy"), options))

    sandbox = LoopSpec.from_toml(tmp_path).sandbox

    assert (sandbox.backend, sandbox.workdir, sandbox.keep) == ("docker", "/testbed", True)
    assert sandbox.image_python == "/opt/miniconda3/envs/testbed/bin/python"
