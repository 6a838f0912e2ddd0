"""The ``harness`` command's exit codes: what a script calling it can rely on."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from harness.core.stop import StopReason

if TYPE_CHECKING:
    from harness.outer.result import RunResult

EXIT_PASSED = 0
EXIT_ERROR = 1  # an internal error stopped the run
EXIT_USAGE = 2  # bad usage or configuration; the message names the field
EXIT_ESCALATED = 3  # the loop gave up (cap, budget, no progress) and escalated to a person
SYSTEM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
"""Write errors that say the machine is in trouble (exit 1), not that the path was wrong (2)."""


def run_exit_code(result: RunResult) -> int:
    """What ``harness run`` exits with for a run that ended as ``result`` did."""
    if result.stop_reason.is_success:
        return EXIT_PASSED
    if result.bad_configuration:
        return EXIT_USAGE
    return EXIT_ERROR if result.stop_reason is StopReason.ERROR else EXIT_ESCALATED
