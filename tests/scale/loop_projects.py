"""A repository whose loop.toml (and scripted model) travel inside it: one task of a batch."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import write_loop
from tests.conftest import git, make_repo


def loop_project(folder: Path, answer: str, gate: str, *, extra: str = "") -> Path:
    """The agent writes ``answer`` to out.txt; ``gate`` (a shell command) judges it."""
    repo = make_repo(folder, {"README.md": "hi\n"})
    script = [{"name": "write_file", "arguments": {"path": "out.txt", "content": answer}}, "done"]
    (repo / "script.json").write_text(json.dumps(script))
    write_loop(
        repo,
        f"""\
        goal = "out.txt says yes"
        model = "scripted:script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "says yes"
        cmd = '''{gate}'''
        """
        + extra,
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "loop")
    return repo
