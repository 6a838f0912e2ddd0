"""lasting(): no collection inside, everything alive at its end frozen, the collector as before.

Each case runs in a Python of its own: freezing is for the whole process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_objects_kept_from_the_block_are_frozen_and_later_ones_are_not() -> None:
    done = run("""
        import gc
        from harness.core.lasting import lasting

        started = []
        gc.callbacks.append(lambda phase, info: started.append(phase) if phase == "start" else None)
        before = [["before"]]
        with lasting():
            assert not gc.isenabled()
            kept = [[n] for n in range(100_000)]  # would start collections with the collector on
        assert started == [], started
        assert gc.isenabled()
        after = [[n] for n in range(100_000)]
        assert started, "no collection ran outside the block: the first check proves nothing"
        tracked = {id(o) for o in gc.get_objects()}
        assert id(before) not in tracked and id(kept) not in tracked
        assert not any(id(k) in tracked for k in kept[::97])
        assert id(after) in tracked and id(after[5]) in tracked
        assert gc.get_freeze_count() >= 100_000
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_the_collector_is_left_as_it_was_even_when_the_block_raises() -> None:
    done = run("""
        import gc
        from harness.core.lasting import lasting

        try:
            with lasting():
                raise KeyError("inside")
        except KeyError:
            pass
        assert gc.isenabled(), "not enabled again after a raise"
        gc.disable()
        with lasting():
            pass
        assert not gc.isenabled(), "enabled though it was off before"
        print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
