"""More ways a crafted recording might try to decide something in `harness replay`, `show`,
`report` or `runs`: each decides nothing (see docs/trajectories.md, "A recording is data")."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.core.text import inert
from tests.cli.test_cli import harness
from tests.cli.test_replay_hostile import (
    PAYLOAD,
    RAW,
    _command,
    _edit,
    _evil_shell,
    _project,
    recorded,
)
from tests.conftest import make_repo
from tests.replay.test_replay import LOOP

__all__ = ["recorded"]  # the module's fixture, shared

HEX = "ab" * 32


def _header(**fields: Any) -> Any:
    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "run_start":
            record.update(fields)

    return change


@pytest.mark.parametrize("base", ["--orphan=evil", "-b", "HEAD~1", "main", "abc", "0" * 65])
def test_a_base_commit_that_is_not_a_commit_id_is_refused(
    recorded: tuple[Path, str], tmp_path: Path, base: str
) -> None:
    root, kept = _project(recorded, tmp_path)
    _edit(kept, _header(base=base))
    replay = harness("replay", str(kept.relative_to(root)), cwd=root)
    assert replay.returncode == 2, replay.stdout + replay.stderr
    assert "base" in replay.stderr
    assert "recorded again" not in replay.stdout


def test_without_a_loop_toml_of_the_users_the_recordings_is_never_taken(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    (kept / "loop.toml").write_text(LOOP)  # beside the recording, and named by it
    _edit(kept, _header(loop_file=str(kept / "loop.toml"), repo_root=str(root)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    replay = harness("replay", str(kept), cwd=elsewhere)
    assert replay.returncode == 2, replay.stdout + replay.stderr
    assert "harness: loop.toml: no such file" in replay.stderr
    assert "--loop names the loop.toml to replay with" in replay.stderr
    assert not (kept / ".harness").exists()


def test_a_repo_root_naming_another_repository_is_not_used(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    other = make_repo(
        tmp_path / "other",
        {
            "loop.toml": LOOP + f'[sandbox]\nbackend = "none"\n[[gates]]\ntype = "command"\n'
            f'name = "x"\ncmd = "touch {outside}/gate-ran"\n'
        },  # fmt: skip
    )
    _edit(kept, _header(repo_root=str(other), loop_file=str(other / "loop.toml")))
    replay = harness("replay", str(kept.relative_to(root)), cwd=root)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert list(outside.iterdir()) == []
    assert not (other / ".harness").exists()  # the replay's run is kept beside the user's loop
    assert (root / ".harness" / "runs").is_dir()


def test_a_loop_outside_the_repo_named_is_refused(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    other = make_repo(tmp_path / "other", {"x": "y"})
    replay = harness("replay", str(kept), "--repo", str(other), cwd=root)
    assert replay.returncode == 2
    assert "not inside the repository to replay in" in replay.stderr


def test_a_recorded_command_gets_no_secret_from_the_environment(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    _edit(kept, _command("env; cat out.txt"))
    replay = harness("replay", str(kept.relative_to(root)), cwd=root,
                     env={"OPENAI_API_KEY": "sk-CANARYREPLAY0123456789abcdef"})  # fmt: skip
    assert replay.returncode == 3, replay.stdout + replay.stderr
    written = "".join(
        p.read_text(errors="replace") for p in (root / ".harness").rglob("*") if p.is_file()
    )
    assert "CANARYREPLAY" not in written + replay.stdout + replay.stderr
    # the command's environment was recorded: the check could fail
    shell = [line for line in written.splitlines() if '"name":"run_shell"' in line]
    assert "HOME=" in written, "\n".join([replay.stdout, replay.stderr, *shell])


def test_a_recorded_command_reaches_no_network(recorded: tuple[Path, str], tmp_path: Path) -> None:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        root, kept = _project(recorded, tmp_path)
        port = server.server_address[1]
        fetch = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/leak', timeout=3)"
        _edit(kept, _command(f'python3 -c "{fetch}"; cat out.txt'))
        replay = harness("replay", str(kept.relative_to(root)), cwd=root)
        assert replay.returncode == 3, replay.stdout + replay.stderr
    finally:
        server.shutdown()
        server.server_close()
    assert hits == []


def test_a_recorded_write_outside_the_workspace_is_refused(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    arguments = json.dumps({"path": str(outside / "planted.txt"), "content": "x"})

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "model_call":
            for call in record["reply"]["tool_calls"]:
                if call["name"] == "write_file":
                    call["arguments"] = arguments

    _edit(kept, change)
    replay = harness("replay", str(kept.relative_to(root)), cwd=root)
    assert replay.returncode == 3, replay.stdout + replay.stderr
    assert list(outside.iterdir()) == []


def test_a_recorded_workspace_names_a_folder_that_is_never_written(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    _edit(kept, _header(workspace=str(outside), folder="../.."))
    _edit(kept, _evil_shell(outside))
    replay = harness("replay", str(kept.relative_to(root)), cwd=root)
    assert replay.returncode in (0, 3), replay.stdout + replay.stderr
    assert list(outside.iterdir()) == []


def test_a_side_folder_that_is_a_link_is_not_followed(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / HEX).write_text("CANARY-LINKED-FOLDER")
    blobs = kept / "trajectory-blobs"
    if blobs.exists():
        for blob in blobs.iterdir():
            (outside / blob.name).write_bytes(blob.read_bytes())
        for blob in blobs.iterdir():
            blob.unlink()
        blobs.rmdir()
    blobs.symlink_to(outside)

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "tool_call" and record["name"] == "read_file":
            record["observation"] = {"blob": HEX, "chars": 20}

    _edit(kept, change)
    shown = harness("show", str(kept.relative_to(root)), cwd=root)
    assert shown.returncode != 0
    assert "CANARY-LINKED-FOLDER" not in shown.stdout + shown.stderr
    assert "link" in shown.stderr


def test_a_blob_that_is_a_link_is_not_followed(recorded: tuple[Path, str], tmp_path: Path) -> None:
    root, kept = _project(recorded, tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("CANARY-LINKED-BLOB")
    (kept / "trajectory-blobs").mkdir(exist_ok=True)
    (kept / "trajectory-blobs" / HEX).symlink_to(secret)

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "tool_call" and record["name"] == "read_file":
            record["observation"] = {"blob": HEX, "chars": 18}

    _edit(kept, change)
    for args in (("show",), ("report", "--html", "page.html")):
        result = harness(*args[:1], str(kept.relative_to(root)), *args[1:], cwd=root)
        assert result.returncode != 0
        assert "CANARY-LINKED-BLOB" not in result.stdout + result.stderr
    assert not (root / "page.html").exists()


@pytest.mark.parametrize("name", [HEX.upper(), HEX[:-1], HEX + "\n", HEX + "/x", f"{HEX}\x00"])
def test_a_blob_name_near_the_shape_is_still_refused(
    recorded: tuple[Path, str], tmp_path: Path, name: str
) -> None:
    root, kept = _project(recorded, tmp_path)

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "tool_call" and record["name"] == "read_file":
            record["observation"] = {"blob": name, "chars": 5}

    _edit(kept, change)
    shown = harness("show", str(kept.relative_to(root)), cwd=root)
    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert "blob" in shown.stderr


def test_a_message_content_blob_and_a_trajectory_link_are_refused(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    secret = tmp_path / "secret.jsonl"
    secret.write_text("CANARY-LINKED-TRAJECTORY\n")

    def change(record: dict[str, Any]) -> None:
        if record["kind"] == "model_call":
            record["request"]["messages"].append({"role": "user", "content": {"blob": "../x"}})

    _edit(kept, change)
    shown = harness("show", str(kept.relative_to(root)), cwd=root)
    assert shown.returncode == 2
    assert "not a blob's name" in shown.stderr
    (kept / "trajectory.jsonl").unlink()
    (kept / "trajectory.jsonl").symlink_to(secret)
    linked = harness("show", str(kept.relative_to(root)), cwd=root)
    assert linked.returncode != 0
    assert "CANARY-LINKED-TRAJECTORY" not in linked.stdout + linked.stderr


def test_escapes_in_an_error_message_and_the_run_list_are_inert(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    root, kept = _project(recorded, tmp_path)
    events = kept / "events.jsonl"
    events.write_text(events.read_text().replace("out.txt must say yes", json.dumps(PAYLOAD)[1:-1]))
    (root / ".harness" / "runs").mkdir(parents=True)
    os.symlink(kept, root / ".harness" / "runs" / kept.name)
    listed = harness("runs", cwd=root)
    assert listed.returncode == 0, listed.stderr
    assert kept.name in listed.stdout
    bad = kept / "trajectory.jsonl"
    bad.write_text(f'{{"kind": "{PAYLOAD}"}}\n{bad.read_text()}')
    failed = harness("show", str(kept.relative_to(root)), cwd=root)
    assert failed.returncode == 2
    assert "not a valid trajectory record" in failed.stderr
    for result in (listed, failed):
        assert RAW.findall(result.stdout + result.stderr) == []


def test_inert_takes_out_every_control_and_keeps_the_text() -> None:
    text = "a\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ b\x9d0;t\x9c c\u2066d\u2069 e\u202d\x00f\tg\nh"
    assert inert(text) == "alink b0;t cd ef\tg\nh"
    assert inert("x\ny\tz", multiline=False) == "x y z"
    assert RAW.findall(inert("".join(map(chr, range(0x00, 0xA0))))) == []
