"""Tools the model can call: the Tool type, the ``@tool`` decorator, and the Toolbox that runs calls.

A tool is a typed, documented function. Its JSON schema comes from the signature (pydantic) and
the docstring (first paragraph, Google-style ``Args:``). A parameter annotated
:class:`ToolContext` is injected rather than asked of the model.

Arguments are validated in pydantic's default (lax) mode: ``"5"`` is accepted for an ``int`` and
``true`` counts as ``1``, but ``"abc"`` or ``5.5`` for an ``int`` and ``5`` for a ``str`` fail, and
unknown arguments are refused. Every mistake the model can make (malformed JSON, a non-object,
missing, extra or wrong-typed arguments, a :class:`ToolError` from the tool) comes back as an
error observation; so does an unexpected exception inside a tool, named by its type.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from harness.core.errors import ConfigError, ToolError
from harness.core.redact import SECRET_NAME
from harness.core.section import check_value
from harness.core.text import truncate
from harness.core.validation import positive_finite
from harness.models.base import ToolCall
from harness.sandbox import Sandbox
from harness.tools.paths import check_protect_patterns, shown

ToolFunction = Callable[..., "str | ToolResult"]

SHELL_TIMEOUT = 120.0
"""run_shell's timeout when the model names none, seconds (``[agent] shell_timeout``)."""

ShellTimeout = Annotated[float, Field(gt=0, strict=True)]
"""run_shell's default timeout: the type of ``[agent] shell_timeout`` and of the keyword."""

ERROR_PREFIX = "error: "
"""How every error observation starts."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ARGS_HEADERS = ("Args:", "Arguments:", "Parameters:")
_ERRORS_SHOWN = 5
_NOT_SCHEMA = frozenset({"default", "const", "enum", "examples"})


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gives back: the observation the model reads."""

    output: str
    is_error: bool = False
    exit_code: int | None = None  # set by run_shell
    final: bool = False  # True only for submit: ends the agent's session
    malformed: bool = False  # the call itself was wrong: unknown tool, bad JSON or arguments
    arguments: dict[str, Any] | None = field(default=None, compare=False)
    """The call's validated arguments by parameter name (defaults filled in); None when the
    call was malformed. Not part of the observation, so results compare by what the model reads."""


@dataclass
class ToolContext:
    """Where tools act, what they may not write, and the ledger of what they did."""

    workspace: Path  # resolved on construction; every path is confined to it
    protect: tuple[str, ...] = ()  # globs relative to the workspace the file tools refuse to write
    shell_timeout: float = SHELL_TIMEOUT
    max_output_chars: int = 20_000  # observation cap, head + tail kept
    env: dict[str, str] | None = None  # values run_shell sets on top of the allow-list
    files_touched: set[str] = field(default_factory=set)  # relative paths read or written
    files_written: set[str] = field(default_factory=set)  # relative paths written or edited
    commands_run: list[str] = field(default_factory=list)
    max_shell_timeout: float = 600.0  # the most a model may ask of run_shell's timeout
    search_timeout: float = 1.5  # one search's budget, seconds (a line costs ~0.1 s at most)
    sandbox: Sandbox | None = None  # where run_shell runs commands; None: Sandbox("auto")
    time_left: Callable[[], float | None] | None = None  # the run's time budget left, seconds

    def command_env(self) -> dict[str, str]:
        """The values a command the agent causes gets on top of the allow-list: ``env`` less
        every secret-looking name."""
        return {k: v for k, v in (self.env or {}).items() if not SECRET_NAME.search(k)}

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).resolve()
        if not self.workspace.is_dir():
            raise ConfigError(f"workspace: {self.workspace} is not a directory")
        self.protect = check_protect_patterns(self.protect)
        check_value(ShellTimeout, self.shell_timeout, "shell_timeout")
        for name in ("max_shell_timeout", "max_output_chars", "search_timeout"):
            positive_finite(name, getattr(self, name))


class Tool:
    """A function the model can call, with the JSON schema of its arguments."""

    _schema: dict[str, Any] | None = None  # built on first use (subclasses may skip __init__)

    def __init__(
        self, fn: ToolFunction, *, name: str | None = None, description: str | None = None
    ) -> None:
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if not _NAME.fullmatch(self.name):
            raise ConfigError(f"tool name {self.name!r}: use 1-64 letters, digits, '_' or '-'")
        summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
        self.description = description or summary
        if not self.description:
            raise ConfigError(f"tool {self.name!r}: no description (write a docstring)")
        self._arguments, self._params, self._context_param = _arguments_model(
            fn, self.name, arg_docs
        )
        try:
            schema = self._arguments.model_json_schema()
        except Exception as exc:  # pydantic has no JSON schema for some annotations
            raise ConfigError(
                f"tool {self.name!r}: no JSON schema for its arguments: {exc}"
            ) from exc
        self.parameters: dict[str, Any] = _lean_schema(schema)
        self.signature = _signature(self.name, self._arguments, self._params)

    def __repr__(self) -> str:
        return f"Tool({self.signature})"

    def schema(self) -> dict[str, Any]:
        """The chat-completions ``tools`` entry for this tool: one object, built once, so
        token counts recognise it from step to step (treat it as read-only)."""
        if self._schema is None:
            self._schema = {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.parameters,
                },
            }
        return self._schema

    def run(self, arguments: dict[str, Any] | str, ctx: ToolContext) -> ToolResult:
        """Validate ``arguments`` (a dict or a JSON string), call the tool, cap the output.

        Never raises for the model's mistakes or the tool's failures: those are error results,
        ``malformed`` when the call itself was wrong.
        """
        try:
            kwargs = self._validate(arguments)
        except ToolError as exc:
            message = truncate(f"{ERROR_PREFIX}{exc}", ctx.max_output_chars)
            return ToolResult(message, is_error=True, malformed=True)
        try:
            result = self._call(kwargs, ctx)
        except ToolError as exc:
            result = ToolResult(f"{ERROR_PREFIX}{exc}", is_error=True)
        except Exception as exc:  # a bug or an OS failure: reported to the model, the run goes on
            result = ToolResult(
                f"{ERROR_PREFIX}{self.name} failed with {type(exc).__name__}: {exc}", is_error=True
            )
        output = truncate(result.output, ctx.max_output_chars)
        return replace(result, output=output, arguments=kwargs)

    def _call(self, kwargs: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if self._context_param is not None:
            kwargs = {**kwargs, self._context_param: ctx}
        returned = self.fn(**kwargs)
        if isinstance(returned, ToolResult):
            return returned
        if isinstance(returned, str):
            return ToolResult(returned)
        raise TypeError(f"the tool returned {type(returned).__name__}, not str or ToolResult")

    def _object(self, arguments: object) -> dict[str, Any]:
        """The call's arguments as a JSON object (a JSON string is parsed), or ToolError."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError) as exc:  # ValueError covers JSONDecodeError
                raise self._invalid(f"not valid JSON ({exc})") from None
        if not isinstance(arguments, dict):
            raise self._invalid(f"expected a JSON object, got {type(arguments).__name__}")
        return arguments

    def _validate(self, arguments: object) -> dict[str, Any]:
        try:
            parsed = self._arguments.model_validate(self._object(arguments))
        except ValidationError as exc:
            raise self._invalid(_describe(exc)) from None
        return {param: getattr(parsed, slot) for param, slot in self._params}

    def _invalid(self, problem: str) -> ToolError:
        return ToolError(f"invalid arguments for {self.name}: {problem}; expected {self.signature}")


@overload
def tool(fn: ToolFunction) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[ToolFunction], Tool]: ...
def tool(
    fn: ToolFunction | None = None, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[ToolFunction], Tool]:
    """Turn a typed, documented function into a :class:`Tool`: ``@tool`` or ``@tool(name=...)``."""
    if fn is not None:
        return Tool(fn, name=name, description=description)
    return lambda function: Tool(function, name=name, description=description)


class Toolbox:
    """The tools of one agent, by name; runs the model's calls."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise ConfigError(f"tools: {item!r} is not a Tool (decorate it with @tool)")
            if item.name in self._tools:
                raise ConfigError(f"tools: two tools are named {item.name!r}")
            self._tools[item.name] = item

    def schemas(self) -> list[dict[str, Any]]:
        return [item.schema() for item in self._tools.values()]

    def execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Run ``call``; an unknown name is an error observation listing the tools there are."""
        found = self._tools.get(call.name) if isinstance(call.name, str) else None
        if found is None:
            message = (
                f"{ERROR_PREFIX}unknown tool {shown(str(call.name))}; "
                f"available tools: {', '.join(self._tools) or '(none)'}"
            )
            return ToolResult(
                truncate(message, ctx.max_output_chars), is_error=True, malformed=True
            )
        return found.run(call.arguments, ctx)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and per-argument descriptions from a Google-style ``Args:`` section."""
    lines = doc.strip().splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or line.strip() in _ARGS_HEADERS:
            break
        summary.append(line.strip())
    described: dict[str, str] = {}
    header = next((i for i, line in enumerate(lines) if line.strip() in _ARGS_HEADERS), None)
    if header is not None:
        _read_args_section(lines[header:], described)
    return " ".join(summary), described


def _read_args_section(lines: list[str], described: dict[str, str]) -> None:
    header_indent = _indent(lines[0])
    entry_indent: int | None = None
    current: str | None = None
    for line in lines[1:]:
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= header_indent:
            return  # the next section
        entry = re.match(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)", line.strip())
        if entry and indent == (entry_indent if entry_indent is not None else indent):
            entry_indent, current = indent, entry.group(1)
            described[current] = entry.group(2).strip()
        elif current is not None:
            described[current] = f"{described[current]} {line.strip()}".strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _arguments_model(
    fn: ToolFunction, name: str, arg_docs: dict[str, str]
) -> tuple[type[BaseModel], list[tuple[str, str]], str | None]:
    """The pydantic model of ``fn``'s arguments, (parameter, model field) pairs, the ctx parameter.

    Model fields are named ``arg0``, ``arg1`` ... with the parameter name as alias, so any
    identifier (``schema``, ``model_config``) can be a parameter name.
    """
    try:
        hints = get_type_hints(fn, include_extras=True)
        parameters = inspect.signature(fn).parameters.values()
    except Exception as exc:  # unresolvable forward references, objects without a signature
        raise ConfigError(f"tool {name!r}: cannot read its signature: {exc}") from exc
    fields: dict[str, Any] = {}
    params: list[tuple[str, str]] = []
    context_param: str | None = None
    for index, param in enumerate(parameters):
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise ConfigError(f"tool {name!r}: parameter {param.name!r} must be a named parameter")
        if param.name not in hints:
            raise ConfigError(f"tool {name!r}: parameter {param.name!r} has no type annotation")
        if hints[param.name] is ToolContext:
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        description = arg_docs.get(param.name)
        slot = f"arg{index}"
        fields[slot] = (
            hints[param.name],
            Field(default, alias=param.name, description=description),
        )
        params.append((param.name, slot))
    config = ConfigDict(extra="forbid")  # fields validate by alias only, pydantic's default
    try:
        model = create_model(f"{name}_arguments", __config__=config, **fields)
    except Exception as exc:  # pydantic cannot validate some annotations
        raise ConfigError(f"tool {name!r}: unsupported parameter type: {exc}") from exc
    return model, params, context_param


def _signature(name: str, model: type[BaseModel], params: list[tuple[str, str]]) -> str:
    shown_params = []
    for param, slot in params:
        info = model.model_fields[slot]
        shown_params.append(param if info.is_required() else f"{param}={info.default!r}")
    return f"{name}({', '.join(shown_params)})"


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    parts = [
        f"{truncate('.'.join(str(part) for part in error['loc']), 100) or '(arguments)'}: "
        f"{error['msg']}"
        for error in errors[:_ERRORS_SHOWN]
    ]
    if len(errors) > _ERRORS_SHOWN:
        parts.append(f"and {len(errors) - _ERRORS_SHOWN} more")
    return "; ".join(parts)


_NULL = {"type": "null"}


def _lean_schema(schema: Any) -> Any:
    """The schema without what only costs the model tokens: pydantic's generated ``title``
    keys, ``additionalProperties: false`` (arguments are validated here, unknown ones refused),
    and for an optional parameter the ``null`` alternative and the ``null`` default (a parameter
    that is not required may be left out, which is what they say)."""
    if isinstance(schema, list):
        return [_lean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and _NULL in options:
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        schema = {**next(o for o in options if o != _NULL), **rest}
    return {
        key: value if key in _NOT_SCHEMA else _lean_schema(value)
        for key, value in schema.items()
        if not (key == "title" and isinstance(value, str))
        and not (key == "default" and value is None)
        and not (key == "additionalProperties" and value is False)
    }
