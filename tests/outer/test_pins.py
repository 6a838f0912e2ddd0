"""A pinned file is known by the digest of its own bytes: never through a link, never a pipe."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from harness.outer.pins import MISSING, digest, first_changed, pin


def test_a_regular_file_is_pinned_by_its_bytes_and_a_change_is_named(tmp_path: Path) -> None:
    loop = tmp_path / "loop.toml"
    loop.write_text('goal = "g"\n')
    pins = pin([loop, tmp_path / "gone.py", loop])
    assert pins == (
        (str(loop), hashlib.sha256(b'goal = "g"\n').hexdigest()),
        (str(tmp_path / "gone.py"), MISSING),
    )
    assert first_changed(pins) is None
    loop.write_text('goal = "other"\n')
    assert first_changed(pins) == str(loop)


def test_a_link_a_pipe_or_a_folder_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("key")
    (tmp_path / "link.py").symlink_to(secret)
    os.mkfifo(tmp_path / "pipe.py")  # opening it for reading would wait for a writer
    (tmp_path / "folder.py").mkdir()
    for name in ("link.py", "pipe.py", "folder.py"):
        assert digest(tmp_path / name) == MISSING
