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
the same prepared folder (its own run branch). After the batch, ``preds.jsonl`` (one line per
instance whose first attempt ended), ``results.jsonl`` (one per attempt) and ``bench.json``
(resolve rate, cost, rounds, pass@k) and ``trajs/<task>.traj`` (each attempt's trajectory in
SWE-agent's form) are written anew from the records, so a resumed run never repeats a line.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.agent.config import RunnerName
from harness.assemble.build import run_folder
from harness.core import nofollow
from harness.core.budget import Budget
from harness.core.errors import ConfigError
from harness.observe.events import EVENTS_FILE
from harness.observe.trajectory import TRAJECTORY_FILE, Trajectory
from harness.observe.trajectory_export import swe_agent_traj
from harness.scale.batch import Backend, Batch, BatchProgress
from harness.scale.batch_task import BatchTask, TaskRecord, read_record
from harness.scale.swebench_envs import EnvTable
from harness.scale.swebench_instance import Instance
from harness.scale.swebench_summary import BenchSummary, InstanceResult, summarise
from harness.verify.held_out import Feedback
from harness.workspace.git_cmd import git

ORACLES = ("gold", "empty")
"""Models that need no provider: the reference patch written through the tools, or nothing."""

PREDICTIONS = "preds.jsonl"
RESULTS = "results.jsonl"
SUMMARY = "bench.json"
TRAJS = "trajs"
"""The folder of the attempts' trajectories in SWE-agent's form, ``<task name>.traj``."""
MAX_NAME = 64
"""The longest batch task name (:data:`harness.scale.batch_task.NAME_PATTERN`)."""


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
    runner: RunnerName | None = None
    """What runs each instance's sessions (``[agent] runner``); None: the harness's agent."""


def run_bench(
    instances: Sequence[Instance],
    options: BenchOptions,
    *,
    on_progress: Callable[[BatchProgress], None] | None = None,
) -> BenchSummary:
    """Prepare every instance, run them as a batch, and write the predictions and results."""
    out = options.out.absolute()
    tasks = [
        task
        for instance in instances
        for task in attempt_tasks(prepare(instance, options, out), options.attempts)
    ]
    batch = Batch(
        tasks,
        workers=options.workers,
        out=out / "batch",
        budget=options.budget,
        on_progress=on_progress,
        backend=options.backend,
        ray_address=options.ray_address,
    )
    batch.run()
    return write_outputs(instances, options.model, out, attempts=options.attempts)


def instance_folder(out: Path, instance: Instance) -> Path:
    return out / "instances" / instance.instance_id


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
        tmp = loop.with_suffix(".toml.tmp")
        tmp.write_text(loop_toml(instance, options), encoding="utf-8")
        tmp.replace(loop)  # last: a folder with a loop.toml is a prepared one
    model = f"scripted:{folder / 'oracle.json'}" if options.model in ORACLES else options.model
    workspace = str(folder / "repo")  # named, so the Ray backend finds the repository to ship
    return BatchTask(
        name=instance.instance_id, loop=str(loop), model=model, workspace=workspace,
        runner=options.runner,
    )  # fmt: skip


def attempt_name(instance_id: str, attempt: int) -> str:
    """The batch task of an instance's attempt: its id for the first, ``<id>.<n>`` after."""
    return instance_id if attempt == 1 else f"{instance_id}.{attempt}"


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
    return "\n".join(
        [
            f"name = {toml_string(instance.instance_id)}",
            f"goal = {toml_string(goal)}",
            'workspace = "repo"',
            'isolation = "worktree"',
            f"max_iterations = {options.max_iterations}",
            "",
            "[[gates]]",
            'type = "pytest"',
            f"args = {toml_string(tests)}",
            'held_out = "held_out"',
            f"feedback = {toml_string(options.feedback)}",
            "",
            "[critic]",
            "enabled = false",
            "",
            *env_section(instance, options.envs),
        ]
    )


def env_section(instance: Instance, envs: EnvTable | None) -> list[str]:
    """``[env]``: the table's set-up command, run once at the instance's environment commit; or
    ``[sandbox]``: the table's image, the workspace at its folder, one container kept."""
    recipe = envs.recipe(instance) if envs is not None else None
    if recipe is None:
        return []
    image = recipe.image_of(instance)
    if image is not None:
        lines = ["[sandbox]", f"backend = {toml_string(recipe.engine)}"]
        lines += [f"image = {toml_string(image)}", f"workdir = {toml_string(recipe.workdir)}"]
        lines += ["keep = true"]
        if recipe.python is not None:
            lines.append(f"image_python = {toml_string(recipe.python)}")
        return [*lines, ""]
    assert recipe.setup is not None  # an entry gives an image or a set-up command
    commit = instance.environment_setup_commit or instance.base_commit
    lines = ["[env]", f"setup = {toml_string(recipe.setup)}", f"commit = {toml_string(commit)}"]
    if recipe.python is not None:
        lines.append(f"python = {toml_string(recipe.python)}")
    return [*lines, ""]


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string."""
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def write_outputs(
    instances: Sequence[Instance], model: str, out: Path, *, attempts: int = 1
) -> BenchSummary:
    """``preds.jsonl`` (first attempts), ``results.jsonl`` (every attempt that ended) and
    ``bench.json``, from the batch's records."""
    predictions: list[str] = []
    results: list[InstanceResult] = []
    for instance in instances:
        for attempt in range(1, attempts + 1):
            name = attempt_name(instance.instance_id, attempt)
            record = read_record(out / "batch", name)
            if record is None or not record.ended:
                continue
            results.append(result_of(instance, attempt, record, out))
            patch = model_patch(instance, record, out)
            write_traj(out, name, instance, record, patch)
            if attempt == 1:
                line = {"instance_id": instance.instance_id, "model_name_or_path": model}
                predictions.append(json.dumps({**line, "model_patch": patch}))
    write_lines(out / PREDICTIONS, predictions)
    write_lines(out / RESULTS, [r.model_dump_json() for r in results])
    summary = summarise(model, [i.instance_id for i in instances], attempts, results)
    nofollow.write_atomic(out / SUMMARY, summary.model_dump_json(indent=2).encode("utf-8"))
    return summary


def write_lines(path: Path, lines: list[str]) -> None:
    nofollow.write_atomic(path, "".join(f"{line}\n" for line in lines).encode("utf-8"))


def result_of(instance: Instance, attempt: int, record: TaskRecord, out: Path) -> InstanceResult:
    run = attempt_run(out, instance, record)
    events = run / EVENTS_FILE if run is not None else None
    return InstanceResult(
        instance_id=instance.instance_id,
        attempt=attempt,
        resolved=record.status == "passed",
        status=record.status,
        stop_reason=record.stop_reason,
        rounds=record.rounds,
        tokens=record.tokens,
        cost_usd=record.cost_usd,
        seconds=record.seconds,
        branch=record.branch,
        trajectory=str(events) if events is not None and events.is_file() else None,
    )


def attempt_run(out: Path, instance: Instance, record: TaskRecord) -> Path | None:
    """The folder of the attempt's run; None when the attempt never started one."""
    return run_folder(instance_folder(out, instance), record.run_id) if record.run_id else None


def write_traj(out: Path, name: str, instance: Instance, record: TaskRecord, patch: str) -> None:
    """``trajs/<name>.traj``: the trajectory of the attempt ``name`` in SWE-agent's form."""
    run = attempt_run(out, instance, record)
    if run is None or not (run / TRAJECTORY_FILE).is_file():
        return
    traj = swe_agent_traj(
        Trajectory.load(run), submission=patch, exit_status=record.stop_reason or record.status
    )
    path = out / TRAJS / f"{name}.traj"
    nofollow.write_atomic(path, json.dumps(traj, indent=1).encode("utf-8"))


def model_patch(instance: Instance, record: TaskRecord, out: Path) -> str:
    """What the agent changed: the diff from the base to its run branch's last commit."""
    if not record.branch:
        return ""
    repo = instance_folder(out, instance) / "repo"
    return git(repo, "diff", "--binary", instance.base_commit, record.branch)
