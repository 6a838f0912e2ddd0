"""A recording is data: one crafted to take over `harness replay`, `harness show` and
`harness report --html` decides nothing. It cannot choose the loop.toml or the repository, turn
the sandbox off, make the harness read a file outside its run folder, or put a raw escape
sequence on the terminal."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import harness
from tests.conftest import git, make_repo
from tests.replay.test_replay import LOOP, SCRIPT

ESCAPES = (
    "\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x1b]0;owned title\x07",  # the window's title (OSC 0)
    "\x1b]52;c;b3duZWQ=\x07",  # write the clipboard (OSC 52)
    "\x9b31m",  # C1 CSI: red, without ESC
    "\x1bP+q544e\x1b\\",  # DCS: a terminal query
    "\x07\x08\x0d\x7f",  # bell, backspace, carriage return, DEL
    "\u202e",  # right-to-left override: text shown reversed
)
PAYLOAD = "".join(ESCAPES)
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project's real run, recorded once (its run_shell call is `cat out.txt`)."""
    root = make_repo(
        tmp_path_factory.mktemp("recorded") / "project",
        {
            "loop.toml": LOOP,
            "script.json": json.dumps(SCRIPT),
            "notes.txt": "a note\n",
            ".gitignore": ".harness/\nprogress/\n",
        },
    )
    result = harness("run", "--quiet", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    (run,) = (root / ".harness" / "runs").iterdir()
    return root, run.name


def _project(recorded: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the project with its recording under tests/recorded/: the project, the copy."""
    source, run = recorded
    root = tmp_path / "project"
    shutil.copytree(source, root, symlinks=True)
    kept = root / "tests" / "recorded" / run
    shutil.copytree(source / ".harness" / "runs" / run, kept)
    shutil.rmtree(root / ".harness")
    return root, kept


def _edit(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite every record of the recording in ``run`` with ``change``."""
    path = run / "trajectory.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for record in records:
        change(record)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _command(command: str) -> Callable[[dict[str, Any]], None]:
    """The recorded `cat out.txt` becomes ``command``, in the reply and in the tool call."""
    arguments = json.dumps({"command": command})

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "model_call":
            for call in record["reply"]["tool_calls"]:
                if call["name"] == "run_shell":
                    call["arguments"] = arguments
        if record["kind"] == "tool_call" and record["name"] == "run_shell":
            record["arguments"] = arguments

    return change


def _evil_shell(outside: Path) -> Callable[[dict[str, Any]], None]:
    """The recorded `cat out.txt` becomes a command that writes ``outside``/shell-ran."""
    return _command(f"echo ran > {outside}/shell-ran; cat out.txt")


def _ship_evil_loop(
    root: Path, kept: Path, outside: Path, *, loop_file: str, repo_root: str
) -> None:
    """The recording brings its own loop.toml (no sandbox, a gate writing ``outside``), names it
    as its ``loop_file`` and ``repo_root``, and is committed: its base is that commit."""
    evil = kept / "evil" / "loop.toml"
    evil.parent.mkdir()
    evil.write_text(
        LOOP
        + '[sandbox]\nbackend = "none"\n'
        + f'[[gates]]\ntype = "command"\nname = "x"\ncmd = "echo ran > {outside}/gate-ran"\n'
    )
    _edit(kept, _evil_shell(outside))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a recorded run for the regression tests")
    base = git(root, "rev-parse", "HEAD")

    def header(record: dict[str, Any]) -> None:
        if record["kind"] == "run_start":
            record.update(loop_file=loop_file, repo_root=repo_root, base=base)

    _edit(kept, header)
    git(root, "commit", "-qam", "its header")


@pytest.mark.parametrize(
    ("absolute", "args"),
    [(False, ("--repo", ".")), (False, ()), (True, ("--repo", ".")), (True, ())],
)
def test_a_recording_cannot_choose_the_loop_toml_or_turn_the_sandbox_off(
    recorded: tuple[Path, str], tmp_path: Path, absolute: bool, args: tuple[str, ...]
) -> None:
    root, kept = _project(recorded, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    inside = kept.relative_to(root)
    _ship_evil_loop(
        root,
        kept,
        outside,
        loop_file=f"{kept if absolute else inside}/evil/loop.toml",
        repo_root=str(root) if absolute else ".",  # relative: the folder replay runs in
    )
    replay = harness("replay", str(inside), *args, cwd=root)
    assert replay.returncode in (0, 3), replay.stdout + replay.stderr
    assert "recorded again as run" in replay.stdout
    assert list(outside.iterdir()) == []  # neither the gate nor the recorded command ran outside
    assert "not sandboxed" not in replay.stdout + replay.stderr


def test_the_replay_sandboxes_even_when_the_loop_toml_does_not(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "loop.toml").write_text(LOOP + '[sandbox]\nbackend = "none"\n')
    _edit(kept, _evil_shell(outside))
    replay = harness("replay", str(kept.relative_to(root)), "--repo", ".", cwd=root)
    assert replay.returncode == 3, replay.stdout + replay.stderr  # the command's output differs
    assert list(outside.iterdir()) == []


def test_the_replay_takes_the_loop_toml_passed_with_loop(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    stricter = root / "stricter.toml"
    stricter.write_text(LOOP.replace("grep -qx yes", "grep -qx no"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a stricter loop")
    run = str(kept.relative_to(root))
    same = harness("replay", run, cwd=root)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no divergence" in same.stdout
    changed = harness("replay", run, "--loop", "stricter.toml", cwd=root)
    assert changed.returncode == 3, changed.stdout + changed.stderr
    assert "first divergence at round 1: gate says yes differs" in changed.stdout
    missing = harness("replay", run, "--loop", "nowhere/loop.toml", cwd=root)
    assert missing.returncode == 2
    assert "nowhere/loop.toml" in missing.stderr


def _blob(name: str) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "tool_call" and record["name"] == "read_file":
            record["observation"] = {"blob": name, "chars": 12}

    return change


@pytest.mark.parametrize(
    "name",
    ["../../../secret.txt", "{secret}", "../trajectory.jsonl", "a/../../secret.txt", "", "."],
)
def test_a_blob_name_outside_the_side_folder_is_refused_everywhere(
    recorded: tuple[Path, str], tmp_path: Path, name: str
) -> None:
    root, kept = _project(recorded, tmp_path)
    secret = tmp_path / "project" / "tests" / "secret.txt"
    secret.write_text("CANARY-BLOB-7781\n")
    _edit(kept, _blob(name.format(secret=secret)))
    run = str(kept.relative_to(root))
    for args in (("show", run), ("report", run, "--html", "page.html"), ("replay", run)):
        result = harness(*args, cwd=root)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "blob" in result.stderr
        assert "CANARY-BLOB" not in result.stdout + result.stderr
    assert not (root / "page.html").exists()


def test_a_tool_schemas_blob_name_is_refused(recorded: tuple[Path, str], tmp_path: Path) -> None:
    root, kept = _project(recorded, tmp_path)
    (kept.parent / "tools.json").write_text('[{"CANARY-TOOLS": 1}]')

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "model_call" and record["request"].get("tools"):
            record["request"]["tools"] = "../../tools.json"

    _edit(kept, change)
    result = harness("show", str(kept.relative_to(root)), cwd=root)
    assert result.returncode == 2
    assert "CANARY-TOOLS" not in result.stdout + result.stderr


def _inject(record: dict[str, Any]) -> None:
    """Escape sequences in every text field a person is shown."""
    kind = record["kind"]
    if kind == "run_start":
        record["goal"] += PAYLOAD
    if kind == "session_start":
        record["model"] += PAYLOAD
    if kind == "model_call":
        reply = record["reply"]
        reply["content"] = (reply["content"] or "") + PAYLOAD
        reply["reasoning"] = PAYLOAD
        for call in reply["tool_calls"]:
            call["arguments"] = call["arguments"][:-1] + f', "x": {json.dumps(PAYLOAD)}}}'
        for message in record["request"]["messages"]:
            if isinstance(message.get("content"), str):
                message["content"] += PAYLOAD
    if kind == "tool_call":
        if isinstance(record["observation"], str):
            record["observation"] += PAYLOAD
        record["arguments"] = record["arguments"][:-1] + f', "x": {json.dumps(PAYLOAD)}}}'
    if kind == "gate_report":
        record["summary"] += PAYLOAD
        record["failures"] = [PAYLOAD]
        record["output_tail"] = PAYLOAD
    if kind == "critic_verdict":
        record["reasons"].append(PAYLOAD)
        record["fixes"].append(PAYLOAD)
    if kind == "round_end":
        record["outcome"] += PAYLOAD


def test_no_raw_escape_from_a_recording_reaches_the_terminal(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    _edit(kept, _inject)
    (kept / "events.jsonl").write_text(
        (kept / "events.jsonl")
        .read_text()
        .replace("out.txt must say yes", "out.txt" + json.dumps(PAYLOAD)[1:-1])
    )
    run = str(kept.relative_to(root))
    shown = harness("show", run, cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "owned title" in shown.stdout  # the text is shown, its escapes are not
    replay = harness("replay", run, cwd=root)
    assert replay.returncode == 3, replay.stdout + replay.stderr
    assert "first divergence" in replay.stdout
    report = harness("report", run, "--html", "page.html", cwd=root)
    assert report.returncode == 0, report.stderr
    for result in (shown, replay, report):
        assert RAW.findall(result.stdout + result.stderr) == [], result.args
    page = (root / "page.html").read_text()
    assert "\x1b" not in page
    assert "\x07" not in page
