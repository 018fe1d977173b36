"""Tools the model can call: plain Python functions whose type hints become a JSON schema.

``@tool`` (or ``tool_from_function``) turns an ``async def`` into a ``Tool``: the parameters'
type hints and defaults give the JSON schema, the docstring's first paragraph the description
and its Google-style ``Args:`` lines the parameter descriptions::

    @tool
    async def add(a: int, b: int = 1) -> int:
        \"\"\"Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        \"\"\"
        return a + b

``await add.call({"a": 2})`` checks the arguments against the schema, runs the function and
returns its result as text (a ``str`` as is, anything else JSON-encoded). A parameter annotated
:class:`~harness.tools.context.ToolContext` is filled in by the harness, never by the model.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, overload

import anyio.to_thread

from harness.errors import HarnessError
from harness.models.base import ToolSpec
from harness.tools.context import ToolContext, current_tool_context

__all__ = ["Tool", "ToolArgumentError", "ToolError", "tool", "tool_from_function"]

ToolFunction = Callable[..., Awaitable[Any]]

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns?|Raises|Yields?|Examples?|Notes?|See Also):\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class ToolError(HarnessError):
    """A tool could not be called."""


class ToolArgumentError(ToolError, ValueError):
    """The model called a tool with arguments its schema does not allow; the message says which."""


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A callable tool: what the model sees (name, description, JSON schema) and the function.

    ``parameters`` is a JSON schema of type ``object``; ``call`` enforces its ``properties``,
    ``required`` list and the types it names before calling ``function`` with the arguments as
    keywords. Exceptions the function raises propagate unchanged: the agent loop decides how
    to report them to the model. ``requires_approval`` puts every call before the agent's
    approval policy (as shell commands and writes are).
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False}
    )
    function: ToolFunction
    requires_approval: bool = False

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise TypeError(f"tool {self.name}: function must be callable")
        _ = self.spec  # building the spec validates the name and the schema's shape

    @property
    def spec(self) -> ToolSpec:
        """The tool as offered to a model."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def call(self, arguments: Mapping[str, Any]) -> str:
        """Check ``arguments`` against the schema, call the function, return its result as text.

        Raises ``ToolArgumentError`` for unknown, missing or mistyped arguments, naming them.
        """
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                f"tool {self.name}: arguments must be a JSON object, got {type(arguments).__name__}"
            )
        problem = _check_object(dict(arguments), self.parameters, "")
        if problem:
            raise ToolArgumentError(f"tool {self.name}: {problem}")
        result = await self.function(**arguments)
        if isinstance(result, str):
            return result
        return json.dumps(result, ensure_ascii=False, default=str)


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    func: None = None, /, *, name: str | None = None, description: str | None = None, requires_approval: bool = False
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """``@tool`` or ``@tool(name=..., description=..., requires_approval=...)``:
    ``tool_from_function`` as a decorator."""
    if func is not None:
        return tool_from_function(func)

    def decorate(f: Callable[..., Any]) -> Tool:
        return tool_from_function(f, name=name, description=description, requires_approval=requires_approval)

    return decorate


def tool_from_function(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
) -> Tool:
    """Build a ``Tool`` from a function's signature, type hints and docstring.

    Supported hints: ``str``, ``int``, ``float``, ``bool``, ``list[X]``, ``tuple[X, ...]``,
    ``dict``/``dict[str, X]``, ``X | None``/``Optional[X]``, unions, ``Literal[...]`` and
    ``Any``. A parameter with a default is optional (JSON-encodable defaults are shown to the
    model). A synchronous function runs in a worker thread so it cannot block the event loop.

    One parameter may be annotated ``ToolContext`` (or ``ToolContext | None``): it is not part of
    the schema, and each call gets the :func:`~harness.tools.context.current_tool_context` the
    agent set (a model's argument of that name is refused by the schema and never used). Called
    outside an agent's call, a ``ToolContext`` parameter raises ``ToolError``; a
    ``ToolContext | None`` one gets ``None``.

    Raises ``TypeError`` for a parameter without a type hint, with an unsupported hint, for
    ``*args``/``**kwargs``, or for two ``ToolContext`` parameters. ``requires_approval`` marks
    calls for the agent's approval policy.
    """
    tool_name = name or func.__name__
    summary, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
    hints = get_type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_param: tuple[str, bool] | None = None  # (name, whether None is allowed)
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"tool {tool_name}: parameter {param.name!r} must be a named keyword-capable "
                "parameter (no *args, **kwargs or positional-only)"
            )
        if param.name not in hints:
            raise TypeError(f"tool {tool_name}: parameter {param.name!r} needs a type hint")
        optional = _context_hint(hints[param.name])
        if optional is not None:
            if context_param is not None:
                raise TypeError(
                    f"tool {tool_name}: parameters {context_param[0]!r} and {param.name!r} both take "
                    "the ToolContext; declare one"
                )
            context_param = (param.name, optional)
            continue
        schema = _schema_for(hints[param.name], f"tool {tool_name}: parameter {param.name!r}")
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif _json_encodable(param.default):
            schema["default"] = param.default
        properties[param.name] = schema
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        parameters["required"] = required
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=parameters,
        function=_with_context(tool_name, _as_async(func), context_param),
        requires_approval=requires_approval,
    )


def _context_hint(hint: Any) -> bool | None:
    """For a ``ToolContext`` hint whether it allows ``None``; ``None`` for any other hint."""
    if hint is ToolContext:
        return False
    if get_origin(hint) in (Union, types.UnionType) and set(get_args(hint)) == {ToolContext, type(None)}:
        return True
    return None


def _with_context(tool_name: str, function: ToolFunction, context_param: tuple[str, bool] | None) -> ToolFunction:
    """``function`` with its ``ToolContext`` parameter filled in from the call's context."""
    if context_param is None:
        return function
    name, optional = context_param

    async def injected(**arguments: Any) -> Any:
        context = current_tool_context()
        if context is None and not optional:
            raise ToolError(
                f"tool {tool_name}: parameter {name!r} needs the call's ToolContext, which only an "
                "agent's call has; annotate it ToolContext | None to run without one"
            )
        arguments[name] = context  # never the caller's value of that name
        return await function(**arguments)

    return injected


def _as_async(func: Callable[..., Any]) -> ToolFunction:
    if inspect.iscoroutinefunction(func):
        return func

    async def in_thread(**kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: func(**kwargs))

    return in_thread


def _schema_for(hint: Any, where: str) -> dict[str, Any]:
    if hint is Any:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    if hint in (list, tuple):
        return {"type": "array"}
    if hint is dict:
        return {"type": "object"}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return _literal_schema(args, where)
    if origin in (Union, types.UnionType):
        return _union_schema(args, where)
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": _schema_for(args[0], where)}
    if origin is dict and args and args[0] is str:
        return {"type": "object", "additionalProperties": _schema_for(args[1], where)}
    raise TypeError(f"{where}: type hint {hint!r} has no JSON schema equivalent")


def _literal_schema(values: tuple[Any, ...], where: str) -> dict[str, Any]:
    kinds = {_JSON_TYPES.get(type(v)) for v in values}
    if None in kinds:
        raise TypeError(f"{where}: Literal values must be str, int, float or bool")
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    return schema


def _union_schema(members: tuple[Any, ...], where: str) -> dict[str, Any]:
    schemas = [_schema_for(member, where) for member in members]
    simple = [s.get("type") for s in schemas if set(s) == {"type"}]
    if len(simple) == len(schemas):
        return {"type": simple}
    return {"anyOf": schemas}


def _json_encodable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph (joined into one line) and the ``Args:`` descriptions."""
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary_lines.append(line.strip())
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if _SECTION.match(stripped) and indent == 0:
            in_args = stripped.rstrip(":") in ("Args", "Arguments", "Parameters")
            current, base_indent = None, 0
            continue
        if not in_args or not stripped:
            continue
        match = _ARG_LINE.match(stripped)
        if match and (current is None or indent <= base_indent):
            current, base_indent = match.group(1).lstrip("*"), indent
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary_lines), args


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, Mapping),
    "null": lambda v: v is None,
}


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    allowed = sorted(properties)
    unknown = sorted(set(value) - set(properties))
    if unknown and schema.get("additionalProperties", True) is False:
        return (
            f"unknown argument(s) {', '.join(f'{path}{k}' for k in unknown)}; allowed: {', '.join(allowed) or 'none'}"
        )
    missing = [k for k in schema.get("required", ()) if k not in value]
    if missing:
        return f"missing required argument(s) {', '.join(f'{path}{k}' for k in missing)}"
    for key, item in value.items():
        if key in properties:
            problem = _check_value(item, properties[key], f"{path}{key}")
            if problem:
                return problem
    return None


def _check_value(value: Any, schema: Mapping[str, Any], path: str) -> str | None:
    if "anyOf" in schema:
        problems = [_check_value(value, option, path) for option in schema["anyOf"]]
        if None in problems:
            return None
        # The first option is the informative one for Optional[X] (X | None).
        return problems[0]
    if "enum" in schema and value not in schema["enum"]:
        return f"argument {path} must be one of {schema['enum']!r}, got {value!r}"
    expected = schema.get("type")
    if expected is not None:
        kinds = [expected] if isinstance(expected, str) else list(expected)
        known = [k for k in kinds if k in _TYPE_CHECKS]
        if known and not any(_TYPE_CHECKS[k](value) for k in known):
            return f"argument {path} must be {' or '.join(known)}, got {type(value).__name__}"
    if isinstance(value, (list, tuple)) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problem = _check_value(item, schema["items"], f"{path}[{index}]")
            if problem:
                return problem
    if isinstance(value, Mapping) and "properties" in schema:
        return _check_object(dict(value), schema, f"{path}.")
    if isinstance(value, Mapping) and isinstance(schema.get("additionalProperties"), Mapping):
        for key, item in value.items():
            problem = _check_value(item, schema["additionalProperties"], f"{path}.{key}")
            if problem:
                return problem
    return None
