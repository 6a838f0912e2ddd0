"""A loop whose ``[web]`` tools lack their extra stops naming it as a clone installs it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.test_cli import harness

HIDDEN = "raise ModuleNotFoundError(\"No module named 'trafilatura'\", name='trafilatura')\n"


def test_web_tools_without_their_extra_name_the_clone_s_install_command(tmp_path: Path) -> None:
    hide = tmp_path / "hide" / "trafilatura"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text(HIDDEN)  # as if the extra were not installed
    project = tmp_path / "project"
    project.mkdir()
    (project / "loop.toml").write_text(
        'name = "look"\ngoal = "read the docs"\nmodel = "scripted:none.json"\n'
        'isolation = "none"\n[critic]\nenabled = false\n'
        '[[gates]]\ntype = "command"\ncmd = "true"\n'
        '[web]\nallow_domains = ["docs.python.org"]\n'
    )
    (project / "none.json").write_text('["done"]')
    env = {
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "hide"), os.environ.get("PYTHONPATH", "")])
    }

    result = harness("run", "--quiet", cwd=project, env=env)

    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == (
        "harness: loop.toml: web: trafilatura is not installed; from a clone of harness: pip install -e "
        "'.[web]' (from a package index: pip install 'harness[web]')"
    )
    assert "web.web" not in result.stderr
