"""The ``harness`` command's exit codes: what a script calling it can rely on."""

EXIT_PASSED = 0
EXIT_ERROR = 1  # an internal error stopped the run
EXIT_USAGE = 2  # bad usage or configuration; the message names the field
EXIT_ESCALATED = 3  # the loop gave up (cap, budget, no progress) and escalated to a person
