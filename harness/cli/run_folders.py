"""Finding the runs of the loops under a path: ``harness runs`` and ``harness report``.

Apart from :mod:`harness.cli.discover` so that ``harness status``, which reads progress files
only, does not import the event models that reading a run takes.
"""

from __future__ import annotations

from pathlib import Path

from harness.cli.discover import find_loops
from harness.core.errors import ConfigError
from harness.observe.run_summary import RUNS_DIR, RunInfo, find_run, list_runs


def run_folders(path: str | Path) -> list[Path]:
    """The ``.harness/runs`` folders that hold the runs of ``path``: its own, then those of the
    loops :func:`find_loops` finds at or under it (``examples/bugfix`` keeps its runs in
    ``examples/bugfix/.harness/runs``). Only folders that exist, each once."""
    path = Path(path)
    roots = [path]
    if path.is_dir():
        try:
            loops, _ = find_loops(path)
        except ConfigError:  # a broken loop.toml here: its own runs folder still counts
            loops = []
        roots += [loop.config.root for loop in loops if loop.config is not None]
    folders = {(root / RUNS_DIR).resolve(): root / RUNS_DIR for root in roots}
    return [folder for folder in folders.values() if folder.is_dir()]


def all_runs(path: str | Path) -> list[RunInfo]:
    """The runs in every folder of :func:`run_folders`, newest first (unreadable ones last)."""
    found = [info for folder in run_folders(path) for info in list_runs(folder)]
    return sorted(found, key=lambda info: (info.started is not None, info.started), reverse=True)


def find_run_under(ref: str, root: Path) -> Path:
    """The run folder ``ref`` names: a folder of its own, or a run id in a folder of
    :func:`run_folders` (``root``'s own first)."""
    folders = run_folders(root)
    for folder in folders:
        try:
            return find_run(ref, root=folder.parent.parent)
        except ConfigError:
            continue
    if not folders:
        return find_run(ref, root=root)  # raises, naming where it looked
    looked = ", ".join(str(folder) for folder in folders)
    raise ConfigError(f"run: no run folder or run id {ref!r} (looked in {looked})")
