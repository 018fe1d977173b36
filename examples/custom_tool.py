"""A custom tool: a plain async function with type hints and a docstring becomes a tool.

``Harness(tools=[...])`` turns ``celsius_to_fahrenheit`` into a tool whose JSON schema comes
from its signature. A ``ScriptedModel`` stands in for a real model: it calls the tool once,
then answers with the tool's result, so the run is deterministic and needs no API key.

Run::

    python examples/custom_tool.py [WORKDIR]

Without WORKDIR a temporary folder is used.
"""

from __future__ import annotations

from pathlib import Path

from _workdir import run_in_workdir

from harness import Harness, Message, RuntimeContext, ScriptedModel, ToolCall, ToolReturned
from harness.models import ToolSpec


async def celsius_to_fahrenheit(celsius: float, decimals: int = 1) -> str:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit.

    Args:
        celsius: the temperature in degrees Celsius.
        decimals: how many decimals to round the result to.
    """
    return f"{round(celsius * 9 / 5 + 32, decimals)} F"


def answer(messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> str:
    """The model's second step: quote what the tool returned."""
    return f"21.5 C is {messages[-1].content}."


async def main(workdir: Path) -> None:
    model = ScriptedModel(
        [
            Message.assistant(
                tool_calls=[ToolCall(id="call-1", name="celsius_to_fahrenheit", arguments={"celsius": 21.5})]
            ),
            answer,
        ]
    )
    async with Harness(
        name="converter", model=model, workspace=workdir / "workspace", tools=[celsius_to_fahrenheit]
    ) as agent:
        result = await agent.run("How warm is 21.5 C in Fahrenheit?", context=RuntimeContext(user_id="dave"))
    offered = model.calls[0].tool_names
    print(f"tools offered to the model: {', '.join(offered)}")
    for event in result.events:
        if isinstance(event, ToolReturned):
            print(f"[tool] {event.name} -> {event.content}")
    print(f"reply: {result.reply}")


if __name__ == "__main__":
    run_in_workdir(main)
