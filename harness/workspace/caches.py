"""Byte code and tool caches: never a change of a round, never committed."""

from __future__ import annotations

CACHE_PATTERNS = (
    "__pycache__/",
    "*.pyc",
    "*.pyo",
    ".pytest_cache/",
    ".ruff_cache/",
    ".mypy_cache/",
    ".aider.tags.cache.v4/",
)
"""What running Python, pytest, ruff, mypy or aider (its repository map) leaves behind, in
``.gitignore`` syntax."""


CACHE_EXCLUDES = tuple(
    f":(top,exclude,glob)**/{pattern}{'**' if pattern.endswith('/') else ''}"
    for pattern in CACHE_PATTERNS
)
"""Pathspecs that leave :data:`CACHE_PATTERNS` out of ``git add``, whatever ``.gitignore`` says."""


def add_all(scope: str = ":/") -> tuple[str, ...]:
    """``git add -A`` of ``scope`` (default: the whole checkout) without the caches.

    Tracked caches stay as the base has them: neither their changes nor their removal is added.
    """
    return ("add", "-A", "--", scope, *CACHE_EXCLUDES)
