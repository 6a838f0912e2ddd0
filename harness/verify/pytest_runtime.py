"""Which Python runs the tests, and whether they can run at all in the project's environment.

The pytest gate runs the sandbox's interpreter (:attr:`Sandbox.python`): the project's own when
it has an environment, so that its code finds its dependencies. The pytest it runs is the
project's, when that environment holds one (its version and plugins are what its tests were
written for, and the environment lies outside the agent's reach: mounted read-only), else the
harness's own, found only after the project's packages and only for pytest and what it
requires (:func:`pytest_command`). Either way the harness's guarantees hold: isolated mode keeps
the workspace off ``sys.path`` until pytest and its plugins are imported, the report goes
outside the workspace, and nothing is cached or compiled into it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from harness.sandbox import Sandbox
from harness.verify.junit import JUnitReport

HARNESS_PYTEST = """\
import importlib.machinery, importlib.util, sys
if importlib.util.find_spec("pytest") is None:
    class HarnessPytest:
        names, where = {names!r}, {where!r}
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if "." in name or name not in cls.names:
                return None
            return importlib.machinery.PathFinder.find_spec(name, cls.where)
    sys.meta_path.append(HarnessPytest)
"""
"""Put first in the boot code when the project's interpreter runs the tests: if its environment
has no pytest, the harness's pytest and the packages it requires (and nothing else of the
harness's environment) are found after the project's own."""

FROM_WORKSPACE = """\
import os, site, sys
source, here, env = {source!r}, os.getcwd(), {prefix!r}
def judged(path):
    inside = path == source or path.startswith(source + os.sep)
    kept = path == env or path.startswith(env + os.sep)
    return here + path[len(source):] if inside and not kept else path
sys.path[:] = [judged(path) for path in sys.path]
for folder in site.getsitepackages():
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if not name.endswith(".pth"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as lines:
            for line in lines:
                given = os.path.join(folder, line.strip())
                path = judged(given)
                if path != given and path not in sys.path and os.path.isdir(path):
                    sys.path.append(path)
for module in list(sys.modules.values()):
    mapping = getattr(module, "MAPPING", None)
    if module.__name__.startswith("__editable__") and isinstance(mapping, dict):
        mapping.update({{name: judged(path) for name, path in mapping.items()}})
"""
"""Next: an editable install of the project (a ``.pth`` path, setuptools' finder ``MAPPING``)
points into the checkout the environment was made from; it is pointed at the checkout being
judged, so a ``src/`` layout tests the round's code, not the base's. A ``.pth`` path the
sandbox does not show (a checkout in the hidden home) was left out of ``sys.path`` at start:
its place in the judged checkout is added."""

NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")

ENV_HINT = "is the project's environment set up? see [env]"


def pytest_command(sandbox: Sandbox, boot: str) -> list[str]:
    """``python -I -B -c boot`` with the sandbox's interpreter; the harness's pytest on call."""
    if sandbox.python_env is None:
        return [sandbox.python, "-I", "-B", "-c", boot]
    project = sandbox.python_env
    names, where = harness_pytest()
    prelude = HARNESS_PYTEST.format(names=names, where=where)
    if project.source is not None:
        prelude += FROM_WORKSPACE.format(source=str(project.source), prefix=str(project.prefix))
    return [sandbox.python, "-I", "-B", "-c", prelude + boot]


@functools.cache
def harness_pytest() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The top-level modules of the harness's pytest and every package it requires (extras
    aside), and the folders they are found in."""
    tops: dict[str, list[str]] = {}
    for top, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            tops.setdefault(_normal(dist), []).append(top)
    todo, seen = ["pytest"], set()
    while todo:
        name = _normal(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [m[0] for r in requires if "extra ==" not in r and (m := _NAME.match(r))]
    names = sorted({top for dist in seen for top in tops.get(dist, []) if top.isidentifier()})
    where = sorted({folder for top in names if (folder := _folder(top)) is not None})
    return tuple(names), tuple(where)


def base_blocker(report: JUnitReport, checkout: Path, python: str = "python") -> str | None:
    """Why the tests cannot even run at the base commit (``checkout``) with ``python``, or None.

    A module that cannot be collected because a module the project does not hold is missing
    (``ModuleNotFoundError: toolz``) says the environment lacks a dependency: no round can pass
    there. So does the project's own package of a ``src/`` layout (``src/textstats``) not found
    at all: it is imported only once installed in the environment. A missing module of the
    project's own elsewhere, or any other import error, may be the bug.
    """
    for problem in report.problems:
        found = NO_MODULE.search(problem.cause) if problem.collection else None
        if found is None:
            continue
        top = found[1].partition(".")[0]
        if not _provides(checkout, top):
            return (
                f"cannot collect at the base commit: ModuleNotFoundError: {found[1]} — {ENV_HINT}"
            )
        if found[1] == top and _in_src(checkout, top):
            return (
                f"cannot collect at the base commit: ModuleNotFoundError: {top} — the project's "
                f"own package (src/{top}) cannot be imported by {python}: install the project "
                "in its environment (pip install -e . in its .venv or venv), or see [env]"
            )
    return None


def _in_src(checkout: Path, top: str) -> bool:
    """Whether ``top`` is a package or module of a ``src/`` layout in the project."""
    return (checkout / "src" / top).is_dir() or (checkout / "src" / f"{top}.py").is_file()


def _provides(checkout: Path, top: str) -> bool:
    """Whether the project holds a module or package named ``top`` anywhere in its files."""
    return any(checkout.rglob(f"{top}.py")) or any(path.is_dir() for path in checkout.rglob(top))


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _folder(top: str) -> str | None:
    """The ``sys.path`` folder ``top`` is imported from."""
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        locations = list(spec.submodule_search_locations or []) if spec else []
        return str(Path(locations[0]).parent) if locations else None
    origin = Path(spec.origin)
    return str(origin.parent.parent if spec.submodule_search_locations else origin.parent)
