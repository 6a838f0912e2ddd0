"""Fixtures of the core tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's, outside the harness's folders: what a planted link aims at."""
    target = tmp_path / "outside" / ".bashrc"
    target.parent.mkdir()
    target.write_text("# mine\n")
    return target
