"""A benchmark instance in the SWE-bench record format, read from a JSONL file or a JSON list.

The published files give ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` either as JSON lists or as
JSON-encoded strings of lists; both are taken. Every record is validated; an error names the
file, the record and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.core.errors import ConfigError
from harness.core.validation import format_validation_error, json_lines, read_utf8
from harness.scale.batch_task import NAME_PATTERN

REPO = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"
COMMIT = r"^[0-9a-f]{7,64}$"
"""A commit id (a record's ``base_commit``, its ``environment_setup_commit`` when given): never
a word git could read as an option."""


class Instance(BaseModel):
    """One instance: a repository at a commit, an issue, the reference fix and its tests."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str = Field(pattern=NAME_PATTERN)  # a batch task's name
    repo: str = Field(pattern=REPO)
    base_commit: str = Field(pattern=COMMIT)
    problem_statement: str = Field(min_length=1)
    hints_text: str = ""
    patch: str = ""
    test_patch: str = Field(min_length=1)
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    PASS_TO_PASS: list[str] = []
    version: str = ""
    environment_setup_commit: str = Field("", pattern=f"{COMMIT}|^$")

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decoded(cls, value: Any) -> Any:
        """A JSON-encoded list, as the published files hold it, is read as the list."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"a JSON list of test ids, or a list; not JSON: {exc.msg}"
                ) from None
        return value

    @property
    def tests(self) -> list[str]:
        """Every held-out test the verdict runs: those that must start passing, then the rest."""
        return [*self.FAIL_TO_PASS, *self.PASS_TO_PASS]


def load_instances(path: str | Path) -> list[Instance]:
    """The instances of ``path``: JSON Lines, or one JSON list; ids unique."""
    path = Path(path)
    instances: dict[str, Instance] = {}
    for where, data in _records(path, read_utf8(path, "the instances")):
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a JSON object (an instance record)")
        try:
            instance = Instance.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(where, exc)) from None
        if instance.instance_id in instances:
            raise ConfigError(f"{where}: instance_id {instance.instance_id!r} appears twice")
        instances[instance.instance_id] = instance
    if not instances:
        raise ConfigError(f"{path}: no instances")
    return list(instances.values())


def _records(path: Path, text: str) -> list[tuple[str, object]]:
    """``(where, record)`` pairs: the items of a JSON list, else one a non-empty line."""
    if not text.lstrip().startswith("["):
        return list(json_lines(path, text))
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read") from None
    if not isinstance(items, list):
        raise ConfigError(f"{path}: expected a JSON list of instance records")
    return [(f"{path}: record {number}", item) for number, item in enumerate(items, 1)]
