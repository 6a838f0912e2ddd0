"""Connectors built from loop.toml: a secret's variable left unset fails that connector with
its name and field, never the verdict; a connector for the other occasion does not run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.assemble.connectors import build_connectors
from harness.core.stop import StopReason
from harness.core.usage import Usage
from harness.outer.result import RunResult
from harness.spec import LoopSpec
from tests.conftest import RecordingSink


def test_an_unset_secret_fails_its_connector_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loop.toml").write_text(textwrap.dedent("""\
        goal = "g"
        [[gates]]
        type = "command"
        cmd = "true"
        [github]
        repo = "acme/widgets"
        token_env = "HOST_PASS"
        [[connectors]]
        type = "issue_comment"
        issue = 3
        [[connectors]]
        type = "webhook"
        url_env = "CHAT_URL"
        [[connectors]]
        type = "webhook"
        url_env = "CHAT_URL"
        on = ["escalate"]
        """))  # fmt: skip
    monkeypatch.delenv("HOST_PASS", raising=False)
    monkeypatch.setenv("CHAT_URL", "  ")
    sink = RecordingSink()
    on_finish, ci = build_connectors(LoopSpec.from_toml(tmp_path), events=sink, redact=str)
    assert on_finish is not None
    assert ci is None
    result = RunResult(StopReason.PASSED, "all gates passed", [], Usage(0, 0), branch="harness/x")

    lines = on_finish(result)

    assert lines == (
        "connector issue_comment: FAILED: the environment variable HOST_PASS "
        "(github.token_env) is not set",
        "connector webhook: FAILED: the environment variable CHAT_URL (url_env) is not set",
    )
    assert [(e["connector"], e["occasion"], e["ok"]) for _, e in sink.events] == [
        ("issue_comment", "pass", False),
        ("webhook", "pass", False),
    ]
    assert result.passed
