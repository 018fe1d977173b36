"""Tracing a turn with OpenTelemetry and printing its span tree.

The harness makes its spans with the OpenTelemetry API only; the application configures the
SDK. Here that is an SDK ``TracerProvider`` with an ``InMemorySpanExporter`` (swap in
``ConsoleSpanExporter`` or an OTLP exporter in a real app), handed to the agent as
``tracer_provider``. One turn with the offline ``DemoModel`` loads the hello-world skill and runs
its script; the example prints the spans as a tree with their main attributes.

Needs ``opentelemetry-sdk`` (``pip install 'agent-skill-harness[otel]' opentelemetry-sdk``);
without it the example says so and exits cleanly. Run::

    python examples/tracing.py [WORKDIR]
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from _workdir import require, run_in_workdir

from harness import DemoModel, Harness, RuntimeContext

SKILLS = Path(__file__).resolve().parent / "skills"
# The attributes printed next to each span (every name is in harness/tracing/attributes.py).
SHOWN = (
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.request.model",
    "gen_ai.tool.name",
    "gen_ai.skill.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "harness.turn.skills",
    "error.type",
)


def print_tree(spans: list[Any]) -> None:
    """Each span under its parent, in start order, with the attributes in ``SHOWN``."""
    children: dict[int | None, list[Any]] = {}
    ids = {span.context.span_id for span in spans}
    for span in sorted(spans, key=lambda s: s.start_time):
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)

    def show(parent: int | None, depth: int) -> None:
        for span in children.get(parent, []):
            attributes = dict(span.attributes or {})
            shown = ", ".join(f"{name}={attributes[name]}" for name in SHOWN if name in attributes)
            print(f"{'  ' * depth}{span.name}  [{shown}]")
            show(span.context.span_id, depth + 1)

    show(None, 0)


async def main(workdir: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    workspace = workdir / "workspace"
    shutil.copytree(SKILLS, workspace / "skills", dirs_exist_ok=True)
    try:
        async with Harness(name="traced", model=DemoModel(), workspace=workspace, tracer_provider=provider) as agent:
            result = await agent.run("Please give Ada a friendly greeting", context=RuntimeContext(user_id="ada"))
    finally:
        provider.shutdown()
    print(f"reply: {result.reply.splitlines()[0]}")
    print_tree(list(exporter.get_finished_spans()))


if __name__ == "__main__":
    require("opentelemetry.sdk.trace", "the OpenTelemetry SDK; pip install opentelemetry-sdk")
    run_in_workdir(main)
