"""What ``harness init content`` and ``harness init research`` write runs as it stands: each
template, run with a scripted model, protects the inputs its checks trust, fails a round on the
checks it enables and passes the next; every check it shows commented out works when enabled."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness.cli.templates import LOOP_TOML
from tests.cli.test_cli import harness
from tests.cli.test_examples import PYTHON_ENV

FACTS = (
    "# Facts\n\n- The library on Station Road reopens on 12 April 2025.\n- Priya Nair leads it.\n"
)
SOURCES = {
    "a.md": "The light was first lit in 1851 by the keeper.\n",
    "b.md": "A gazetteer says the light was first lit in 1853.\n",
    "c.md": "The fire of 1907 started in the paraffin store.\n",
}
FINDINGS = """\
# Findings

The light was first lit in 1851 or 1853; the sources disagree.

- First lit in 1851 [source: sources/a.md] "The light was first lit in 1851"
- First lit in 1853 [source: sources/b.md] "the light was first lit in 1853"
- The fire began in the paraffin store [source: sources/c.md] "started in the paraffin store"

## Contradictions

- 1851 [source: sources/a.md] "first lit in 1851" against 1853 [source: sources/b.md] "first lit in 1853"
"""


def draft() -> str:
    """A piece of about 330 words: a title, three sections, the facts, no hype, one link."""
    sentence = "The library on Station Road reopens on 12 April 2025, and Priya Nair leads it. "
    body = sentence * 7 + "See [the council](https://example.org/library) for more."
    sections = "\n\n".join(f"## Part {n}\n\n{body}" for n in (1, 2, 3))
    return f"# The library reopens\n\n{sections}\n"


def call(name: str, **arguments: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


VERDICT = json.dumps({"score": 9, "reasons": ["accurate and clear"], "fixes": []})
PLAYS = {
    "content": (
        {"brief.md": "Write a short piece about the library.\n", "facts.md": FACTS},
        "draft.md",
        "A draft far too short.\n",
        draft(),
        "facts.md",
    ),
    "research": (
        {"question.md": "When was the light first lit?\n"}
        | {f"sources/{name}": text for name, text in SOURCES.items()},
        "findings.md",
        FINDINGS.replace('"The light was first lit in 1851"', '"The light was lit in 1851"'),
        FINDINGS,
        "sources/a.md",
    ),
}


def commented_commands(template: str) -> list[str]:
    """The ``cmd`` of every check the template shows commented out."""
    found = re.findall(r"^# cmd = (.*)$", template, re.MULTILINE)
    return [tomllib.loads(f"cmd = {value}")["cmd"] for value in found]


@pytest.mark.parametrize("kind", ["content", "research"])
def test_a_template_protects_its_inputs_and_runs_its_checks(tmp_path: Path, kind: str) -> None:
    inputs, work, failing, passing, trusted = PLAYS[kind]
    assert harness("init", kind, cwd=tmp_path).returncode == 0
    for name, text in inputs.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    script = {
        "rounds": {
            "1": [
                call("write_file", path=trusted, content="made up\n"),  # refused: protected
                call("write_file", path=work, content=failing),
                call("submit", summary="first attempt"),
            ],
            "2": [call("write_file", path=work, content=passing), "done", VERDICT],
        }
    }
    (tmp_path / "script.json").write_text(json.dumps(script))

    result = harness("run", "--model", "scripted:script.json", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "PASSED: round 2 passed every gate and the review\n"
    assert (tmp_path / trusted).read_text() == inputs[trusted]
    (log,) = (tmp_path / ".harness" / "runs").glob("*/events.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    writes = [
        e["is_error"] for e in events if e["kind"] == "tool_call" and e["name"] == "write_file"
    ]
    assert writes == [True, False, False]  # the trusted input refused, the work file written
    gates = tomllib.loads((tmp_path / "loop.toml").read_text())["gates"]
    reports = [(e["round"], e["name"], e["passed"]) for e in events if e["kind"] == "gate_report"]
    names = [gate["name"] for gate in gates]
    assert reports == [(1, names[0], False), *((2, name, True) for name in names)]
    for command in commented_commands(LOOP_TOML[kind]):  # shown commented, working when enabled
        check = subprocess.run(
            command.replace("python ", f"{sys.executable} ", 1), shell=True, cwd=tmp_path,
            capture_output=True, text=True, env=PYTHON_ENV,
        )  # fmt: skip
        assert check.returncode == 0, (command, check.stdout, check.stderr)


def test_the_templates_show_every_check_the_examples_use() -> None:
    content, research = LOOP_TOML["content"], LOOP_TOML["research"]
    for check in ("words", "banned", "facts", "structure", "links"):
        assert f"harness check content {check} " in content
    assert "harness check citations findings.md --sources sources" in research
    assert "--require-contradictions" in research
    assert len(commented_commands(content)) == 3
    assert len(commented_commands(research)) == 1
