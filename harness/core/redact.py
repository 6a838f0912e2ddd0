"""Keeping secrets out of everything the harness writes: event log, reports, progress.md."""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from harness.core.errors import ConfigError

REDACTED = "[REDACTED]"

SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|"
    r"PRIVATE_KEY|ACCESS_KEY|AUTH_TOKEN|SESSION_TOKEN)(?:_|$)",
    re.IGNORECASE,
)
"""Environment-variable (and mapping-key) names whose values are secrets: ``OPENAI_API_KEY``,
``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD``. Matched on ``_``-separated words,
so ``TIKTOKEN_CACHE_DIR`` is not a secret."""

MIN_SECRET_LENGTH = 8
"""Environment values shorter than this are not treated as secrets (too likely to be words)."""

DEFAULT_PATTERNS: tuple[str, ...] = (
    r"sk-[A-Za-z0-9_-]{16,}",  # OpenAI, Anthropic (sk-ant-...), many OpenAI-compatible servers
    r"AKIA[0-9A-Z]{16}",  # AWS access key id
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{30,}",
    r"xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"(?<=Bearer )[A-Za-z0-9._~+/-]{16,}=*",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
)
"""Common key shapes, redacted wherever they appear."""

_URL_PASSWORD = re.compile(r"(?P<keep>[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:)[^\s/@]+(?=@)")
"""The password of ``scheme://user:password@host`` (the user name is kept)."""

_URL_SECRET_PARAM = re.compile(
    r"(?P<keep>[?&][^=&\s#]*(?:token|key|secret|sig|signature|password|auth)[^=&\s#]*=)"
    r"[^&\s#]+",
    re.IGNORECASE,
)
"""The value of a URL query parameter named like a secret (``?token=...``, ``&sig=...``)."""

_TOKEN_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+_=-])[A-Za-z0-9+_=-]{24,}(?![A-Za-z0-9+_=-])")

MIN_TOKEN_ENTROPY = 4.0
"""Bits per character above which a 24+ character run of letters, digits and ``+_=-`` that mixes
upper case, lower case and digits is taken for a generated secret (``/`` ends a run, so URL
paths stay readable and only their secret segment goes). Hexadecimal (commit ids,
hashes) tops out at 4 bits and mixes no cases, so it is never redacted this way."""


class Redactor:
    """Replaces secrets with ``[REDACTED]`` in text and, recursively, in event data.

    Secrets are the values (8+ characters) of environment variables whose names look secret
    (see :data:`SECRET_NAME`) or are listed in ``secret_env``, the literal ``values`` given,
    anything matching ``patterns`` or :data:`DEFAULT_PATTERNS`, passwords inside URLs
    (``postgres://app:[REDACTED]@db``), URL parameters named like secrets, long high-entropy
    tokens (see :data:`MIN_TOKEN_ENTROPY`), and string values stored under a secret-looking key
    in a mapping (``{"api_key": ...}``). The environment is read once, at construction.
    """

    def __init__(
        self,
        patterns: Iterable[str] = (),
        env: Mapping[str, str] = os.environ,
        *,
        secret_env: Iterable[str] = (),
        values: Iterable[str] = (),
    ) -> None:
        marked = set(secret_env)
        values = sorted(
            {
                value
                for name, value in env.items()
                if (SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH)
                or (name in marked and value.strip())
            }
            | {value for value in values if value.strip()},
            key=len,
            reverse=True,
        )
        alternatives = [re.escape(value) for value in values]
        for index, pattern in enumerate((*patterns, *DEFAULT_PATTERNS)):
            try:
                re.compile(pattern)
            except re.error as err:
                raise ConfigError(
                    f"redact patterns[{index}]: invalid regex {pattern!r}: {err}"
                ) from err
            alternatives.append(f"(?:{pattern})")
        self._regex = re.compile("|".join(alternatives))

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``: known values and key shapes,
        passwords and secret-named parameters in URLs, and long high-entropy tokens."""
        text = self._regex.sub(REDACTED, text)
        text = _URL_PASSWORD.sub(rf"\g<keep>{REDACTED}", text)
        text = _URL_SECRET_PARAM.sub(rf"\g<keep>{REDACTED}", text)
        return _TOKEN_CANDIDATE.sub(_redact_token, text)

    def redact(self, data: Any) -> Any:
        """A copy of ``data`` (JSON-like: dicts, lists, strings, numbers) with secrets redacted."""
        if isinstance(data, str):
            return self.redact_text(data)
        if isinstance(data, Mapping):
            return {key: self._redact_item(str(key), value) for key, value in data.items()}
        if isinstance(data, list | tuple):
            return [self.redact(item) for item in data]
        return data

    def _redact_item(self, key: str, value: Any) -> Any:
        if isinstance(value, str) and value and SECRET_NAME.search(key):
            return REDACTED
        return self.redact(value)


def _redact_token(match: re.Match[str]) -> str:
    token = match.group(0)
    mixed = (
        any(c.islower() for c in token)
        and any(c.isupper() for c in token)
        and any(c.isdigit() for c in token)
    )
    return REDACTED if mixed and _entropy(token) >= MIN_TOKEN_ENTROPY else token


def _entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
