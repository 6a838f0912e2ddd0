"""The set-up commands of a benchmark's environments: a small TOML table the user writes.

```toml
[[env]]
repo = "pallets/flask"       # owner/name, or "*" for every repository
version = "2.0"              # an instance's version, or "*" (the default) for every one
setup = "uv pip install -e . pytest==7.4.0"
python = "python3.11"        # optional: the interpreter the venv is made from
```

An instance takes the first entry naming its repository and version, else its repository and
``"*"``, else ``"*"`` and ``"*"``; without one, its tests run in the harness's own Python. The
environment is made once per (repository, ``environment_setup_commit``) with ``[env] setup``
and ``[env] commit`` (:mod:`harness.assemble.env_setup`) and kept for every later instance and run.

An entry may name a container image instead of a set-up command, the environment already made:

```toml
[[env]]
repo = "astropy/astropy"
image = "swe-env/{instance_id}:latest"   # {instance_id}: one image per instance
workdir = "/testbed"                              # where the image expects the repository
engine = "docker"                                 # or "podman"
python = "/opt/miniconda3/envs/testbed/bin/python"  # the image's interpreter (default python3)
```

The instance's loop then runs in the image (``[sandbox]``): the workspace mounted at ``workdir``,
the agent's commands in one long-lived container per instance, each gate in a throw-away one.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.core.errors import ConfigError
from harness.core.validation import format_validation_error, read_utf8
from harness.scale.swebench_instance import Instance

ANY = "*"


class EnvRecipe(BaseModel):
    """How the environments of one repository (at one version, or all) are made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(pattern=r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+|\*)$")  # REPO, or "*"
    version: str = Field(ANY, min_length=1)
    setup: str | None = Field(None, min_length=1)
    python: str | None = Field(None, min_length=1)
    image: str | None = Field(None, min_length=1)
    """A container image holding the environment; ``{instance_id}`` is the instance's id."""
    workdir: str = Field("/testbed", pattern=r"^/[^\x00]*[^/\x00]$")
    engine: Literal["docker", "podman"] = "docker"

    @model_validator(mode="after")
    def _one_way(self) -> EnvRecipe:
        if (self.setup is None) == (self.image is None):
            raise ValueError(
                "give one of setup (a command that makes the environment) and image (one holding it)"
            )
        return self

    def image_of(self, instance: Instance) -> str | None:
        """The image ``instance`` runs in, or None when its environment is made by ``setup``."""
        if self.image is None:
            return None
        return self.image.replace("{instance_id}", instance.instance_id)


class EnvTable(BaseModel):
    """``[[env]]`` entries, in the order they were written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: list[EnvRecipe] = []

    def recipe(self, instance: Instance) -> EnvRecipe | None:
        """The entry ``instance``'s environment is made with, or None for the harness's own."""
        first = {(entry.repo, entry.version): entry for entry in reversed(self.env)}
        keys = [(instance.repo, instance.version), (instance.repo, ANY), (ANY, ANY)]
        return next((first[key] for key in keys if key in first), None)


def load_env_table(path: str | Path) -> EnvTable:
    """The table in ``path``; an error names the file and the field."""
    path = Path(path)
    try:
        data = tomllib.loads(read_utf8(path, "a table of environments"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return EnvTable.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(path, exc)) from None
