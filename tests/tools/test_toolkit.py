"""The @tool decorator, argument validation, and Toolbox dispatch (including 1,000 bad calls)."""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from harness.core.errors import ConfigError, ToolError
from harness.models.base import ToolCall
from harness.tools.builtin import default_tools
from harness.tools.toolkit import (
    Tool,
    Toolbox,
    ToolContext,
    ToolResult,
    parse_docstring,
    tool,
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path)


@tool
def grep_lines(
    ctx: ToolContext,
    pattern: str,
    limit: int = 10,
    ratio: float | None = None,
    flags: list[str] | None = None,
    mode: Literal["fast", "exact"] = "fast",
    dry_run: bool = False,
) -> str:
    """Find lines that match a pattern
    across the whole workspace.

    Everything after the first paragraph stays out of the description.

    Args:
        pattern: The regular expression
            to look for.
        limit (int): At most this many lines.
        ratio: Similarity threshold.
        flags: Regex flags such as IGNORECASE.
        mode: How hard to try.

    Returns:
        The matching lines.
    """
    return f"{ctx.workspace.name}|{pattern}|{limit!r}|{ratio!r}|{flags!r}|{mode}|{dry_run}"


def test_schema_from_signature_and_docstring() -> None:
    schema = grep_lines.schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "grep_lines"
    assert function["description"] == "Find lines that match a pattern across the whole workspace."
    parameters = function["parameters"]
    assert parameters["type"] == "object"
    assert "additionalProperties" not in parameters  # validated here: unknown ones are refused
    assert parameters["required"] == ["pattern"]
    props = parameters["properties"]
    assert list(props) == ["pattern", "limit", "ratio", "flags", "mode", "dry_run"]  # no ctx
    assert props["pattern"] == {
        "type": "string",
        "description": "The regular expression to look for.",
    }
    assert props["limit"] == {
        "type": "integer",
        "default": 10,
        "description": "At most this many lines.",
    }
    # optional: no null alternative and no null default, only the type (tokens the model pays)
    assert props["ratio"] == {"type": "number", "description": "Similarity threshold."}
    assert props["flags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Regex flags such as IGNORECASE.",
    }
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert props["dry_run"] == {"type": "boolean", "default": False}  # undocumented: no description
    assert "title" not in json.dumps(parameters)
    assert grep_lines.signature == (
        "grep_lines(pattern, limit=10, ratio=None, flags=None, mode='fast', dry_run=False)"
    )


def test_context_is_injected_and_arguments_reach_the_function(ctx: ToolContext) -> None:
    result = grep_lines.run({"pattern": "a+", "flags": ["I"], "mode": "exact"}, ctx)
    assert result == ToolResult(f"{ctx.workspace.name}|a+|10|None|['I']|exact|False")
    from_json = grep_lines.run('{"pattern": "b", "limit": "3", "ratio": 0.5}', ctx)
    assert from_json.output == f"{ctx.workspace.name}|b|3|0.5|None|fast|False"
    assert not from_json.malformed
    assert from_json.arguments == {  # validated, by parameter name, the context left out
        "pattern": "b",
        "limit": 3,
        "ratio": 0.5,
        "flags": None,
        "mode": "fast",
        "dry_run": False,
    }


def test_lax_coercion_of_numeric_strings_only(ctx: ToolContext) -> None:
    assert grep_lines.run({"pattern": "a", "limit": "7"}, ctx).output.split("|")[2] == "7"
    for bad in ("abc", 1.5, [1], {"n": 1}):
        result = grep_lines.run({"pattern": "a", "limit": bad}, ctx)
        assert result.is_error
        assert result.output.startswith(
            "error: invalid arguments for grep_lines: limit: Input should"
        )
    assert grep_lines.run({"pattern": 5}, ctx).output.startswith(
        "error: invalid arguments for grep_lines: pattern: Input should be a valid string"
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "pattern: Field required"),
        ({"pattern": "a", "colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"pattern": "a", "mode": "slow"}, "mode: Input should be 'fast' or 'exact'"),
        ('{"pattern": ', "not valid JSON (Expecting value"),
        ("[1, 2]", "expected a JSON object, got list"),
        ("null", "expected a JSON object, got NoneType"),
        ('"pattern"', "expected a JSON object, got str"),
    ],
)
def test_malformed_arguments_become_error_observations(
    ctx: ToolContext, arguments: dict | str, expected: str
) -> None:
    result = grep_lines.run(arguments, ctx)
    assert (result.is_error, result.malformed, result.arguments) == (True, True, None)
    assert result.output.startswith("error: invalid arguments for grep_lines: ")
    assert expected in result.output
    assert result.output.endswith(f"expected {grep_lines.signature}")


def test_many_validation_errors_are_summarised(ctx: ToolContext) -> None:
    arguments = {f"extra{i}": i for i in range(9)} | {"x" * 100_000: 1}
    result = grep_lines.run(arguments, ctx)
    assert result.is_error
    assert "and 6 more" in result.output
    assert len(result.output) < 1_000


def test_empty_argument_string_means_no_arguments(ctx: ToolContext) -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert ping.run("", ctx) == ToolResult("pong")
    assert ping.run("  ", ctx) == ToolResult("pong")
    assert ping.schema()["function"]["parameters"]["properties"] == {}


def test_parameters_may_shadow_pydantic_names(ctx: ToolContext) -> None:
    @tool
    def store(schema: str, model_config: int, json: bool = True) -> str:
        """Store a schema."""
        return f"{schema}/{model_config}/{json}"

    assert set(store.parameters["properties"]) == {"schema", "model_config", "json"}
    assert store.run({"schema": "s", "model_config": 2}, ctx).output == "s/2/True"
    assert store.run({"arg0": "s", "model_config": 2}, ctx).is_error  # internal names stay hidden


def test_decorator_with_arguments_overrides_name_and_description(ctx: ToolContext) -> None:
    @tool(name="shout", description="Upper-case a word.")
    def upper(word: str) -> str:
        return word.upper()

    assert isinstance(upper, Tool)
    assert (upper.name, upper.description) == ("shout", "Upper-case a word.")
    assert upper.run({"word": "hi"}, ctx).output == "HI"


def test_tool_errors_and_crashes_become_observations(ctx: ToolContext) -> None:
    @tool
    def fragile(mode: str) -> str:
        """Fail in the way asked."""
        if mode == "refuse":
            raise ToolError("cannot do that: try another mode")
        if mode == "crash":
            raise OSError(28, "No space left on device")
        if mode == "none":
            return None  # type: ignore[return-value]
        return ToolResult("custom", exit_code=4)

    refused = fragile.run({"mode": "refuse"}, ctx)
    assert refused == ToolResult("error: cannot do that: try another mode", is_error=True)
    assert (refused.malformed, refused.arguments) == (False, {"mode": "refuse"})
    crash = fragile.run({"mode": "crash"}, ctx)
    assert crash.is_error
    assert crash.output == "error: fragile failed with OSError: [Errno 28] No space left on device"
    wrong = fragile.run({"mode": "none"}, ctx)
    assert wrong.is_error
    assert "TypeError: the tool returned NoneType, not str or ToolResult" in wrong.output
    assert fragile.run({"mode": "ok"}, ctx) == ToolResult("custom", exit_code=4)


def test_output_is_capped_head_and_tail(tmp_path: Path) -> None:
    @tool
    def flood() -> str:
        """Say a lot."""
        return "HEAD" + "x" * 100_000 + "TAIL"

    result = flood.run({}, ToolContext(workspace=tmp_path, max_output_chars=1_000))
    assert len(result.output) <= 1_000
    assert result.output.startswith("HEAD")
    assert result.output.endswith("TAIL")
    assert "characters truncated" in result.output


def test_parse_docstring_sections() -> None:
    summary, args = parse_docstring(
        """Summary line.

        Args:
            a: First.
            b (list[str]): Second,
                continued.

            c: After a blank line.
        Raises:
            ValueError: not an argument.
        """
    )
    assert summary == "Summary line."
    assert args == {"a": "First.", "b": "Second, continued.", "c": "After a blank line."}
    assert parse_docstring("Args:\n    a: only args") == ("", {"a": "only args"})


def _no_annotation(a) -> str:  # type: ignore[no-untyped-def]
    """Doc."""
    return str(a)


def _var_args(*names: str) -> str:
    """Doc."""
    return ""


def _undocumented(a: str) -> str:
    return a


def _unschematic(callback: object, hook: type) -> str:
    """Doc."""
    return ""


@pytest.mark.parametrize(
    ("fn", "kwargs", "message"),
    [
        (_no_annotation, {}, "parameter 'a' has no type annotation"),
        (_var_args, {}, "parameter 'names' must be a named parameter"),
        (_undocumented, {}, "no description"),
        (_undocumented, {"name": "bad name!", "description": "d"}, "tool name 'bad name!'"),
        (lambda: "x", {"description": "d"}, "tool name '<lambda>'"),
        (_unschematic, {}, "_unschematic"),
    ],
)
def test_construction_errors_are_config_errors(fn, kwargs: dict, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=re.escape(message)):
        Tool(fn, **kwargs)


def test_toolbox_lookup_and_schemas(ctx: ToolContext) -> None:
    box = Toolbox(default_tools())
    names = ["read_file", "write_file", "edit_file", "list_files", "search", "run_shell", "submit"]
    assert [t.name for t in box] == names
    assert [s["function"]["name"] for s in box.schemas()] == names
    assert "search" in box
    assert "grep" not in box
    assert 3 not in box
    done = box.execute(ToolCall("submit", {"summary": "all green"}), ctx)
    assert done == ToolResult("all green", final=True)


def test_toolbox_unknown_tool_lists_the_available_ones(ctx: ToolContext) -> None:
    box = Toolbox([grep_lines])
    result = box.execute(ToolCall("grep", {"pattern": "a"}), ctx)
    assert result == ToolResult(
        "error: unknown tool 'grep'; available tools: grep_lines", True, malformed=True
    )


def test_toolbox_rejects_duplicates_and_plain_functions() -> None:
    with pytest.raises(ConfigError, match="two tools are named 'grep_lines'"):
        Toolbox([grep_lines, grep_lines])
    with pytest.raises(ConfigError, match="is not a Tool"):
        Toolbox([_undocumented])  # type: ignore[list-item]


VALID_ARGUMENTS: dict[str, dict[str, object]] = {
    "read_file": {"path": "f.txt", "start_line": 1},
    "write_file": {"path": "f.txt", "content": "x"},
    "edit_file": {"path": "f.txt", "old": "a", "new": "b"},
    "list_files": {"path": "."},
    "search": {"pattern": "a", "path": "."},
    "run_shell": {"command": "touch ran", "timeout": 5},
    "submit": {"summary": "done"},
}
WRONG_VALUES: dict[str, list[object]] = {
    "str": [0, 1.5, True, None, [], ["a"], {"a": 1}],
    "int": ["abc", "", 1.5, [], {"n": 1}, "1.5"],
    "float": ["soon", "", [], {"s": 1}],
}
REQUIRED = {
    "read_file": ["path"],
    "write_file": ["path", "content"],
    "edit_file": ["path", "old", "new"],
    "search": ["pattern"],
    "run_shell": ["command"],
    "submit": ["summary"],
}
PARAM_TYPES = {"start_line": "int", "timeout": "float"}  # every other parameter is a string
HUGE = "x" * 5_000_000


def _malformed_calls(rng: random.Random, count: int) -> Iterator[ToolCall]:
    """``count`` tool calls that are each wrong in one way the model could get wrong."""
    kinds = [_fuzzed_json, _unknown_name, _wrong_type, _missing, _extra, _not_an_object]
    for index in range(count):
        name = rng.choice(sorted(VALID_ARGUMENTS))
        kind = _huge if index % 50 == 0 else rng.choice(kinds)
        yield kind(rng, name)


def _fuzzed_json(rng: random.Random, name: str) -> ToolCall:
    text = json.dumps(VALID_ARGUMENTS[name])
    while True:
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(len(chars))
            if rng.random() < 0.5:
                del chars[position]
            else:
                chars.insert(position, rng.choice('{}[]":,\\ \x00' + string.ascii_letters))
        fuzzed = "".join(chars)[: rng.randint(1, len(chars))]
        try:
            parsed = json.loads(fuzzed)
        except ValueError:
            return ToolCall(name, fuzzed)
        if not isinstance(parsed, dict):
            return ToolCall(name, fuzzed)


def _unknown_name(rng: random.Random, name: str) -> ToolCall:
    unknown = rng.choice(["", " ", name.upper(), name + "s", "bash", "read-file", "ls", "\x00"])
    return ToolCall(unknown, dict(VALID_ARGUMENTS[name]))


def _wrong_type(rng: random.Random, name: str) -> ToolCall:
    arguments = dict(VALID_ARGUMENTS[name])
    key = rng.choice(sorted(arguments))
    arguments[key] = rng.choice(WRONG_VALUES[PARAM_TYPES.get(key, "str")])
    return ToolCall(name, arguments if rng.random() < 0.5 else json.dumps(arguments))


def _missing(rng: random.Random, name: str) -> ToolCall:
    name = name if name in REQUIRED else "read_file"  # list_files requires nothing
    arguments = dict(VALID_ARGUMENTS[name])
    del arguments[rng.choice(REQUIRED[name])]
    return ToolCall(name, arguments)


def _extra(rng: random.Random, name: str) -> ToolCall:
    extra = rng.choice(["file", "cmd", "line", "arguments", "", "PATH", "content "])
    return ToolCall(name, {**VALID_ARGUMENTS[name], extra: rng.choice(["x", 1, None])})


def _not_an_object(rng: random.Random, name: str) -> ToolCall:
    payload = rng.choice(["[]", "42", "null", "true", '"read"', "[" * 100_000, "{" * 50_000, "NaN"])
    return ToolCall(name, rng.choice([payload, ["path"], 42, None]))  # type: ignore[arg-type]


def _huge(rng: random.Random, name: str) -> ToolCall:
    choice = rng.randrange(4)
    if choice == 0:
        return ToolCall(name, '{"path": "' + HUGE)  # unterminated
    if choice == 1:
        return ToolCall(name, {**VALID_ARGUMENTS[name], HUGE: 1})
    if choice == 2:
        return ToolCall(HUGE, VALID_ARGUMENTS[name])
    return ToolCall("read_file", {"path": "f.txt", "start_line": HUGE})


def test_a_thousand_malformed_calls_are_all_error_observations(ctx: ToolContext) -> None:
    box = Toolbox(default_tools())
    results = [box.execute(call, ctx) for call in _malformed_calls(random.Random(1234), 1_000)]
    assert len(results) == 1_000
    assert all(result.is_error for result in results)
    assert all(result.output.startswith("error: ") for result in results)
    assert all(len(result.output) <= ctx.max_output_chars for result in results)
    assert not any(result.final for result in results)
    assert all(result.malformed and result.arguments is None for result in results)
    invalid = sum(result.output.startswith("error: invalid arguments for ") for result in results)
    unknown = sum(result.output.startswith("error: unknown tool") for result in results)
    assert invalid + unknown == 1_000
    assert unknown > 50
    assert list(ctx.workspace.iterdir()) == []  # nothing ran: no file written, no command run
    assert ctx.commands_run == []
    assert ctx.files_touched == set()


def test_the_package_level_tool_is_the_decorator_even_after_the_tools_load() -> None:
    import harness
    import harness.tools  # noqa: F401  (loads every tool module)
    from harness import tool as exported

    assert exported is harness.tools.tool
    assert callable(exported)
