"""``harness bench swebench``: SWE-bench-format instances, one outer loop each, on the batch.

For each instance the benchmark lays out, under its output folder, a folder of its own that
the agent never reaches:

* ``repo/``: a clone of the instance's repository at ``base_commit``, the workspace; the loop
  works on a run branch in a worktree, so the clone stays at the base;
* ``held_out/``: the files ``test_patch`` writes, laid over the round's clean checkout only;
* ``loop.toml``: the goal (the problem statement), one held-out pytest gate running
  ``FAIL_TO_PASS`` and ``PASS_TO_PASS``, no critic;
* for the oracles, ``oracle.json``: the script of a model that writes the reference ``patch``
  through the tools (``gold``) or changes nothing (``empty``).

The instances then run as a :class:`~harness.scale.batch.Batch` (workers, a batch-wide budget,
resume after a kill), locally or on Ray: the Ray backend ships the instance's folder (loop.toml,
held-out files, the oracle's script) around its repository, which stays the only thing the
agent works in. An instance is resolved exactly when its loop passed:
every ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` test passed with the test patch applied, as the
official rule has it. With several attempts per instance, each is a batch task of its own on
the same prepared folder (its own run branch); with several runners (``runners``), every
instance is attempted by each, on the same folder under the same held-out tests, as tasks named
``<instance>.<runner>``. After the batch the outputs are written anew from the records
(:mod:`harness.scale.swebench_outputs`), so a resumed run never repeats a line.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.agent.config import RunnerName
from harness.core.atomic import atomic_write_text
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.core.text import toml_value
from harness.models.preflight import preflight
from harness.models.resolve import resolve_model
from harness.scale.batch import Backend, Batch, BatchProgress
from harness.scale.batch_task import MAX_NAME, BatchTask, per_runner
from harness.scale.swebench_envs import EnvTable
from harness.scale.swebench_instance import Instance
from harness.scale.swebench_outputs import (
    Side,
    attempt_name,
    instance_folder,
    write_outputs,
    write_side_by_side,
)
from harness.scale.swebench_summary import BenchSummary, SideBySide
from harness.verify.held_out import Feedback
from harness.workspace.git_cmd import git

ORACLES = ("gold", "empty")
"""Models that need no provider: the reference patch written through the tools, or nothing."""


@dataclass(frozen=True)
class BenchOptions:
    """How to run a benchmark: where repositories come from and go, the model, the limits."""

    out: Path
    model: str
    repos: Path | None = None
    max_iterations: int = 3
    feedback: Feedback = "pass_fail"
    hints: bool = False
    workers: int = 2
    budget: Budget | None = None
    attempts: int = 1
    """Independent attempts per instance (pass@k); the first one gives ``preds.jsonl``."""
    envs: EnvTable | None = None
    """How instances' environments are made; None: the tests run in the harness's Python."""
    backend: Backend = "local"
    ray_address: str | None = None
    runners: tuple[RunnerName, ...] = ()
    """What runs the sessions, each runner attempting every instance; none: the harness's agent."""
    agent_command: tuple[str, ...] | None = None
    """Runner ``command``'s program and arguments (``[agent] command`` of each loop.toml)."""

    @property
    def sides(self) -> list[Side]:
        """Each runner's share of the benchmark (one side without runners)."""
        several = len(self.runners) > 1
        return [Side(runner, several) for runner in self.runners] or [Side()]


def run_bench(
    instances: Sequence[Instance],
    options: BenchOptions,
    *,
    on_progress: Callable[[BatchProgress], None] | None = None,
) -> BenchSummary | SideBySide:
    """Prepare every instance, run them as a batch (every runner's attempts at it), and write
    the predictions and results: one runner's summary, or several side by side.

    A model that cannot be called (unknown, or its API key missing) is a :class:`ConfigError`
    naming ``--model`` and the cause, raised before any instance is prepared or run, as
    ``harness run`` refuses such a model before it starts."""
    if options.model not in ORACLES:
        preflight([("--model", resolve_model(options.model))])
    out = options.out.absolute()
    sides = options.sides
    prepared = [prepare(instance, options, out) for instance in instances]
    tasks = [
        attempt
        for task in per_runner(prepared, options.runners)
        for attempt in attempt_tasks(task, options.attempts)
    ]
    Batch(
        tasks,
        workers=options.workers,
        out=out / "batch",
        budget=options.budget,
        on_progress=on_progress,
        backend=options.backend,
        ray_address=options.ray_address,
    ).run()
    if len(sides) > 1:
        return write_side_by_side(instances, options.model, out, sides, attempts=options.attempts)
    return write_outputs(instances, options.model, out, side=sides[0], attempts=options.attempts)


def prepare(instance: Instance, options: BenchOptions, out: Path) -> BatchTask:
    """The instance's clone, held-out files, loop.toml (and oracle script); its batch task.

    A folder prepared by an earlier run of the benchmark is kept as it is (its clone holds the
    run branches the batch resumes from).
    """
    folder = instance_folder(out, instance)
    loop = folder / "loop.toml"
    if not loop.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        repo = folder / "repo"
        if not (repo / ".git").exists():
            clone(instance, options.repos, repo)
        written = apply_in_scratch(repo, instance.base_commit, instance.test_patch)
        held_out = folder / "held_out"
        shutil.rmtree(held_out, ignore_errors=True)
        for path, content in written.items():
            if content is not None:
                target = held_out / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
        held_out.mkdir(exist_ok=True)
        if options.model in ORACLES:
            script = oracle_script(
                instance, repo, gold=options.model == "gold", rounds=options.max_iterations
            )
            (folder / "oracle.json").write_text(json.dumps(script), encoding="utf-8")
        atomic_write_text(loop, loop_toml(instance, options))  # last: now it is a prepared one
    model = f"scripted:{folder / 'oracle.json'}" if options.model in ORACLES else options.model
    workspace = str(folder / "repo")  # named, so the Ray backend finds the repository to ship
    return BatchTask(name=instance.instance_id, loop=str(loop), model=model, workspace=workspace)


def attempt_tasks(task: BatchTask, attempts: int) -> list[BatchTask]:
    """``attempts`` tasks running ``task``'s loop, each on a run branch of its own."""
    tasks = [task]
    for attempt in range(2, attempts + 1):
        name = attempt_name(task.name, attempt)
        if len(name) > MAX_NAME:
            raise ConfigError(
                f"instance_id {task.name!r}: too long for {attempts} attempts "
                f"(at most {MAX_NAME - 2} characters)"
            )
        tasks.append(task.model_copy(update={"name": name}))
    return tasks


def clone(instance: Instance, repos: Path | None, target: Path) -> None:
    """``target``: a clone of the instance's repository with ``base_commit`` checked out."""
    source = find_repository(instance.repo, repos)
    target.parent.mkdir(parents=True, exist_ok=True)
    git(target.parent, "clone", "--quiet", "--no-checkout", source, str(target))
    try:
        git(target, "checkout", "--quiet", "-B", "base", instance.base_commit)
    except ConfigError as exc:
        raise ConfigError(
            f"{instance.instance_id}: base_commit {instance.base_commit} is not in {source}"
        ) from exc
    git(target, "config", "user.name", "harness bench")
    git(target, "config", "user.email", "bench@harness.invalid")


def find_repository(repo: str, repos: Path | None) -> str:
    """Where to clone ``owner/name`` from: a clone or mirror in ``repos``, else its public URL."""
    owner, name = repo.split("/")
    if repos is not None:
        for candidate in (f"{owner}__{name}", f"{owner}/{name}", name):
            for folder in (repos / candidate, repos / f"{candidate}.git"):
                if folder.is_dir():
                    return str(folder.absolute())
        raise ConfigError(
            f"--repos {repos}: no clone of {repo} (looked for {owner}__{name}, {owner}/{name} "
            f"and {name}, each also with .git)"
        )
    return f"https://github.com/{repo}.git"


def apply_in_scratch(repo: Path, commit: str, patch: str) -> dict[str, bytes | None]:
    """The files ``patch`` leaves when applied at ``commit``: path -> content (None: deleted).

    The patch is applied in a scratch worktree that is removed after; the clone is untouched.
    """
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch:
        tree = Path(scratch) / "tree"
        git(repo, "worktree", "add", "--quiet", "--detach", str(tree), commit)
        try:
            changed = [
                line.split("\t", 2)[2]
                for line in git(tree, "apply", "--numstat", "-", stdin=patch).splitlines()
            ]
            git(tree, "apply", "--whitespace=nowarn", "-", stdin=patch)
            return {
                path: (tree / path).read_bytes() if (tree / path).is_file() else None
                for path in changed
            }
        finally:
            git(repo, "worktree", "remove", "--force", str(tree))


def oracle_script(instance: Instance, repo: Path, *, gold: bool, rounds: int) -> dict[str, object]:
    """A rounds script, the same every round: ``gold`` writes the reference patch's files
    through the tools, then submits; ``empty`` only submits."""
    calls: list[object] = []
    if gold:
        for path, content in apply_in_scratch(repo, instance.base_commit, instance.patch).items():
            if content is None:
                command = f"rm -f -- {shlex.quote(path)}"
                calls.append({"name": "run_shell", "arguments": {"command": command}})
            else:
                text = content.decode("utf-8")
                calls.append({"name": "write_file", "arguments": {"path": path, "content": text}})
    summary = "applied the reference patch" if gold else "changed nothing"
    calls.append({"name": "submit", "arguments": {"summary": summary}})
    return {"rounds": {str(number): calls for number in range(1, rounds + 1)}}


def loop_toml(instance: Instance, options: BenchOptions) -> str:
    goal = instance.problem_statement
    if options.hints and instance.hints_text.strip():
        goal += f"\n\nHints:\n{instance.hints_text}"
    tests = " ".join(shlex.quote(test) for test in instance.tests)
    top = {"name": instance.instance_id, "goal": goal, "workspace": "repo", "isolation": "worktree"}
    gate = {"type": "pytest", "args": tests, "held_out": "held_out", "feedback": options.feedback}
    return "\n".join(
        [
            *_table(None, {**top, "max_iterations": options.max_iterations}),
            *_table("[[gates]]", gate),
            *_table("[critic]", {"enabled": False}),
            *agent_section(options.agent_command),
            *env_section(instance, options.envs),
        ]
    )


def _table(header: str | None, values: Mapping[str, str | bool | int | None]) -> list[str]:
    """``header`` (None: the top level), a ``key = value`` line for each value that is not
    None, then a blank line."""
    lines = [f"{key} = {toml_value(value)}" for key, value in values.items() if value is not None]
    return [*([header] if header else []), *lines, ""]


def agent_section(command: Sequence[str] | None) -> list[str]:
    """``[agent] command``: runner ``command``'s program, when one is given."""
    if command is None:
        return []
    return ["[agent]", f"command = [{', '.join(toml_value(word) for word in command)}]", ""]


def env_section(instance: Instance, envs: EnvTable | None) -> list[str]:
    """``[env]``: the table's set-up command, run once at the instance's environment commit; or
    ``[sandbox]``: the table's image, the workspace at its folder, one container kept."""
    recipe = envs.recipe(instance) if envs is not None else None
    if recipe is None:
        return []
    image = recipe.image_of(instance)
    if image is not None:
        sandbox = {"backend": recipe.engine, "image": image, "workdir": recipe.workdir}
        return _table("[sandbox]", {**sandbox, "keep": True, "image_python": recipe.python})
    commit = instance.environment_setup_commit or instance.base_commit
    return _table("[env]", {"setup": recipe.setup, "commit": commit, "python": recipe.python})
