"""Secret redaction by name and shape: every built-in key shape, secret environment values, secret-named keys."""

from __future__ import annotations

import json

import pytest

from harness.core.errors import ConfigError
from harness.core.redact import (
    MIN_SECRET_LENGTH,
    REDACTED,
    REMEMBERED_CHARS,
    SECRET_NAME,
    Redactor,
    redact_json_text,
)
from harness.core.text_memo import ENTRY_CHARS

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HecCFA\n"
    "-----END RSA PRIVATE KEY-----"
)
KEY_SHAPES = {
    "openai": "sk-" + "A1b2C3d4E5f6G7h8",
    "anthropic": "sk-ant-api03-" + "x" * 20,
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "github-classic": "ghp_" + "a" * 36,
    "github-oauth": "gho_" + "B" * 30,
    "github-server": "ghs_" + "9" * 30,
    "github-fine-grained": "github_pat_" + "11ABCDEFG_" + "z" * 20,
    "slack": "xoxb-" + "1234567890-abc",
    "google": "AIza" + "0" * 35,  # low entropy: only the key shape can catch it
    "huggingface": "hf_" + "Q" * 30,
    "pem-private-key": PEM,
}
NEAR_MISSES = {
    "openai": "sk-" + "a" * 15,
    "aws": "AKIA" + "1" * 15,
    "github-classic": "ghp_" + "a" * 29,
    "github-fine-grained": "github_pat_" + "a" * 29,
    "slack": "xoxb-" + "1" * 9,
    "google": "AIza" + "b" * 34,
    "huggingface": "hf_" + "c" * 29,
    "bearer": "Bearer " + "d" * 15,
    "public-key": "-----BEGIN PUBLIC KEY-----\nshared openly\n-----END PUBLIC KEY-----",
}


@pytest.mark.parametrize("name", sorted(KEY_SHAPES))
def test_every_built_in_key_shape_is_redacted_without_any_environment(name: str) -> None:
    secret = KEY_SHAPES[name]
    text = f"config:\n  key = {secret}\nend"
    assert Redactor(env={}).redact_text(text) == f"config:\n  key = {REDACTED}\nend"


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_string_just_short_of_a_key_shape_is_left_alone(name: str) -> None:
    text = f"value {NEAR_MISSES[name]} here"
    assert Redactor(env={}).redact_text(text) == text


def test_a_bearer_token_keeps_its_scheme_and_loses_the_token() -> None:
    text = "Authorization: Bearer abc.DEF-123_456~789+/xyz== next"
    assert Redactor(env={}).redact_text(text) == f"Authorization: Bearer {REDACTED} next"


def test_every_occurrence_is_redacted() -> None:
    key = KEY_SHAPES["aws"]
    assert Redactor(env={}).redact_text(f"{key},{key};{key}") == ",".join([REDACTED] * 2) + (
        f";{REDACTED}"
    )


def test_a_secret_that_extends_another_is_redacted_whole() -> None:
    """Longest first: the shorter value must not match the start of the longer one."""
    env = {"A_TOKEN": "abcdefgh", "B_TOKEN": "abcdefghijkl", "C_TOKEN": "abcdefghij"}
    redactor = Redactor(env=env)
    assert redactor.redact_text("abcdefghijkl") == REDACTED
    assert redactor.redact_text("<abcdefghij>") == f"<{REDACTED}>"
    assert redactor.redact_text("abcdefgh!") == f"{REDACTED}!"
    assert "ijkl" not in redactor.redact_text("x abcdefghijkl y")


def test_an_environment_secret_of_the_minimum_length_is_redacted_one_shorter_is_not() -> None:
    assert MIN_SECRET_LENGTH == 8
    at_minimum, shorter = "hunter22", "hunter2"
    redactor = Redactor(env={"DB_PASSWORD": at_minimum, "SMTP_PASSWORD": shorter})
    assert redactor.redact_text(f"{at_minimum} {shorter}") == f"{REDACTED} {shorter}"


def test_regex_characters_in_an_environment_secret_are_taken_literally() -> None:
    redactor = Redactor(env={"DEPLOY_TOKEN": "a.b*c+d?e(f)"})
    assert redactor.redact_text("a.b*c+d?e(f) aXbbbcdde(f)") == f"{REDACTED} aXbbbcdde(f)"


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "PASSWD",
     "SSH_PASSPHRASE", "GCP_CREDENTIALS", "CREDENTIAL", "my_api_key", "APIKEY", "KEY",
     "SIGNING_PRIVATE_KEY", "X_AUTH_TOKEN", "AWS_SESSION_TOKEN", "SECRET_VALUE"],
)  # fmt: skip
def test_secret_looking_names_mark_their_values_secret(name: str) -> None:
    assert SECRET_NAME.search(name)
    value = "plain-words-only"
    assert Redactor(env={name: value}).redact_text(f"[{value}]") == f"[{REDACTED}]"


@pytest.mark.parametrize(
    "name", ["TIKTOKEN_CACHE_DIR", "KEYBOARD_LAYOUT", "MONKEY", "HOME", "TOKENIZERS_PARALLELISM",
             "SECRETARY", "PATH"],
)  # fmt: skip
def test_other_names_do_not(name: str) -> None:
    assert not SECRET_NAME.search(name)
    value = "/opt/plain/value"
    assert Redactor(env={name: value}).redact_text(value) == value


def test_the_environment_is_read_once_at_construction() -> None:
    env = {"OPENAI_API_KEY": "first-secret-value"}
    redactor = Redactor(env=env)
    env["OPENAI_API_KEY"] = "second-secret-value"
    assert redactor.redact_text("first-secret-value second-secret-value") == (
        f"{REDACTED} second-secret-value"
    )


def test_extra_patterns_are_redacted_beside_the_built_in_shapes() -> None:
    redactor = Redactor(patterns=[r"corp-[0-9]{6}", r"ticket#\d+"], env={})
    text = f"corp-123456 ticket#42 corp-12345 {KEY_SHAPES['huggingface']}"
    assert redactor.redact_text(text) == f"{REDACTED} {REDACTED} corp-12345 {REDACTED}"


def test_an_invalid_pattern_is_named_by_its_position() -> None:
    with pytest.raises(ConfigError, match=r"^redact patterns\[1\]: invalid regex '\(bad'"):
        Redactor(patterns=["fine", "(bad"], env={})


def test_data_is_redacted_recursively_and_secret_named_keys_lose_their_whole_value() -> None:
    key = KEY_SHAPES["openai"]
    redactor = Redactor(env={"DEPLOY_TOKEN": "correct-horse-battery"})
    data = {
        "args": ["run", f"--key={key}", ("tuple", "correct-horse-battery")],
        "headers": {"Authorization": "Bearer " + "t" * 20, "api_key": "short"},
        "password": "pw",
        "token": "",
        "secret_count": 3,
        "session_token": {"nested": f"x {key}", "n": None},
        7: "seven",
        "score": 9.5,
    }
    assert redactor.redact(data) == {
        "args": ["run", f"--key={REDACTED}", ["tuple", REDACTED]],
        "headers": {"Authorization": f"Bearer {REDACTED}", "api_key": REDACTED},
        "password": REDACTED,
        "token": "",
        "secret_count": 3,
        "session_token": {"nested": f"x {REDACTED}", "n": None},
        7: "seven",
        "score": 9.5,
    }
    assert data["password"] == "pw"  # a copy: the original is untouched


def test_scalars_and_strings_pass_through_redact() -> None:
    redactor = Redactor(env={})
    assert redactor.redact(None) is None
    assert redactor.redact(42) == 42
    assert redactor.redact(True) is True
    assert redactor.redact(f"k={KEY_SHAPES['slack']}") == f"k={REDACTED}"
    assert redactor.redact((KEY_SHAPES["aws"], 1)) == [REDACTED, 1]


def test_a_token_of_exactly_the_minimum_entropy_is_redacted() -> None:
    token = "aB3dE5gH7jK9mN1p" * 2  # 16 distinct characters, each twice: exactly 4.0 bits each
    assert Redactor(env={}).redact_text(f"id {token} end") == f"id {REDACTED} end"


@pytest.mark.parametrize(
    "token",
    [
        "AaBbCcDd1234AaBbCcDd1234",  # 12 distinct characters, each twice: 3.58 bits each
        "aB3dE5gH7jK9mN1p" * 2 + "a",  # one character more of the 4.0-bit token: 3.99 bits
    ],
)
def test_a_mixed_token_below_the_minimum_entropy_is_left_alone(token: str) -> None:
    text = f"id {token} end"
    assert Redactor(env={}).redact_text(text) == text
    assert REDACTED not in Redactor(env={}).redact_text(token)


def test_a_text_redacted_again_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []
    scan = Redactor._scan

    def counting_scan(self: Redactor, text: str) -> str:
        scanned.append(text)
        return scan(self, text)

    monkeypatch.setattr(Redactor, "_scan", counting_scan)
    secret = "s3cr3t-value-0123"
    redactor = Redactor(env={"DB_PASSWORD": secret})
    observation = f"connecting with {secret}\n" + "log line\n" * 1_000
    first = redactor.redact_text(observation)
    assert redactor.redact_text(observation) is first
    equal = observation[:9] + observation[9:]
    assert equal is not observation
    assert redactor.redact_text(equal) == first  # an equal text is looked up too
    assert secret not in first
    assert first.startswith(f"connecting with {REDACTED}\n")
    assert scanned == [observation]
    assert Redactor(env={"DB_PASSWORD": secret}).redact_text(observation) == first
    assert scanned == [observation, observation]  # each redactor remembers its own


SECRET_VALUE = "hunter2-hunter2-xyz"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # a value spelled with escapes: absent from the text, found by its value
        ('{"cmd": "echo hunter2\\u002dhunter2-xyz"}', {"cmd": "echo [REDACTED]"}),
        # in a key, a list, a nested object, and a key shape written as escapes
        (
            '{"hunter2\\u002dhunter2-xyz": ["a", {"b": "sk\\u002dA1b2C3d4E5f6G7h8"}]}',
            {"[REDACTED]": ["a", {"b": "[REDACTED]"}]},
        ),
    ],
)
def test_json_text_is_redacted_by_the_values_inside_it(
    arguments: str, expected: dict[str, object]
) -> None:
    redactor = Redactor(env={"MY_API_KEY": SECRET_VALUE})
    assert SECRET_VALUE not in arguments
    assert json.loads(redact_json_text(arguments, redactor.redact_text)) == expected


def test_json_text_with_nothing_to_redact_is_returned_as_it_came() -> None:
    arguments = '{"path":  "src/a.py", "n": 3}'  # its own spacing, kept
    assert redact_json_text(arguments, Redactor(env={}).redact_text) is arguments


def test_text_that_is_not_json_is_redacted_as_text() -> None:
    redactor = Redactor(env={"MY_API_KEY": SECRET_VALUE})
    assert redact_json_text('{"cmd": "hunter2-hunter2-xyz', redactor.redact_text) == (
        '{"cmd": "[REDACTED]'
    )


class _Counting(Redactor):
    """A redactor that notes each text it scans (rather than finds in its memo)."""

    def __init__(self) -> None:
        self.scanned: list[str] = []
        super().__init__(env={})

    def _scan(self, text: str) -> str:
        self.scanned.append(text)
        return super()._scan(text)


@pytest.mark.parametrize(("over", "scanned_again"), [(0, []), (1, [0])])
def test_a_redactor_remembers_texts_up_to_its_bound_in_characters(
    over: int, scanned_again: list[int]
) -> None:
    """Texts (each its own redacted form, and ENTRY_CHARS beside it) that fill REMEMBERED_CHARS
    exactly are all remembered; one character more, and the oldest is scanned again."""
    entry = 80_000
    texts = [(f"{n} " + "word " * entry)[: entry - ENTRY_CHARS] for n in range(25)]
    texts[-1] += "s" * over
    assert sum(len(text) + ENTRY_CHARS for text in texts) == REMEMBERED_CHARS + over
    redactor = _Counting()
    for text in texts:
        assert redactor.redact_text(text) == text
    redactor.scanned.clear()
    for text in texts:
        redactor.redact_text(text)
    assert redactor.scanned[:1] == [texts[n] for n in scanned_again]


def test_a_json_text_is_redacted_once_however_often_it_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tool call's arguments reach the run's record three times (the reply, its tool_start and
    its tool_call): parsed and redacted once, a file of 200 kB written whole as well."""
    parsed: list[str] = []
    scan_json = Redactor._scan_json

    def counting(self: Redactor, raw: str) -> str:
        parsed.append(raw)
        return scan_json(self, raw)

    monkeypatch.setattr(Redactor, "_scan_json", counting)
    redactor = Redactor(env={"MY_API_KEY": SECRET_VALUE})
    escaped = SECRET_VALUE.replace("-", "\\u002d")
    small = f'{{"cmd": "echo {escaped}"}}'
    whole = json.dumps({"path": "big.txt", "content": "line\n" * 40_000 + SECRET_VALUE})
    for raw in (small, whole):
        first = redactor.redact_json(raw)
        assert first == redact_json_text(
            raw, Redactor(env={"MY_API_KEY": SECRET_VALUE}).redact_text
        )
        assert SECRET_VALUE not in first
        assert REDACTED in first
        assert redactor.redact_json(raw) is first
        assert redactor.redact_json(raw[:5] + raw[5:]) is first  # an equal text is looked up too
    assert parsed == [small, whole]
    plain = '{"path": "a.py"}'
    assert redactor.redact_json(plain) is plain  # nothing to redact: the text itself
