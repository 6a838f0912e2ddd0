"""Keeping secrets out of everything the harness writes: event log, reports, progress.md."""

from __future__ import annotations

import os
import re
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


class Redactor:
    """Replaces secrets with ``[REDACTED]`` in text and, recursively, in event data.

    Secrets are the values (8+ characters) of environment variables whose names look secret
    (see :data:`SECRET_NAME`), anything matching ``patterns`` or :data:`DEFAULT_PATTERNS`, and
    string values stored under a secret-looking key in a mapping (``{"api_key": ...}``).
    The environment is read once, at construction.
    """

    def __init__(self, patterns: Iterable[str] = (), env: Mapping[str, str] = os.environ) -> None:
        values = sorted(
            {
                value
                for name, value in env.items()
                if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
            },
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
        """``text`` with every secret replaced by ``[REDACTED]``."""
        return self._regex.sub(REDACTED, text)

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
