"""Mutation score of the modules that guard trust, each against its own focused tests.

A mutant is the module with one small change a bug could make: a comparison flipped at its
boundary or negated (``<`` to ``<=``, ``==`` to ``!=``, ``in`` to ``not in``), ``and``/``or``
swapped, a ``not`` dropped, an integer constant moved by one, a decimal constant moved by one
(doubled and halved below one), ``True``/``False`` flipped, a ``return`` giving ``None``, one
statement deleted, one element dropped from a module-level tuple, list, set or dict. A mutant is
*killed* when the focused tests fail (or time out) with it in place; a *survivor* is a change no
test noticed. Every mutant runs in a scratch copy of the code, tests and docs (the work tree is
never touched), with Hypothesis on fixed examples (the ``mutation`` profile in
tests/conftest.py) so a re-run gives the same figures.

    nice python bench/mutation.py                 # every module, a table and the survivors
    nice python bench/mutation.py redact budget   # some of them
    nice python bench/mutation.py --jobs 2 --list # also list every mutant

Takes minutes per module on one core; not part of CI (see docs/testing.md).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY_LIMIT = 4 * 2**30
"""Address space a mutant's test run may take: a mutant that loops forever appending must not
eat the machine's memory before its timeout."""

MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "redact": (
        "harness/core/redact.py",
        ("tests/core/test_redact.py", "tests/core/test_redact_values.py"),
    ),
    "budget": (
        "harness/models/budget.py",
        (
            "tests/models/test_budget.py",
            "tests/models/test_budget_spend.py",
            "tests/models/test_redaction.py",
            "tests/observe/test_trajectory.py",
        ),
    ),
    "decision": (
        "harness/outer/decision.py",
        ("tests/outer/test_decision.py", "tests/outer/test_decision_people_and_stalls.py"),
    ),
    "condition": (
        "harness/engine/condition.py",
        ("tests/engine/test_condition.py", "tests/engine/test_exit_conditions.py"),
    ),
    "reference": (
        "harness/engine/reference.py",
        ("tests/engine/test_reference.py", "tests/engine/test_condition.py"),
    ),
    "paths": (
        "harness/tools/paths.py",
        ("tests/tools/test_paths.py", "tests/tools/test_state_paths.py"),
    ),
    "env": ("harness/sandbox/command_env.py", ("tests/sandbox/test_command_env.py",)),
    "gates": ("harness/verify/gates.py", ("tests/verify/test_gate_verdicts.py",)),
    "pytest_gate": ("harness/verify/pytest_gate.py", ("tests/verify/test_gate_verdicts.py",)),
    "json_reply": ("harness/core/json_reply.py", ("tests/core/test_json_reply.py",)),
    "pricing": ("harness/models/pricing.py", ("tests/models/test_pricing_warning.py",)),
    "round": (
        "harness/verify/round.py",
        ("tests/verify/test_round.py", "tests/verify/test_protected_surfaces.py"),
    ),
    "critic": (
        "harness/verify/critic.py",
        (
            "tests/verify/test_critic.py",
            "tests/verify/test_critic_settings.py",
            "tests/verify/test_panel.py",  # the rubric's verdicts
        ),
    ),
    "claims": (
        "harness/outer/claims.py",
        ("tests/outer/test_pass_claims.py", "tests/outer/test_forged_state.py"),
    ),
    "limits": (
        "harness/sandbox/limits.py",
        ("tests/sandbox/test_policy_argv.py", "tests/sandbox/test_lifeline.py"),
    ),
    "bwrap": ("harness/sandbox/bwrap.py", ("tests/sandbox/test_policy_argv.py",)),
    "provider_errors": ("harness/models/provider_errors.py", ("tests/models/test_error_kinds.py",)),
    "tokens": ("harness/models/tokens.py", ("tests/models/test_tokens.py",)),
    "records": ("harness/outer/records.py", ("tests/outer/test_records.py",)),
    "triggers": (
        "harness/connect/triggers.py",
        ("tests/connect/test_webhook_events.py", "tests/connect/test_triggers.py"),
    ),
    "deliveries": (
        "harness/connect/deliveries.py",
        ("tests/connect/test_seen_deliveries.py", "tests/connect/test_triggers.py"),
    ),
    "citations": (
        "harness/research/citations.py",
        (
            "tests/research/test_citations.py",
            "tests/research/test_citations_sources.py",
            "tests/research/test_research_gates.py",
        ),
    ),
    "archive": (
        "harness/research/archive.py",
        (
            "tests/research/test_archive.py",
            "tests/research/test_research_gates.py",
            "tests/research/test_web_archive.py",
        ),
    ),
    "shell_commands": (
        "harness/tools/shell_commands.py",
        (
            "tests/tools/test_shell_commands.py",
            "tests/tools/test_permissions.py",
            "tests/tools/test_permission_spellings.py",
        ),
    ),
    "permissions": (
        "harness/tools/permissions.py",
        ("tests/tools/test_permissions.py", "tests/tools/test_permission_spellings.py"),
    ),
    "nofollow": ("harness/core/nofollow.py", ("tests/core/test_nofollow.py",)),
    "appender": ("harness/core/appender.py", ("tests/core/test_appender.py",)),
    "report_channel": (
        "harness/verify/report_channel.py",
        ("tests/verify/test_report_channel.py",),
    ),
    "held_out": ("harness/verify/held_out.py", ("tests/verify/test_held_out.py",)),
    "request_redaction": (
        "harness/models/redaction.py",
        ("tests/models/test_redaction.py", "tests/gateway/test_hostile_secrets.py"),
    ),
    "gateway_server": (
        "harness/gateway/server.py",
        ("tests/gateway/test_server.py", "tests/gateway/test_gateway.py"),
    ),
    "web_peer": (
        "harness/research/web_peer.py",
        ("tests/research/test_web_peer.py",),
    ),
    "held_folders": ("harness/core/held_folders.py", ("tests/core/test_held_folders.py",)),
    "call_threads": (
        "harness/models/call_threads.py",
        ("tests/models/test_call_threads.py", "tests/models/test_budget_spend.py"),
    ),
}
"""Module key: (source file, its focused test files)."""

SCOPES: dict[str, tuple[str, ...]] = {
    # the verdicts, their bounds and the gates' defaults; not how pytest is started
    "gates": ("run_gates", "CommandGate.__init__", "CommandGate.check", "PytestGate.__init__",
              "PytestGate._report", "_not_run", "PredicateGate.check", "_failure_text",
              "TAIL_CHARS", "FAILURE_TEXT_CHARS", "PYTEST_NO_TESTS"),
    # the limits and their bookkeeping; making, sweeping and emptying a real cgroup need the
    # kernel's cgroup tree (the sandbox attack tests cover them)
    "limits": ("Limits", "LIFELINE_SECONDS", "limits_prefix", "_watcher", "nproc_prefix",
               "Cgroup.__init__", "Cgroup.places", "Cgroup.exceeded", "Cgroup._write",
               "Cgroup._read"),
    "bwrap": ("bwrap_argv", "hide", "protected_paths", "bwrap_problem", "_home_to_hide"),  # not
    # _mounted_back: it depends on where this Python and PATH's programs live (the sandbox
    # tests cover it)
    # the counts, the ceiling and their caches; not where tiktoken finds its files offline
    "tokens": ("content_text", "message_text", "count_text", "encoding_name", "_cache_key",
               "_Lru", "_Tally", "byte_ceiling", "TokenCounter"),
    # what starts a loop and every delivery's answer; not the connection bounds (_BoundedServer,
    # _Deadlined, IN_ALL), whose timing tests (tests/connect/test_watcher_bounds.py) take 40 s
    "triggers": ("MAX_DELIVERY_BYTES", "READ_TIMEOUT", "MAX_CONNECTIONS", "MAX_SLUG",
                 "branch_slug", "Start", "issue_goal", "ScheduleTrigger", "IssuesTrigger",
                 "signature", "WebhookTrigger", "_handler"),
}  # fmt: skip
"""Module key: the functions and classes mutated when not the whole module (its other code is
measured elsewhere or is not what the key guards)."""

COMPARE_TWINS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
          ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
          ast.NotIn: "not in"}  # fmt: skip
UNTOUCHED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
             ast.Pass)  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    node: int  # index of the node in ast.walk order
    variant: int
    line: int
    description: str


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _variants(node: ast.AST, parent: ast.AST | None) -> Iterator[str]:
    """What can be done to ``node``, one description per variant (in a fixed order)."""
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            for twin in COMPARE_TWINS[type(op)]:
                yield f"{position}:{SYMBOL[type(op)]} -> {SYMBOL[twin]}"
    elif isinstance(node, ast.BoolOp):
        yield "and -> or" if isinstance(node.op, ast.And) else "or -> and"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop 'not'"
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{node.value} -> {not node.value}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield f"{node.value} -> {node.value + 1}"
        yield f"{node.value} -> {node.value - 1}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, float):
        for moved in _moved(node.value):
            yield f"{node.value!r} -> {moved!r}"
    elif isinstance(node, ast.Return) and not (
        node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):
        yield "return None"
    if (
        isinstance(node, ast.stmt)
        and not isinstance(node, UNTOUCHED)
        and not _is_docstring(node)
        and not isinstance(parent, ast.Module)
        and not (isinstance(parent, ast.ClassDef) and isinstance(node, ast.AnnAssign))
    ):
        yield "delete statement"
    if isinstance(parent, ast.Module) and isinstance(node, ast.Assign | ast.AnnAssign):
        yield from _drops(node.value)


def _moved(value: float) -> tuple[float, float]:
    """A decimal constant moved up and down: by one, or doubled and halved below one (a
    fraction moved by one changes sign or meaning, not its boundary)."""
    if 0 < abs(value) < 1:
        return value * 2, value / 2
    return value + 1, value - 1


def _drops(value: ast.expr | None) -> Iterator[str]:
    """One variant per element of a module-level collection: ``drop element <i> (...)``."""
    if isinstance(value, ast.Call) and len(value.args) == 1:
        value = value.args[0]  # frozenset({...}), tuple((...))
    elements: list[ast.expr | None] = []
    if isinstance(value, ast.Dict):
        elements = list(value.keys)
    elif isinstance(value, ast.Tuple | ast.List | ast.Set):
        elements = list(value.elts)
    if len(elements) > 1:
        for index, element in enumerate(elements):
            shown = ast.unparse(element) if element is not None else "**"
            yield f"drop element {index} ({shown[:40]})"


def _qualname(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    """The dotted name of the functions and classes around ``node``; inside a module-level
    constant (``LIMIT = 1_200``), the constant's name; ``""`` elsewhere at module level."""
    names = []
    current: ast.AST | None = node
    while current is not None:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(current.name)
        elif isinstance(parents.get(current), ast.Module) and _constant_name(current):
            names.append(_constant_name(current))
        current = parents.get(current)
    return ".".join(reversed(names))


def _constant_name(node: ast.AST) -> str:
    """The one name a module-level assignment binds, or ``""``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target: ast.expr = node.targets[0]
    elif isinstance(node, ast.AnnAssign):
        target = node.target
    else:
        return ""
    return target.id if isinstance(target, ast.Name) else ""


def mutants(source: str, scope: tuple[str, ...] = ()) -> list[Mutant]:
    """Every mutant of ``source``; with ``scope``, only those inside the functions, classes or
    module-level constants it names (``"PytestGate._report"``, ``"run_gates"``, ``"LIMIT"``)."""
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for index, node in enumerate(ast.walk(tree)):
        if scope:
            name = _qualname(node, parents)
            if not any(name == s or name.startswith(s + ".") for s in scope):
                continue
        for variant, text in enumerate(_variants(node, parents.get(node))):
            found.append(Mutant(index, variant, getattr(node, "lineno", 0), text))
    return found


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
        elif isinstance(value, list) and any(item is old for item in value):
            value[[id(item) for item in value].index(id(old))] = new


def apply(source: str, mutant: Mutant) -> str:
    """``source`` with ``mutant`` applied, as Python source."""
    tree = ast.parse(source)
    parents = _parents(tree)
    node = list(ast.walk(tree))[mutant.node]
    text = mutant.description
    if text.startswith("drop element"):
        value = node.value  # type: ignore[attr-defined]
        if isinstance(value, ast.Call):
            value = value.args[0]
        index = int(text.split()[2])
        if isinstance(value, ast.Dict):
            del value.keys[index], value.values[index]
        else:
            del value.elts[index]
    elif text == "delete statement":
        _replace(parents[node], node, ast.Pass())
    elif text == "return None":
        node.value = ast.Constant(None)  # type: ignore[attr-defined]
    elif text == "drop 'not'":
        _replace(parents[node], node, node.operand)  # type: ignore[attr-defined]
    elif text in ("and -> or", "or -> and"):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()  # type: ignore[attr-defined]
    elif isinstance(node, ast.Compare):
        position = int(text.split(":")[0])
        twins = COMPARE_TWINS[type(node.ops[position])]
        node.ops[position] = twins[mutant.variant - _first_variant(node, position)]()
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        node.value = not node.value
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        node.value += 1 if mutant.variant == 0 else -1
    elif isinstance(node, ast.Constant) and isinstance(node.value, float):
        node.value = _moved(node.value)[mutant.variant]
    else:
        raise ValueError(f"cannot apply {mutant}")
    return ast.unparse(ast.fix_missing_locations(tree))


def _first_variant(node: ast.Compare, position: int) -> int:
    return sum(len(COMPARE_TWINS[type(op)]) for op in node.ops[:position])


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    killed: bool
    how: str  # "tests failed", "timeout", "survived"


class Sandbox:
    """A scratch copy of the code and tests where one mutant at a time is put in place."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="harness-mutation-"))
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for name in ("harness", "tests", "docs", "examples", "skills"):
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, self.dir / name, ignore=ignore)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, self.dir)

    def run(self, module: str, source: str, tests: tuple[str, ...], timeout: float) -> str:
        (self.dir / module).write_text(source)
        # PYTHONPATH: subprocesses the tests start import the mutant too
        # no plugin autoload: scanning every installed package's entry points costs more CPU
        # than the focused tests themselves; Hypothesis is the one plugin they need
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(self.dir),
               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # fmt: skip
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                   "-p", "_hypothesis_pytestplugin", "--hypothesis-profile=mutation",
                   "-o", "addopts=", "-W", "ignore::pytest.PytestConfigWarning", *tests]  # fmt: skip
        try:
            done = subprocess.run(command, cwd=self.dir, env=env, capture_output=True,
                                  timeout=timeout, check=False, preexec_fn=_limit_memory)  # fmt: skip
        except subprocess.TimeoutExpired:
            return "timeout"
        return "survived" if done.returncode == 0 else "tests failed"

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def measure(
    key: str, jobs: int, only: set[tuple[int, str]] | None = None
) -> tuple[list[Outcome], float]:
    """Every mutant of the module's fate; with ``only``, mutants not in it count as killed."""
    module, tests = MODULES[key]
    source = (ROOT / module).read_text()
    sandboxes = [Sandbox() for _ in range(jobs)]
    try:
        started = time.monotonic()
        if sandboxes[0].run(module, ast.unparse(ast.parse(source)), tests, 600) != "survived":
            raise SystemExit(f"{key}: the focused tests fail on the unchanged module")
        baseline = time.monotonic() - started
        broken = 'raise RuntimeError("mutation sandbox check")\n' + source
        if sandboxes[0].run(module, broken, tests, 600) == "survived":
            raise SystemExit(f"{key}: the tests do not import {module} from the sandbox")
        found = mutants(source, SCOPES.get(key, ()))
        free = list(sandboxes)

        def one(mutant: Mutant) -> Outcome:
            if only is not None and (mutant.line, mutant.description) not in only:
                return Outcome(mutant, True, "killed before")
            box = free.pop()
            try:
                how = box.run(module, apply(source, mutant), tests, 3 * baseline + 10)
            finally:
                free.append(box)
            print("." if how != "survived" else "S", end="", file=sys.stderr, flush=True)
            return Outcome(mutant, how != "survived", how)

        pool = ThreadPoolExecutor(jobs)
        try:
            outcomes = list(pool.map(one, found))
        finally:  # on SIGTERM too: the mutants not started yet are not run
            pool.shutdown(cancel_futures=True)
        print(file=sys.stderr)
        return outcomes, baseline
    finally:
        for box in sandboxes:
            box.close()


def survivors(report: str, key: str) -> set[tuple[int, str]]:
    """The (line, description) of each survivor listed for ``key`` in an earlier report."""
    section = report.split(f"\n## {key}: ", 1)[1].split("\n## ", 1)[0].split("\n| module", 1)[0]
    found = re.findall(r"^  survived +line +(\d+): (.*)$", section, re.MULTILINE)
    return {(int(line), description) for line, description in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of: {', '.join(MODULES)} (default all)")
    parser.add_argument("--tests", nargs="+", help="test files to use instead (one module only)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--list", action="store_true", help="list every mutant and its fate")
    parser.add_argument(
        "--recheck",
        type=Path,
        help="run only the survivors listed in this earlier report of the script (valid while "
        "the modules are unchanged and tests were only added)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the scratch copies are removed
    unknown = set(args.modules) - set(MODULES)
    if unknown or (args.tests and len(args.modules) != 1):
        parser.error(f"name one module with --tests; modules are {', '.join(MODULES)}")
    if args.tests:
        MODULES[args.modules[0]] = (MODULES[args.modules[0]][0], tuple(args.tests))
    rows = []
    for key in args.modules or list(MODULES):
        started = time.monotonic()
        only = survivors(args.recheck.read_text(), key) if args.recheck else None
        outcomes, baseline = measure(key, args.jobs, only)
        killed = sum(o.killed for o in outcomes)
        module, tests = MODULES[key]
        scope = f" ({', '.join(SCOPES[key])})" if key in SCOPES else ""
        print(f"\n## {key}: {module}{scope} against {', '.join(tests)}")
        print(f"{killed}/{len(outcomes)} killed, tests {baseline:.1f}s unchanged, "
              f"{time.monotonic() - started:.0f}s in all")  # fmt: skip
        for outcome in outcomes:
            if args.list or not outcome.killed:
                m = outcome.mutant
                print(f"  {outcome.how:12} line {m.line:4}: {m.description}")
        rows.append((key, module, killed, len(outcomes)))
        sys.stdout.flush()
    print("\n| module | file | killed / mutants | score |\n| --- | --- | --- | --- |")
    for key, module, killed, total in rows:
        print(f"| {key} | `{module}` | {killed} / {total} | {100 * killed / total:.1f} % |")


if __name__ == "__main__":
    main()
