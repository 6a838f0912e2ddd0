"""Keeping secrets out of everything the harness writes: event log, reports, progress.md."""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.core.errors import ConfigError
from harness.core.text_memo import TextMemo

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
    # to its END line, or to the end of the text when it has none (a key cut short is a key)
    r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\Z)",
)
"""Common key shapes, redacted wherever they appear."""

_URL_PASSWORD = re.compile(
    r"(?P<keep>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/@:]{0,256}:)"
    r"[^\s/@]{1,1024}(?=@)"
)
"""The password of ``scheme://user:password@host`` (the user name is kept). A scheme starts
only where no scheme character precedes it and every part is bounded, so a long run of letters
costs one scan, not one per letter."""

_URL_SECRET_PARAM = re.compile(
    r"(?P<keep>[?&][^=&\s#]{0,64}?(?:token|key|secret|sig|signature|password|auth)"
    r"[^=&\s#]{0,64}=)[^&\s#]+",
    re.IGNORECASE,
)
"""The value of a URL query parameter named like a secret (``?token=...``, ``&sig=...``); the
name is bounded, so a ``?`` before a long run of text costs a bounded look."""

_AUTHORIZATION = r"\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
_CREDENTIAL_AFTER = re.compile(
    rf"(?P<keep>{_AUTHORIZATION}(?:bearer|basic|token|bot)\s+)[^\s\"',;]{{8,}}"
    rf"|(?P<bare>{_AUTHORIZATION})[A-Za-z0-9._~+/=-]{{16,}}"
    r"|(?P<scheme>\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*",
    re.IGNORECASE,
)
"""The credential of an ``Authorization:`` header (after ``Bearer``, ``Basic``, ``token``, or a
bare one of 16+ characters; also as ``authorization=`` or a quoted key) and any ``Bearer``
token; the header name and the scheme are kept."""

_WEBHOOK = re.compile(
    r"(?P<keep>\bhooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+"
    r"|(?P<discord>\bdiscord(?:app)?\.com/api/webhooks/)[0-9]+/[A-Za-z0-9_-]+",
    re.IGNORECASE,
)
"""The secret path of a Slack or Discord webhook URL (the scheme and host are kept)."""

_KEEPING_PREFIX = (
    (_URL_PASSWORD, ("://",)),
    (_URL_SECRET_PARAM, ("=",)),
    (_CREDENTIAL_AFTER, ("authorization", "bearer")),
    (_WEBHOOK, ("hooks.slack.com", "/api/webhooks/")),
)
"""Patterns that keep a prefix (a named group) and redact what follows it, each with the
lower-case substrings it cannot match without: a text holding none of them is not scanned."""

_TOKEN_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+_=-])[A-Za-z0-9+_=-]{24,}(?![A-Za-z0-9+_=-])")

MIN_TOKEN_ENTROPY = 4.0
"""Bits per character above which a 24+ character run of letters, digits and ``+_=-`` that mixes
upper case, lower case and digits, and changes class often (:data:`MIN_CASE_CHANGES`), is
taken for a generated secret (``/`` ends a run, so URL paths stay readable and only their
secret segment goes). Hexadecimal (commit ids,
hashes) tops out at 4 bits and mixes no cases, so it is never redacted this way."""

MIN_CASE_CHANGES = 0.4
"""Share of neighbouring characters in a run that change class (upper case, lower case, digit)
above which a run is taken for generated rather than written: a random base-62 token changes
class at about 0.6 of its steps, a camel-case name (``AbstractSingletonProxyFactoryBean2``,
``getElementById2FromDocumentFragment``) at under 0.4."""

MIN_SINGLE_CASE_ENTROPY = 3.5
"""Bits per character above which a 24+ character run of one letter case and digits alone (no
``_``, ``-``: not a name like ``x86_64_linux``) is taken for a generated secret, when it holds a
letter that is not a hexadecimal digit (commit ids, hashes and UUIDs are left alone) and at least
:data:`MIN_DIGIT_SHARE` of both letters and digits."""

MIN_DIGIT_SHARE = 0.2
"""Share of a single-case token that must be digits, and letters, for it to look generated."""


REMEMBERED_CHARS = 2_000_000
"""Characters of texts, with their redacted forms, that a :class:`Redactor` keeps (the latest
ones): about a hundred whole observations at the agent's default cap; as many again of JSON
texts (tool calls' arguments, a file written whole among them)."""


class Redactor:
    """Replaces secrets with ``[REDACTED]`` in text and, recursively, in event data.

    Secrets are the values (8+ characters) of environment variables whose names look secret
    (see :data:`SECRET_NAME`) or are listed in ``secret_env``, the literal ``values`` given,
    anything matching ``patterns`` or :data:`DEFAULT_PATTERNS`, passwords inside URLs
    (``postgres://app:[REDACTED]@db``), URL parameters named like secrets, the credential of an
    ``Authorization`` header or after ``Bearer``, Slack and Discord webhook paths, long
    generated-looking tokens (see :data:`MIN_TOKEN_ENTROPY`), and string values stored under a secret-looking key
    in a mapping (``{"api_key": ...}``). The environment is read once, at construction.

    A text redacted again by the same redactor is looked up, not scanned again (see
    :data:`REMEMBERED_CHARS`): a run's one redactor sees each observation in its trajectory
    step, then in the next request.
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
        self._values = tuple(values)  # longest first: a secret that extends another goes whole
        alternatives = []
        for index, pattern in enumerate((*patterns, *DEFAULT_PATTERNS)):
            try:
                re.compile(pattern)
            except re.error as err:
                raise ConfigError(
                    f"redact patterns[{index}]: invalid regex {pattern!r}: {err}"
                ) from err
            alternatives.append(f"(?:{pattern})")
        self._regex = re.compile("|".join(alternatives))
        self._memo = TextMemo(self._scan, REMEMBERED_CHARS)
        self._json_memo = TextMemo(self._scan_json, REMEMBERED_CHARS)

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``: known values and key shapes,
        credentials in URLs and ``Authorization`` headers, webhook paths, and long high-entropy
        tokens. The cost is linear in the text's length, paid once for a recent text."""
        return self._memo.of(text)

    def redact_json(self, raw: str) -> str:
        """``raw``, a JSON text (a tool call's arguments), redacted as :func:`redact_json_text`
        does; a recent text is looked up: the run's record and the next request see the
        arguments of each call again."""
        return self._json_memo.of(raw)

    def _scan_json(self, raw: str) -> str:
        return redact_json_text(raw, self.redact_text)

    def _scan(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        text = self._regex.sub(REDACTED, text)
        lowered = text.lower()
        for pattern, needles in _KEEPING_PREFIX:
            # map, not a generator: a generator costs more than a short text's whole scan
            if any(map(lowered.__contains__, needles)):
                text = pattern.sub(_keep_prefix, text)
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
        if isinstance(value, str) and value and _secret_name(key):
            return REDACTED
        return self.redact(value)


@functools.lru_cache(maxsize=1024)
def _secret_name(key: str) -> bool:
    """Whether a mapping's key looks secret: the few keys of the records are each searched once."""
    return SECRET_NAME.search(key) is not None


def redact_json_text(raw: str, redact: Callable[[str], str]) -> str:
    """``raw``, a JSON text (a tool call's arguments), with every string inside it redacted by
    its value: a secret spelled with JSON escapes (``\\u002d`` for ``-``) is found as well as one
    written plainly. ``raw`` itself when nothing was found; redacted as text when not JSON."""
    try:
        data = json.loads(raw)
    except ValueError:
        return redact(raw)
    redacted = redact_strings(data, redact)
    return raw if redacted == data else json.dumps(redacted)


def redact_strings(data: Any, redact: Callable[[str], str]) -> Any:
    """``data`` (parsed JSON) with its strings, keys included, redacted: what a record written to
    disk or a request body holds."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact(key): redact_strings(value, redact) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact_strings(item, redact) for item in data]
    return data


_ENV_LINE = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=\s*(?P<value>.*?)\s*$")


def env_file_values(text: str) -> list[str]:
    """The values of a ``.env`` file's ``NAME=value`` lines (quotes taken off, an inline comment
    after an unquoted value dropped), those of :data:`MIN_SECRET_LENGTH` characters or more: a
    project's ``.env`` holds its secrets, whatever their names."""
    values = []
    for line in text.splitlines():
        match = _ENV_LINE.match(line)
        if match is None:
            continue
        value = match.group("value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        if len(value) >= MIN_SECRET_LENGTH:
            values.append(value)
    return values


def _keep_prefix(match: re.Match[str]) -> str:
    """The match's one non-empty named group (what is kept), then ``[REDACTED]``."""
    kept = next(group for group in match.groupdict().values() if group is not None)
    return kept + REDACTED


def _redact_token(match: re.Match[str]) -> str:
    token = match.group(0)
    return REDACTED if _looks_generated(token) else token


def _looks_generated(token: str) -> bool:
    """Whether a run of letters, digits and ``+_=-`` reads as a generated secret (see
    :data:`MIN_TOKEN_ENTROPY`, :data:`MIN_CASE_CHANGES`, :data:`MIN_SINGLE_CASE_ENTROPY`)."""
    lower = sum(c.islower() for c in token)
    upper = sum(c.isupper() for c in token)
    digits = sum(c.isdigit() for c in token)
    if lower and upper and digits:
        return _entropy(token) >= MIN_TOKEN_ENTROPY and _case_changes(token) >= MIN_CASE_CHANGES
    letters = lower + upper
    return (
        letters + digits == len(token)
        and min(letters, digits) >= MIN_DIGIT_SHARE * len(token)
        and not all(c in string.hexdigits for c in token)
        and _entropy(token) >= MIN_SINGLE_CASE_ENTROPY
    )


def _case_changes(token: str) -> float:
    """Share of neighbouring letters and digits in ``token`` (which holds a lower-case letter,
    an upper-case letter and a digit) that differ in class."""
    classes = [(c.islower(), c.isupper()) for c in token if c.isalnum()]
    changes = sum(a != b for a, b in itertools.pairwise(classes))
    return changes / (len(classes) - 1)


def _entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
