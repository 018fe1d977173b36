"""Tools from plain functions: derived JSON schemas, argument checking and result encoding."""

from __future__ import annotations

from typing import Any, Literal

import jsonschema
import pytest

from harness.models import ToolSpec
from harness.tools.context import ToolContext, calling, current_tool_context
from harness.tools.function import Tool, ToolArgumentError, ToolError, tool, tool_from_function

CALL = ToolContext(user_id="alice", session_id="s1", call_id="c1", tool="whoami", action_id="a1", skill="notes")


@tool
async def search_notes(
    query: str,
    limit: int = 10,
    tags: list[str] | None = None,
    order: Literal["newest", "oldest"] = "newest",
    fuzzy: bool = False,
    weight: float = 1.0,
) -> list[dict[str, Any]]:
    """Search the user's notes for a phrase.

    Returns matching notes, newest first.

    Args:
        query: The phrase to look for.
        limit (int): Maximum number of notes
            to return.
        tags: Only notes carrying all of these tags.
        order: Sort order.

    Returns:
        A list of notes.
    """
    return [{"query": query, "limit": limit, "tags": tags, "order": order, "fuzzy": fuzzy, "weight": weight}]


def test_description_is_the_docstrings_first_paragraph() -> None:
    assert search_notes.name == "search_notes"
    assert search_notes.description == "Search the user's notes for a phrase."


def test_schema_follows_type_hints_and_defaults() -> None:
    params = search_notes.parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "The phrase to look for."}
    assert props["limit"] == {
        "type": "integer",
        "description": "Maximum number of notes to return.",
        "default": 10,
    }
    assert props["tags"]["anyOf"] == [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    assert props["order"]["enum"] == ["newest", "oldest"]
    assert props["order"]["type"] == "string"
    assert props["fuzzy"] == {"type": "boolean", "default": False}
    assert props["weight"] == {"type": "number", "default": 1.0}


def test_derived_schema_is_valid_json_schema_and_accepts_a_real_call() -> None:
    jsonschema.Draft202012Validator.check_schema(search_notes.parameters)
    jsonschema.validate({"query": "x", "tags": ["a"], "order": "oldest"}, search_notes.parameters)


def test_optional_dict_tuple_and_any_hints() -> None:
    async def f(a: int | None, b: dict[str, int], c: tuple[str, ...], d: Any, e: dict, f: str | int) -> None:
        """F."""

    props = tool_from_function(f).parameters["properties"]
    assert props["a"] == {"type": ["integer", "null"]}
    assert props["b"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["c"] == {"type": "array", "items": {"type": "string"}}
    assert props["d"] == {}
    assert props["e"] == {"type": "object"}
    assert props["f"] == {"type": ["string", "integer"]}


def test_spec_is_what_the_model_sees() -> None:
    spec = search_notes.spec
    assert isinstance(spec, ToolSpec)
    assert (spec.name, spec.description, spec.parameters) == (
        search_notes.name,
        search_notes.description,
        search_notes.parameters,
    )


def test_decorator_with_name_and_description_overrides() -> None:
    @tool(name="lookup", description="Look a word up.")
    async def define(word: str) -> str:
        """Ignored summary."""
        return word.upper()

    assert isinstance(define, Tool)
    assert (define.name, define.description) == ("lookup", "Look a word up.")


async def test_call_returns_strings_as_is_and_encodes_other_results_as_json() -> None:
    @tool
    async def shout(text: str) -> str:
        """Shout."""
        return text.upper() + " ü"

    assert await shout.call({"text": "hi"}) == "HI ü"
    result = await search_notes.call({"query": "q", "limit": 2})
    assert result == ('[{"query": "q", "limit": 2, "tags": null, "order": "newest", "fuzzy": false, "weight": 1.0}]')


async def test_unknown_argument_is_refused_naming_it_and_the_allowed_ones() -> None:
    with pytest.raises(ToolArgumentError, match=r"unknown argument\(s\) qurey; allowed: fuzzy, limit"):
        await search_notes.call({"qurey": "x"})


async def test_missing_required_argument_is_refused() -> None:
    with pytest.raises(ToolArgumentError, match=r"search_notes: missing required argument\(s\) query"):
        await search_notes.call({"limit": 3})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": 3}, "argument query must be string, got int"),
        ({"query": "x", "limit": True}, "argument limit must be integer, got bool"),
        ({"query": "x", "limit": 1.5}, "argument limit must be integer, got float"),
        ({"query": "x", "order": "random"}, "argument order must be one of"),
        ({"query": "x", "tags": ["a", 1]}, r"argument tags\[1\] must be string, got int"),
    ],
)
async def test_mistyped_arguments_are_refused(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolArgumentError, match=message):
        await search_notes.call(arguments)


async def test_integer_is_accepted_for_a_number() -> None:
    result = await search_notes.call({"query": "x", "weight": 2})
    assert '"weight": 2' in result


async def test_non_object_arguments_are_refused() -> None:
    with pytest.raises(ToolArgumentError, match="must be a JSON object, got list"):
        await search_notes.call(["x"])  # type: ignore[arg-type]


async def test_synchronous_function_runs_in_a_worker_thread() -> None:
    import threading

    main = threading.get_ident()

    @tool
    def where() -> bool:
        """Whether this ran off the event loop thread."""
        return threading.get_ident() != main

    assert await where.call({}) == "true"


async def test_errors_raised_by_the_function_propagate() -> None:
    @tool
    async def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        await broken.call({})


def test_parameter_without_hint_is_refused() -> None:
    async def f(x) -> None:  # type: ignore[no-untyped-def]
        """F."""

    with pytest.raises(TypeError, match="parameter 'x' needs a type hint"):
        tool_from_function(f)


def test_var_keyword_parameters_are_refused() -> None:
    async def f(**kwargs: str) -> None:
        """F."""

    with pytest.raises(TypeError, match="no \\*args, \\*\\*kwargs"):
        tool_from_function(f)


def test_unsupported_hint_is_refused() -> None:
    async def f(x: bytes) -> None:
        """F."""

    with pytest.raises(TypeError, match="parameter 'x': type hint <class 'bytes'> has no JSON schema"):
        tool_from_function(f)


def test_invalid_tool_name_is_refused() -> None:
    async def f() -> None:
        """F."""

    with pytest.raises(ValueError, match="must be 1-64 letters"):
        tool_from_function(f, name="has space")


async def test_hand_written_tool_checks_its_schema() -> None:
    async def echo(**kwargs: Any) -> Any:
        return kwargs

    handmade = Tool(
        name="echo",
        description="Echo the arguments.",
        parameters={
            "type": "object",
            "properties": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
            "required": ["point"],
        },
        function=echo,
    )
    assert await handmade.call({"point": {"x": 1}, "extra": 1}) == '{"point": {"x": 1}, "extra": 1}'
    with pytest.raises(ToolArgumentError, match="missing required argument\\(s\\) point.x"):
        await handmade.call({"point": {}})


@tool
async def whoami(greeting: str, context: ToolContext) -> dict[str, Any]:
    """Say who is calling.

    Args:
        greeting: A word to start with.
    """
    return {"greeting": greeting, "user": context.user_id, "action": context.action_id}


def test_a_tool_context_parameter_is_not_part_of_the_schema() -> None:
    assert whoami.parameters == {
        "type": "object",
        "properties": {"greeting": {"type": "string", "description": "A word to start with."}},
        "additionalProperties": False,
        "required": ["greeting"],
    }


async def test_a_tool_gets_the_context_of_the_call() -> None:
    with calling(CALL):
        assert await whoami.call({"greeting": "hi"}) == '{"greeting": "hi", "user": "alice", "action": "a1"}'
    assert current_tool_context() is None


async def test_a_synchronous_tool_gets_the_context_too() -> None:
    def where(context: ToolContext | None = None) -> str:
        """Where the call runs."""
        return f"{context.call_id}@{context.tool}" if context is not None else "nowhere"

    wrapped = tool_from_function(where)
    assert wrapped.parameters["properties"] == {}
    with calling(CALL):
        assert await wrapped.call({}) == "c1@whoami"
    assert await wrapped.call({}) == "nowhere"  # ToolContext | None runs without one


async def test_a_required_tool_context_outside_an_agents_call_is_a_clear_error() -> None:
    with pytest.raises(ToolError, match="parameter 'context' needs the call's ToolContext"):
        await whoami.call({"greeting": "hi"})


async def test_an_argument_named_like_the_context_parameter_is_refused() -> None:
    with calling(CALL), pytest.raises(ToolArgumentError, match="unknown argument\\(s\\) context"):
        await whoami.call({"greeting": "hi", "context": {"user_id": "bob"}})


def test_two_tool_context_parameters_are_refused() -> None:
    async def f(a: ToolContext, b: ToolContext | None) -> None:
        """F."""

    with pytest.raises(TypeError, match="parameters 'a' and 'b' both take the ToolContext"):
        tool_from_function(f)
