"""Redaction by value: URL credentials, marked variables and values, high-entropy tokens."""

from __future__ import annotations

import pytest

from harness.core.redact import Redactor

# --- redaction by value ----------------------------------------------------------------------

HIGH_ENTROPY = "Zx81KqPb3LmN0vWc7Rt5YsHa2GdJ"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "connect postgres://app:hunter2pw@db:5432/main failed",
            "connect postgres://app:[REDACTED]@db:5432/main failed",
        ),
        (
            "POST https://hooks.example.com/services/T0001/B0002/aZ3kP9qLm2Xv8RtY6wBn4HcJ",
            "POST https://hooks.example.com/services/T0001/B0002/[REDACTED]",
        ),
        (
            "https://x.io/cb?user=me&access_token=abc123&page=2",
            "https://x.io/cb?user=me&access_token=[REDACTED]&page=2",
        ),
        (f"tool said {HIGH_ENTROPY}.", "tool said [REDACTED]."),
    ],
    ids=["url-password", "webhook", "url-parameter", "high-entropy"],
)
def test_secrets_are_redacted_by_value(text: str, shown: str) -> None:
    assert Redactor(env={}).redact_text(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "Base: 4f0c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39",  # a commit id must survive
        "tests/test_gates.py::test_pytest_gate_passes_and_leaves_no_files_behind",
        "run 8c3f0a52-4e1b-4d7a-9f3e-2b6c1d0e9a87 started",
        "https://docs.example.com/guide/getting-started?page=2",
        "harness/ABCDEFGHIJKLMNOPQRSTUVWXYZ",  # one case, no digits: not a generated token
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor(env={}).redact_text(text) == text


def test_variables_and_values_marked_secret_are_redacted() -> None:
    env = {"DATABASE_URL": "postgres://u:pw-in-url@h/db", "BILLING_ACCOUNT": "acct-778812"}
    redactor = Redactor(env=env, secret_env=["BILLING_ACCOUNT"], values=["read-from-a-file"])

    text = "acct-778812 read-from-a-file postgres://u:pw-in-url@h/db"

    assert redactor.redact_text(text) == "[REDACTED] [REDACTED] postgres://u:[REDACTED]@h/db"
    assert Redactor(env=env).redact_text("acct-778812") == "acct-778812"  # not marked: kept
