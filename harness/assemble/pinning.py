"""A loop.toml's configuration and code, as they were when its run began.

The agent's shell writes the folder it works in. Two rules keep what it writes there out of the
harness's own process:

* a python gate whose module lies in the folder the agent writes is refused, never imported
  (:func:`check_gate_modules`): move it out, or make it a command gate, which runs sandboxed;
* a resumed run (progress.md begun) whose loop.toml, SKILL.md, python gate modules or hook
  programs are no longer the files pinned when it began is refused before any of them is used
  (:func:`check_unchanged`); :func:`pinned_files` names them.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.core.errors import ConfigError
from harness.memory.progress import Progress
from harness.memory.progress_terms import Status
from harness.memory.run_state import RunState
from harness.outer.pins import Pin, first_changed, pin
from harness.spec.loop_spec import LoopSpec
from harness.verify.gate_config import ScriptGateConfig
from harness.workspace.git import chosen_isolation


def module_files(target: str, root: Path) -> list[Path]:
    """The files under ``root`` that importing ``target``'s module (``pkg.mod:fn``) would run:
    each package's ``__init__.py`` and the module itself. None for a module found elsewhere."""
    parts = target.partition(":")[0].split(".")
    found, folder = [], root
    for index, part in enumerate(parts):
        package = folder / part
        if (package / "__init__.py").is_file():
            found.append(package / "__init__.py")
        if index == len(parts) - 1 and (folder / f"{part}.py").is_file():
            found.append(folder / f"{part}.py")
        folder = package
    return found


def hook_programs(command: str | None, root: Path) -> list[Path]:
    """The files a hook command names by path (absolute, or relative to loop.toml's folder)."""
    if not command:
        return []
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    named = (root / Path(word).expanduser() for word in words if "/" in word or "." in word)
    return [path for path in named if path.is_file()]


def pinned_files(spec: LoopSpec) -> list[Path]:
    """What the run's configuration and code come from: loop.toml, SKILL.md, the python gates'
    modules under the loop's folder and the programs its command hooks name."""
    root = spec.root
    files = [Path(spec.source)] if isinstance(spec.source, Path) else []
    if spec.skill:
        files.append(root / spec.skill)
    for gate in spec.gates:
        if isinstance(gate, ScriptGateConfig):
            files.extend(module_files(gate.target, root))
    files.extend(hook_programs(spec.on_round, root))
    files.extend(hook_programs(spec.on_escalate, root))
    return files


def pins_of(spec: LoopSpec) -> tuple[Pin, ...]:
    return pin(pinned_files(spec))


def check_gate_modules(spec: LoopSpec) -> None:
    """Refuse a python gate whose module lies in the folder the agent writes (in place)."""
    workspace = (spec.root / spec.workspace).resolve()
    if chosen_isolation(workspace, spec.isolation) == "worktree":
        return  # the agent writes its own worktree; the modules here are out of its reach
    for index, gate in enumerate(spec.gates):
        if not isinstance(gate, ScriptGateConfig):
            continue
        files = module_files(gate.target, spec.root)
        inside = [f for f in files if f.resolve().is_relative_to(workspace)]
        if inside:
            raise ConfigError(
                f"field 'gates[{index}]': python gate {gate.target!r}: {inside[0]} lies in the "
                f"workspace the agent writes ({workspace}), so it is not imported into the "
                "harness; move the module out of the workspace, or make it a command gate "
                '(type = "command", which runs inside the sandbox)'
            )


def check_unchanged(spec: LoopSpec) -> None:
    """Refuse to resume a run whose pinned files changed since it began."""
    path = spec.progress_path()
    if not path.is_file():
        return
    progress = Progress.load(path)
    if progress.status is Status.NOT_STARTED:
        return
    state = RunState.read(progress)
    recorded = dict(state.pins)
    # else a file the run did not pin at its start (a gate module loop.toml names only now)
    new = (name for name, _ in pins_of(spec) if recorded and name not in recorded)
    changed = first_changed(state.pins) or next(new, None)
    if changed is None:
        return
    raise ConfigError(
        f"{changed}: changed since the run began (round {progress.iteration} of {path}); "
        "nothing in it was used. Put it back as it was, or start over with --restart "
        "(--max-iterations raises the round cap without editing loop.toml)"
    )
