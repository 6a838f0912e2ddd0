"""A stand-in for docker/podman: an executable the tests put on PATH.

It records every argv it is called with and runs ``run``'s command as a real process that, like
a container under a daemon, is not the client's child in any way that matters: it has its own
session, so killing the client leaves it running until ``rm -f``/``kill`` names it. It honours
``--ulimit fsize`` and ``-e`` (a bare ``-e NAME`` takes the value from its own environment), and
ends the whole "container" when its first process ends, as a PID namespace does. ``exec`` runs a
command "in" a running container; a bind mount is honoured for the folder a command starts in
(``-w /testbed`` is the host folder mounted there), not for paths in the command.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.sandbox import engine as engine_module
from harness.sandbox import kept

SCRIPT = r"""#!{python}
import json, os, resource, signal, subprocess, sys, time
from pathlib import Path

STATE = Path({state!r})
MODE = (STATE / "mode").read_text().strip()
args = sys.argv[1:]
with open(STATE / "argv.jsonl", "a") as log:
    log.write(json.dumps(args) + "\n")
boxes = STATE / "containers"
boxes.mkdir(exist_ok=True)
verb = args[0]

if verb == "info":
    if MODE == "down":
        print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock.", file=sys.stderr)
        sys.exit(1)
    if MODE == "hang":
        time.sleep(1000)
    sys.exit(0)
if verb == "image":
    if MODE == "noimage":
        print(f"Error: No such image: {{args[-1]}}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
if verb == "ps":
    wanted = [a[len("label="):] for a in args if a.startswith("label=")]
    for box in sorted(boxes.iterdir()):
        if all(w in json.loads(box.read_text())["labels"] for w in wanted):
            print(box.name)
    sys.exit(0)
if verb in ("rm", "kill"):
    for name in [a for a in args[1:] if not a.startswith("-")]:
        box = boxes / name
        try:
            pid = json.loads(box.read_text())["pid"]
            os.killpg(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
        box.unlink(missing_ok=True)
    sys.exit(0)
if verb not in ("run", "exec"):
    sys.exit(2)
if verb == "run" and MODE == "norun":
    print("Error response from daemon: the container could not start", file=sys.stderr)
    sys.exit(125)
(STATE / "client-env.json").write_text(json.dumps(dict(os.environ)))

VALUED = {{"--name", "--pull", "--label", "--network", "--tmpfs", "--memory", "--memory-swap",
          "--pids-limit", "--ulimit", "--cap-drop", "--security-opt", "--user", "--userns", "--mount", "-w",
          "-e", "--entrypoint"}}
options, i = [], 1
while args[i].startswith("-"):
    if args[i] in VALUED:
        options.append((args[i], args[i + 1]))
        i += 2
    else:
        options.append((args[i], None))
        i += 1
if verb == "exec":
    box = boxes / args[i]
    if not box.exists():
        print(f"Error: No such container: {{args[i]}}", file=sys.stderr)
        sys.exit(1)
    mounts = json.loads(box.read_text()).get("mounts", [])
    command = args[i + 1:]
else:
    mounts = [dict(field.split("=", 1) for field in value.split(",") if "=" in field)
              for flag, value in options if flag == "--mount"]
    command = [dict(options)["--entrypoint"], *args[i + 1:]]

def on_host(path):  # a bind mount, for the folder a command starts in: its host path
    for mount in mounts:
        target = mount["target"].rstrip("/")
        if path == target or path.startswith(target + "/"):
            return mount["source"] + path[len(target):]
    return path

env = {{"PATH": {image_path!r}}}  # the "image": this system's programs and the test's Python
fsize = None
for flag, value in options:
    if flag == "-e":
        name, eq, given = value.partition("=")
        if eq:
            env[name] = given
        elif name in os.environ:
            env[name] = os.environ[name]
    if flag == "--ulimit" and value.startswith("fsize="):
        fsize = int(value.split("=")[1].split(":")[0])

def limits():
    if fsize is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

cwd = on_host(dict(options).get("-w", "/"))
if verb == "exec":  # in the client's own session: killing the client ends it
    sys.exit(subprocess.run(command, cwd=cwd, env=env, preexec_fn=limits).returncode)
proc = subprocess.Popen(command, cwd=cwd, env=env, start_new_session=True, preexec_fn=limits)
name = dict(options)["--name"]
labels = [value for flag, value in options if flag == "--label"]
(boxes / name).write_text(json.dumps({{"pid": proc.pid, "labels": labels, "mounts": mounts}}))
code = proc.wait()
try:
    os.killpg(proc.pid, signal.SIGKILL)  # the first process ended: the whole container ends
except ProcessLookupError:
    pass
(boxes / name).unlink(missing_ok=True)  # --rm
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class FakeEngine:
    """A fake engine installed as ``bin/<name>``; ``mode``: ok, down, hang, noimage or norun
    (no container starts)."""

    state: Path
    bin: Path

    def set_mode(self, mode: str) -> None:
        (self.state / "mode").write_text(mode)

    def calls(self, verb: str | None = None) -> list[list[str]]:
        log = self.state / "argv.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        calls = [json.loads(line) for line in lines]
        return [c for c in calls if verb is None or c[0] == verb]

    def client_env(self) -> dict[str, str]:
        """The environment the last ``run`` client was started with."""
        env: dict[str, str] = json.loads((self.state / "client-env.json").read_text())
        return env

    def containers(self) -> list[str]:
        folder = self.state / "containers"
        return sorted(p.name for p in folder.iterdir()) if folder.exists() else []

    def plant(self, name: str, pid: int, labels: list[str]) -> None:
        """A container the fake did not start (another harness's), running process ``pid``."""
        (self.state / "containers").mkdir(exist_ok=True)
        (self.state / "containers" / name).write_text(json.dumps({"pid": pid, "labels": labels}))


def install(folder: Path, name: str = "docker", *, mode: str = "ok") -> FakeEngine:
    """Write the fake engine as ``folder/bin/name``; put ``folder/bin`` first on PATH yourself."""
    state, bin_dir = folder / "engine-state", folder / "bin"
    state.mkdir(parents=True)
    bin_dir.mkdir()
    script = bin_dir / name
    image_path = os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin",
                                  "/bin"])  # fmt: skip
    script.write_text(SCRIPT.format(python=sys.executable, state=str(state), image_path=image_path))
    script.chmod(0o755)
    engine = FakeEngine(state, bin_dir)
    engine.set_mode(mode)
    return engine


def path_with(engine: FakeEngine) -> str:
    return f"{engine.bin}{os.pathsep}{os.environ.get('PATH', os.defpath)}"


ANSWER_SECONDS = 120.0
"""How long the harness waits for the fake to answer (10 s for a real engine): each answer
starts a Python, which a machine busy with the rest of the suite can hold past 10 s, and that
must not read as an engine that never answers. Tests of that case set their own bound."""


def on_path(
    folder: Path, monkeypatch: pytest.MonkeyPatch, name: str = "docker", *, mode: str = "ok"
) -> FakeEngine:
    """:func:`install` the fake first on PATH, given :data:`ANSWER_SECONDS` to answer."""
    engine = install(folder, name, mode=mode)
    monkeypatch.setenv("PATH", path_with(engine))
    monkeypatch.setattr(engine_module, "ENGINE_SECONDS", ANSWER_SECONDS)
    monkeypatch.setattr(kept, "ENGINE_SECONDS", ANSWER_SECONDS)
    return engine
