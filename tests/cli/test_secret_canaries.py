"""Secret canaries in the harness's environment never reach what the run writes or prints.

The canaries are secret-named, marked secret in ``[redact]``, a password inside DATABASE_URL and
a value read from a file; the agent reads them back from a file, a model reply repeats them, and
a tool prints a high-entropy token. None may appear in events.jsonl, progress.md, the escalation
report, the text and HTML reports, or the CLI's output. Over litellm's real HTTP path, the same
canaries and values under plain names (a GitHub token, a Slack webhook) reach no request the
provider receives either.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import git, make_repo
from tests.openai_server import OpenAIServer, Status, Text, ToolCalls

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


def _unescaped(text: str) -> str:
    """``text`` with every ``\\uXXXX`` escape decoded, however deeply JSON is nested in it."""
    return re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)


def test_a_canary_spelled_with_json_escapes_in_tool_arguments_reaches_nothing(
    tmp_path: Path,
) -> None:
    """A model can write a secret inside a tool call's arguments with JSON escapes (``\\u002d``
    for ``-``; any JSON encoder does it to a non-ASCII character): the text holds no canary, but
    anything that decodes it does. The trajectory, the event log, the report and the live output
    must redact it by its value, as the requests to the model do."""
    escaped = NAMED.replace("-", "\\u002d")
    project = make_repo(tmp_path / "project", {"x.txt": "x\n"})
    script = [
        {"name": "run_shell", "arguments": f'{{"command": "echo {escaped} >/dev/null"}}'},
        {"name": "write_file", "arguments": f'{{"path": "out.txt", "{escaped}": "{escaped}"}}'},
        "done",
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    (project / "loop.toml").write_text(
        textwrap.dedent("""\
        name = "escaped"
        goal = "make the gate pass"
        model = "scripted:../script.json"
        max_iterations = 1
        [critic]
        enabled = false
        [[gates]]
        type = "command"
        cmd = "false"
        """)
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "loop")
    env = {**os.environ, "CANARY_API_KEY": NAMED}

    run = _harness("run", cwd=project, env=env)
    (run_dir,) = (project / ".harness" / "runs").iterdir()
    report = _harness("report", run_dir.name, "--html", "report.html", cwd=project, env=env)

    assert run.returncode == 3, run.stdout + run.stderr
    written = {
        str(path.relative_to(tmp_path)): path.read_text(errors="replace")
        for root in (project / ".harness", project / "progress", project / "report.html")
        for path in ([root] if root.is_file() else root.rglob("*"))
        if path.is_file()
    }
    trajectory = written[str((run_dir / "trajectory.jsonl").relative_to(tmp_path))]
    # the reply, the tool call, and the next request (the assistant's message)
    assert trajectory.count('\\"command\\": \\"echo [REDACTED] >/dev/null\\"') == 3
    everything = {**written, "run": run.stdout + run.stderr, "report": report.stdout}
    leaks = [where for where, text in everything.items() if NAMED in _unescaped(text)]
    assert leaks == []


GH_PAT = "ghp_" + "R8mKq2Vx7Lp4Wz9Nc3Bt6Hy1Jd5Fs0Ga2Qe4"  # a GitHub token under a plain name
SLACK = "T01AB2CDE/B03FG4HIJ/k9Zr2Lq7Wm4Xp8Vt3Ns6Yb1D"  # the secret path of a Slack webhook
PROVIDER_CANARIES = (*CANARIES[:3], TOKEN, GH_PAT, SLACK)


def test_no_canary_reaches_a_provider_or_anything_the_run_writes(tmp_path: Path) -> None:
    """Every channel a secret can take towards a model: a file the agent reads, the model's own
    reply echoed back, a tool's output, the round's diff (the critic), the critic's verdict and
    the gate's output (the next round's task, with the progress summary), and a provider error.
    None of the canaries may appear in any request the server receives, nor in any file the run
    writes, nor in what the CLI prints."""
    slack_url = f"https://hooks.slack.com/services/{SLACK}"
    leak = (
        f"{NAMED} {MARKED} postgres://app:{IN_URL}@db/main {TOKEN} {GH_PAT} {slack_url} "
        f"Authorization: Bearer {TOKEN}"
    )
    project = make_repo(tmp_path / "project", {"notes.txt": leak + "\n"})
    env = {
        **os.environ,
        "CANARY_API_KEY": NAMED,
        "BILLING_REF": MARKED,
        "DATABASE_URL": f"postgres://app:{IN_URL}@db/main",
        "GH_PAT": GH_PAT,
        "SLACK_WEBHOOK": slack_url,
    }

    def calls(*pairs: tuple[str, dict[str, str]]) -> ToolCalls:
        return ToolCalls(tuple((f"call_{i}", n, json.dumps(a)) for i, (n, a) in enumerate(pairs)))

    verdict = {"score": 2, "reasons": [f"out.txt leaks {leak}"], "fixes": [f"drop {GH_PAT}"]}
    with OpenAIServer(deadline=240) as server:
        server.queue(
            # round 1: read the file, echo through a tool, write it into the diff, say it
            calls(("read_file", {"path": "notes.txt"})),
            calls(("run_shell", {"command": f"echo {TOKEN} {GH_PAT}; cat notes.txt"})),
            calls(("write_file", {"path": "out.txt", "content": leak + "\n"})),
            Text(f"Done: out.txt holds {leak}"),
            Text(json.dumps(verdict)),  # the critic, who was shown the diff
            # round 2: the task carries progress and the critic's reasons; the gate fails
            calls(("write_file", {"path": "broken", "content": leak})),
            Text(f"Broke it with {leak}"),
            # round 3: the task carries the gate's output; the provider fails, echoing them
            Status(500, f"upstream rejected {leak}"),
        )
        (project / "loop.toml").write_text(
            textwrap.dedent(f"""\
            name = "leaky"
            goal = "make the gate pass"
            model = "openai/test-model"
            max_iterations = 3
            [model_options]
            api_base = "{server.api_base}"
            api_key = "not-a-real-key"
            num_retries = 0
            [redact]
            env = ["BILLING_REF"]
            [critic]
            threshold = 8
            [[gates]]
            type = "command"
            name = "leaky gate"
            cmd = "cat out.txt; test ! -e broken"
            """)
        )
        (project / ".gitignore").write_text(".harness/\nprogress/\n")
        git(project, "add", "-A")
        git(project, "commit", "-qm", "loop")
        run = _harness("run", cwd=project, env=env)
        (run_dir,) = (project / ".harness" / "runs").iterdir()
        report = _harness("report", run_dir.name, "--html", "report.html", cwd=project, env=env)

    assert run.returncode == 1, run.stdout + run.stderr
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 8, [b["messages"][-1] for b in bodies]
    # the channels were exercised: what each request carried, redacted
    tool_results = [m["content"] for m in bodies[3]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 3
    assert all("[REDACTED]" in text for text in tool_results[:2])  # read_file, run_shell
    assert "postgres://app:[REDACTED]@db/main" in bodies[4]["messages"][1]["content"]  # the diff
    round_3_task = bodies[7]["messages"][1]["content"]
    assert "# Progress so far" in round_3_task
    assert "# What failed last round" in round_3_task
    requests = {f"request {i + 1}": json.dumps(body) for i, body in enumerate(bodies)}
    written = {
        str(path.relative_to(tmp_path)): path.read_text(errors="replace")
        for root in (project / ".harness", project / "progress", project / "report.html")
        for path in ([root] if root.is_file() else root.rglob("*"))
        if path.is_file()
    }
    printed = {"run": run.stdout + run.stderr, "report": report.stdout + report.stderr}
    everything = {**requests, **written, **printed}
    assert len(written) >= 4, sorted(written)
    leaks = {
        where: [c for c in PROVIDER_CANARIES if c in text] for where, text in everything.items()
    }
    assert leaks == {where: [] for where in everything}
