"""Which of a round's files are tests, and which tests it added or changed.

A reproduction gate runs the tests a round wrote at the base commit and at the round's commit.
The files it takes are the changed ones a test run reads: test modules by pytest's naming
(``test_*.py``, ``*_test.py``, ``test.py``, ``tests.py``) and anything in a ``tests`` or
``test`` folder (helpers, data). A test counts as the round's when its module is new, or when
its function (with its decorators) reads differently from the base's.
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath
from collections.abc import Callable, Iterable

TEST_MODULES = ("test_*.py", "*_test.py", "test.py", "tests.py")
"""The names of the modules pytest is asked to run."""

TEST_FOLDERS = frozenset({"tests", "test", "testing"})
"""Folders whose files a test run reads, whatever their names."""


def is_test_module(path: str) -> bool:
    """Whether ``path`` (relative, ``/``-separated) names a test module."""
    name = posixpath.basename(path)
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in TEST_MODULES)


def files_tests_read(changed: Iterable[str]) -> list[str]:
    """The changed paths a test run reads: test modules and what lies in test folders."""
    return [
        path
        for path in changed
        if is_test_module(path) or TEST_FOLDERS & set(posixpath.dirname(path).split("/"))
    ]


def written_by_round(
    test_ids: Iterable[str],
    read_base: Callable[[str], str | None],
    read_now: Callable[[str], str | None],
) -> list[str]:
    """The ids among ``test_ids`` whose tests the round added or changed (see the module).

    ``read_base`` and ``read_now`` give a module's text at the base and now (None: absent).
    """
    sources: dict[str, tuple[dict[str, str], dict[str, str]] | None] = {}
    found = []
    for test_id in test_ids:
        path, _, rest = test_id.partition("::")
        if path not in sources:
            text = read_base(path)
            sources[path] = None if text is None else (_defs(text), _defs(read_now(path)))
        known = sources[path]  # None: a module the round added
        name = ".".join(part.split("[")[0] for part in rest.split("::"))
        if known is None or known[0].get(name) != known[1].get(name):
            found.append(test_id)
    return found


def _defs(text: str | None) -> dict[str, str]:
    """Each function of ``text`` by its dotted name (``Class.test_x``), with its text from its
    first decorator on; {} for a module that does not parse."""
    if text is None:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    found: dict[str, str] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found[prefix + node.name] = "\n".join(lines[first - 1 : node.end_lineno])

    visit(tree.body, "")
    return found
