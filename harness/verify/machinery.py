"""Code under test that reaches into the test machinery, found in the lines a round added.

The code under test runs inside pytest's process, where it could rewrite the verdict before the
gate's reporter sends it. Ordinary code has no business there: it does not import pytest's
internals or ``pluggy``, register ``atexit`` hooks, end the process with ``os._exit``, edit
``sys.modules`` or the import system, replace names in ``builtins``, walk the interpreter's frames
and objects (``sys._getframe``, ``gc.get_objects``), trace it (``sys.settrace``), signal its own
process or its parent, or re-point file descriptors (``os.dup2``, ``os.closerange``).
:func:`machinery_reaches` finds these, by parsing each changed Python file and keeping what
stands on the lines the round added; it never runs the code. Test files are not looked at: the
tests are protected, and a round that changes them fails before this check.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core import nofollow
from harness.verify.gates import GateReport, tail

INTERNAL_MODULES = frozenset({"_pytest", "pluggy", "atexit"})
"""Modules whose import from code under test is itself a reach into the machinery."""

PYTEST_MACHINERY = frozenset({
    "TestReport", "CollectReport", "CallInfo", "Session", "Config", "PytestPluginManager",
    "hookimpl", "hookspec", "main", "exit", "Item", "Function", "Collector", "Module", "Class",
    "Package", "Dir", "Directory", "File", "Stash", "StashKey",
})  # fmt: skip
"""Names of ``pytest`` that reach its running machinery (``pytest.raises`` or ``pytest.fixture``
in a helper module are ordinary)."""

_INTERPRETER = {
    ("sys", "_getframe"): "walks the interpreter's frames (sys._getframe)",
    ("sys", "settrace"): "traces the interpreter (sys.settrace)",
    ("sys", "setprofile"): "traces the interpreter (sys.setprofile)",
    ("gc", "get_objects"): "searches the interpreter's objects (gc.get_objects)",
    ("gc", "get_referrers"): "searches the interpreter's objects (gc.get_referrers)",
    ("gc", "get_referents"): "searches the interpreter's objects (gc.get_referents)",
    ("os", "dup2"): "re-points a file descriptor (os.dup2)",
    ("os", "closerange"): "closes file descriptors it did not open (os.closerange)",
}
_IMPORT_SYSTEM = frozenset({"modules", "meta_path", "path_hooks"})
_MUTATORS = frozenset({
    "pop", "popitem", "update", "setdefault", "clear", "append", "insert", "extend", "remove",
    "__setitem__", "__delitem__",
})  # fmt: skip
_OWN_PROCESS = frozenset({"getppid", "getpid", "getpgid", "getpgrp"})
_BUILTINS = frozenset({"builtins", "__builtins__"})
_IMPORTERS = frozenset({"__import__", "import_module"})
_ALIASED = frozenset({"os", "posix", "sys", "gc", "builtins", "pytest", "importlib"})
"""Modules followed under another name (``import os as _os``)."""


@dataclass(frozen=True)
class Reach:
    """One place in a file where code reaches into the test machinery."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.what}"


FileReader = Callable[[str], "str | None"]
"""The text of a workspace-relative path, or None when there is no such file."""


def machinery_reaches(
    changed: Sequence[str], workspace: Path, read_base: FileReader | None
) -> list[Reach]:
    """Every reach on a line added to a changed Python file of ``workspace``.

    ``changed`` are the round's changed paths less the protected ones; ``read_base`` reads a file
    at the base (None: every line counts as added). A changed Python file that is a link, not
    a file, or not UTF-8 is a reach too: what it runs cannot be checked.
    """
    found: list[Reach] = []
    for path in changed:
        if not path.endswith(".py"):
            continue
        try:
            text = nofollow.read_text(workspace / path, root=workspace)
        except FileNotFoundError:
            continue  # deleted
        except (OSError, UnicodeDecodeError, nofollow.UnsafePath):
            found.append(Reach(path, 1, "cannot be read as a Python file, so it cannot be checked"))
            continue
        before = read_base(path) if read_base is not None else None
        found.extend(reaches(path, text, added_lines(before, text)))
    return found


def added_lines(before: str | None, after: str) -> set[int]:
    """The numbers (from 1) of the lines of ``after`` that ``before`` did not have."""
    new = after.splitlines()
    if before is None:
        return set(range(1, len(new) + 1))
    old = before.splitlines()
    # The lines both share at the start and at the end are matched as they stand; only those
    # between are compared (a small change to a long file costs its own size, not the file's).
    shortest, head, tail = min(len(old), len(new)), 0, 0
    while head < shortest and old[head] == new[head]:
        head += 1
    while tail < shortest - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(
        None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False
    )
    return {
        head + line + 1
        for tag, _, _, start, end in matcher.get_opcodes()
        if tag in ("insert", "replace")
        for line in range(start, end)
    }


def reaches(path: str, text: str, added: set[int]) -> list[Reach]:
    """The reaches in Python ``text`` that start on an ``added`` line (a file that does not parse
    reaches nothing: it cannot even be imported)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    _unalias(tree)
    found = {
        Reach(path, node.lineno, what)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt | ast.expr) and node.lineno in added
        for what in _what(node)
    }
    return sorted(found, key=lambda reach: (reach.line, reach.what))


def _unalias(tree: ast.AST) -> None:
    """Call each module of :data:`_ALIASED` imported under another name by its own name."""
    aliases = {
        alias.asname: alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.asname and alias.name in _ALIASED
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases:
            node.id = aliases[node.id]


def _what(node: ast.AST) -> Iterator[str]:
    """What ``node`` itself does to the test machinery."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in INTERNAL_MODULES:
                yield f"imports {alias.name}"
    elif isinstance(node, ast.ImportFrom):
        yield from _imported_from(node)
    elif isinstance(node, ast.Attribute):
        yield from _attribute(node)
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
        target = _dotted(node.value)
        if target in ("sys.modules", "__builtins__", "builtins.__dict__"):
            yield f"changes {target}"
    elif isinstance(node, ast.Call):
        yield from _call(node)


def _imported_from(node: ast.ImportFrom) -> Iterator[str]:
    module = node.module or ""
    names = [alias.name for alias in node.names]
    if module.split(".")[0] in INTERNAL_MODULES:
        yield f"imports {module}"
    elif module in ("os", "posix") and "_exit" in names:
        yield f"imports {module}._exit"
    elif module == "pytest":
        yield from (f"imports pytest.{name}" for name in names if name in PYTEST_MACHINERY)
    else:
        yield from (_INTERPRETER[module, name] for name in names if (module, name) in _INTERPRETER)
        if module == "sys":
            yield from (f"imports sys.{name}" for name in names if name in _IMPORT_SYSTEM)


def _attribute(node: ast.Attribute) -> Iterator[str]:
    owner = _dotted(node.value)
    writing = isinstance(node.ctx, ast.Store | ast.Del)
    if owner in ("os", "posix") and node.attr == "_exit":
        yield f"ends the process with {owner}._exit"
    elif owner == "pytest" and node.attr in PYTEST_MACHINERY:
        yield f"uses pytest.{node.attr}"
    elif owner in _BUILTINS and writing:
        yield f"replaces {owner}.{node.attr}"
    elif owner == "sys" and writing and node.attr in {*_IMPORT_SYSTEM, "exit"}:
        yield f"replaces sys.{node.attr}"
    elif owner is not None and (owner, node.attr) in _INTERPRETER:
        yield _INTERPRETER[owner, node.attr]
    elif owner in ("sys.modules", "sys.meta_path", "sys.path_hooks") and node.attr in _MUTATORS:
        yield f"changes {owner}"


def _call(node: ast.Call) -> Iterator[str]:
    name = _dotted(node.func)
    first = node.args[0] if node.args else None
    if name in ("setattr", "delattr") and first is not None and _dotted(first) in _BUILTINS:
        yield f"replaces a name in {_dotted(first)}"
    elif name is not None and name.rsplit(".", 1)[-1] in _IMPORTERS:
        module = first.value if isinstance(first, ast.Constant) else None
        if isinstance(module, str) and module.split(".")[0] in INTERNAL_MODULES:
            yield f"imports {module}"
    elif name in ("os.kill", "os.killpg", "signal.pthread_kill"):
        called = {_dotted(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        if any(c is not None and c.rsplit(".", 1)[-1] in _OWN_PROCESS for c in called):
            yield f"signals its own process or its parent ({name})"


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return f"{owner}.{node.attr}" if owner is not None else None
    return None


MACHINERY_CHECK = "test machinery"
"""The name of the report a round gets when its code reaches into the test machinery."""


def machinery_report(found: Sequence[Reach]) -> GateReport:
    """The failing report that names every reach, for the round's gates and feedback."""
    places = list(dict.fromkeys(f"{reach.path}:{reach.line}" for reach in found))
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    lines = [str(reach) for reach in found]
    lines.append(
        "The code under test runs inside pytest's process; code that reaches into it is judged "
        "a forgery of the verdict, whatever the tests say. Remove it and fix the code itself."
    )
    return GateReport(
        name=MACHINERY_CHECK,
        passed=False,
        summary=f"non-test code reaches into the test machinery: {found[0]}{more}",
        failures=places,
        output_tail=tail("\n".join(lines)),
    )
