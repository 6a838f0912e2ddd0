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
        (
            "POST https://hooks.slack.com/services/T0001/B0002/abcdefghijkl",  # low entropy
            "POST https://hooks.slack.com/services/[REDACTED]",
        ),
        (
            "https://discord.com/api/webhooks/1234567/abcdefghij_k",
            "https://discord.com/api/webhooks/[REDACTED]",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
        ("authorization: token gho_short123", "authorization: token [REDACTED]"),
        ('{"Authorization": "abcdefghijklmnop1234"}', '{"Authorization": "[REDACTED]"}'),
        ("curl -H 'authorization: bearer abcdefghijklmnopq'", "curl -H 'authorization: bearer [REDACTED]'"),
        ("id 4y1z2ixgci5nq1t06yw80ovbrku8gnrs end", "id [REDACTED] end"),  # one case + digits
        ("id Y37Y9G6R1PT1Q7T9VA0UBYIDV3WWR5BD end", "id [REDACTED] end"),
        ("jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.x", "jwt [REDACTED].x"),
    ],
    ids=[
        "url-password", "webhook", "url-parameter", "high-entropy", "slack-webhook",
        "discord-webhook", "basic-auth", "token-auth", "bare-auth", "lower-bearer",
        "lower-case-token", "upper-case-token", "jwt-header",
    ],
)  # fmt: skip
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
        "index 83db48f..bf269f4 100644",
        "sha256 2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
        "request 795B929E-9A9A-80FD-EA7B-5BF55EB561A4 done",  # an upper-case UUID
        "class AbstractSingletonProxyFactoryBean2:",  # camel case: few changes of case
        "node.getElementById2FromDocumentFragment()",
        "target x86_64-unknown-linux-gnu-gcc-12",
        "python3_11_site_packages_pydantic_core_2_14_6",
        "DEFAULT_MAX_TOKENS_PER_REQUEST_V2 = 4096",
        "Authorization: required for this endpoint",  # a bare credential needs 16 characters
        "the Bearer of bad news",
        "1f0e3dad99908345f7439f8ffabdffc4" * 2,  # long hexadecimal: a hash
    ],
)  # fmt: skip
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor(env={}).redact_text(text) == text


def test_variables_and_values_marked_secret_are_redacted() -> None:
    env = {"DATABASE_URL": "postgres://u:pw-in-url@h/db", "BILLING_ACCOUNT": "acct-778812"}
    redactor = Redactor(env=env, secret_env=["BILLING_ACCOUNT"], values=["read-from-a-file"])

    text = "acct-778812 read-from-a-file postgres://u:pw-in-url@h/db"

    assert redactor.redact_text(text) == "[REDACTED] [REDACTED] postgres://u:[REDACTED]@h/db"
    assert Redactor(env=env).redact_text("acct-778812") == "acct-778812"  # not marked: kept


def test_pathological_text_is_scanned_once_not_once_per_character() -> None:
    """A long run of letters used to be rescanned from every letter (the URL scheme pattern):
    100 000 of them took about a minute. The result is checked here; bench/redact_cost.py
    measures the time."""
    text = "x" * 100_000 + " a://u:" + "y" * 10_000 + " -----BEGIN RSA PRIVATE KEY-----\n" * 3
    redacted = Redactor(env={}).redact_text(text)
    # no "@": no password to take; a key with no END line is redacted to the end of the text
    assert redacted == "x" * 100_000 + " a://u:" + "y" * 10_000 + " [REDACTED]"


# --- the thresholds of a generated token, on both sides --------------------------------------


@pytest.mark.parametrize(
    ("token", "redacted"),
    [
        # mixed case, 26 distinct characters (4.7 bits): 10 changes of class in 25 steps is 0.4
        ("abcDE123fgHIJ45klmNO67pqRS", True),
        ("abcDE123fgHIJ45klmNO67pqrs", False),  # 9 changes: 0.36, a name's rhythm
        ("abcDE123fgHIJ45klmNO67pqRST", False),  # 10 changes in 26 steps: 0.385
        # one case and digits: exactly a fifth of digits, then one fewer
        ("abcdefghijklmnopqrst23456", True),
        ("abcdefghijklmnopqrstu2345", False),
        # one case: 4 characters 4 times and 8 twice is exactly 3.5 bits; 5 and 6 is 3.375
        ("gh23" * 4 + "ijkmnp45" * 2, True),
        ("gh23q" * 4 + "ijkm45" * 2, False),
        ("abcdef0123456789abcdef0123", False),  # only hexadecimal letters: a hash
        ("ghijklmnopqr-23456-stuvwxy", False),  # a separator: a name, not a token
    ],
)
def test_a_generated_token_is_told_from_a_name_at_each_threshold(
    token: str, redacted: bool
) -> None:
    shown = Redactor(env={}).redact_text(f"id {token} end")
    assert shown == ("id [REDACTED] end" if redacted else f"id {token} end")
