"""What a loop's name may be: it names the progress file and the run branch.

A module of its own, free of pydantic, so that :mod:`harness.spec.outline` checks a name as
:class:`~harness.outer.rules.LoopRules` does without importing pydantic.
"""

LOOP_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
DEFAULT_LOOP_NAME = "loop"
