"""Secret canaries in the harness's environment never reach what the run writes or prints.

The canaries are secret-named, marked secret in ``[redact]``, a password inside DATABASE_URL and
a value read from a file; the agent reads them back from a file, a model reply repeats them, and
a tool prints a high-entropy token. None may appear in events.jsonl, progress.md, the escalation
report, the text and HTML reports, or the CLI's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import git, make_repo
from tests.openai_server import OpenAIServer, Status

NAMED = "named-canary-7f3a9b"  # CANARY_API_KEY
MARKED = "marked-canary-2d8e41"  # BILLING_REF, listed in [redact] env
IN_URL = "urlpw-canary-5c1f77"  # the password inside DATABASE_URL
FROM_FILE = "filed-canary-9a4b20"  # listed in a [redact] values_from file
TOKEN = "Qw7ZtR2mLx9KbV4nHc8PsY3dFj6G"  # high entropy, printed by a tool
CANARIES = (NAMED, MARKED, IN_URL, FROM_FILE, TOKEN)


def _harness(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_canary_reaches_any_output(tmp_path: Path) -> None:
    leak = f"{NAMED} {MARKED} postgres://app:{IN_URL}@db/main {FROM_FILE}"
    project = make_repo(tmp_path / "project", {"notes.txt": leak + "\n"})
    (tmp_path / "secrets.txt").write_text(FROM_FILE + "\n")
    script = [
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "run_shell", "arguments": {"command": f"echo token={TOKEN}; cat notes.txt"}},
        f"I saw {leak} and {TOKEN}",
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(
        textwrap.dedent(f"""\
        name = "leaky"
        goal = "make the gate pass"
        model = "scripted:../script.json"
        max_iterations = 1
        [redact]
        env = ["BILLING_REF"]
        values_from = ["../secrets.txt"]
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        name = "never"
        cmd = "echo {TOKEN}; false"
        """)
    )
    (project / ".gitignore").write_text(".harness/\nprogress/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    env = {
        **os.environ,
        "CANARY_API_KEY": NAMED,
        "BILLING_REF": MARKED,
        "DATABASE_URL": f"postgres://app:{IN_URL}@db/main",
    }

    run = _harness("run", cwd=project, env=env)
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    text_report = _harness("report", run_dir.name, "--html", "report.html", cwd=project, env=env)

    assert run.returncode == 3, run.stderr
    assert text_report.returncode == 0, text_report.stderr
    outputs = {
        "events.jsonl": (run_dir / "events.jsonl").read_text(),
        "progress.md": (project / "progress" / "leaky.md").read_text(),
        "escalation": (project / "progress" / "leaky.escalation.md").read_text(),
        "html report": (project / "report.html").read_text(),
        "text report": text_report.stdout + text_report.stderr,
        "cli": run.stdout + run.stderr,
    }
    # the run did see them: the agent read the file and the model repeated it
    assert "[REDACTED]" in outputs["events.jsonl"]
    assert "postgres://app:[REDACTED]@db/main" in outputs["progress.md"]  # the final answer
    leaks = {where: [c for c in CANARIES if c in text] for where, text in outputs.items()}
    assert leaks == {where: [] for where in outputs}


def test_a_key_echoed_in_a_provider_error_is_redacted(tmp_path: Path) -> None:
    key = "sk-canary-" + "Zq7Wx3Lm9Kp2Vb8N"
    project = make_repo(tmp_path / "project", {"x.txt": "x\n"})
    with OpenAIServer(deadline=120) as server:
        server.queue(Status(401, f"Incorrect API key provided: {key}. See your account."))
        (project / "loop.toml").write_text(
            textwrap.dedent(f"""\
            name = "echo"
            goal = "make the gate pass"
            model = "openai/test-model"
            max_iterations = 1
            [model_options]
            api_base = "{server.api_base}"
            num_retries = 0
            [critic]
            enabled = false
            [[gates]]
            type = "command"
            cmd = "false"
            """)
        )
        (project / ".gitignore").write_text(".harness/\nprogress/\n")
        git(project, "add", "-A")
        git(project, "commit", "-qm", "loop")
        env = {**os.environ, "OPENAI_API_KEY": key}

        run = _harness("run", cwd=project, env=env)

    assert run.returncode != 0
    assert len(server.requests) == 1
    said = run.stdout + run.stderr
    assert "Incorrect API key provided: [REDACTED]" in said  # the provider's words, no key
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    written = [
        (run_dir / "events.jsonl").read_text(),
        (project / "progress" / "echo.md").read_text(),
        *(p.read_text() for p in (project / "progress").glob("*.escalation.md")),
    ]
    assert [key in text for text in (said, *written)] == [False] * (1 + len(written))
