"""Which modules a run's ``RuntimeContext`` passes through, in call order.

    .venv/bin/python bench/callchain.py

One scripted turn (a workspace skill; the model loads it, then answers) runs under
``sys.setprofile``. Every new frame of the project's own packages (``harness``, ``filesystems``,
``repositories``) that is handed the run's ``RuntimeContext`` as an argument (or an object carrying it as its
``context`` attribute: the turn's ``TurnPlan``) is recorded by its
module; consecutive frames of one module are collapsed into one visit. Printed: the sequence of
visits, then each module with its visits and re-entries (visits after the first), and the
total. A module that the chain leaves and comes back to again and again is a hub the turn
climbs in and out of; a layered turn passes each module once or twice.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from harness import RuntimeContext
from harness.agent import Harness
from harness.models import Message, ScriptedModel, ToolCall

OURS = ("harness", "filesystems", "repositories")
SKILL = "---\nname: greet\ndescription: Use when the user wants a greeting.\n---\nSay hello warmly.\n"


def _receives(frame: FrameType, context: RuntimeContext) -> bool:
    code = frame.f_code
    arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    return any(_carries(frame.f_locals.get(name), context) for name in arguments)


def _carries(value: object, context: RuntimeContext) -> bool:
    """``value`` is the run's context, or an object holding it as ``context`` (a turn's plan)."""
    if value is context:
        return True
    try:
        return getattr(value, "context", None) is context
    except Exception:  # a property that fails is not a carrier
        return False


def _trace(context: RuntimeContext) -> tuple[list[str], Any]:
    visits: list[str] = []
    seen: dict[int, FrameType] = {}  # frames stay alive so an id is never reused mid-run

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call" or id(frame) in seen:  # a resumed coroutine is not a new call
            return
        seen[id(frame)] = frame
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] in OURS and _receives(frame, context):
            if not visits or visits[-1] != module:
                visits.append(module)

    return visits, profile


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "skills", "greet").mkdir(parents=True)
        Path(tmp, "skills", "greet", "SKILL.md").write_text(SKILL)
        call = ToolCall(id="c1", name="load_skill_through_path", arguments={"skillId": "greet"})
        model = ScriptedModel([Message.assistant("", [call]), "Hello!"])
        context = RuntimeContext(user_id="alice")
        async with Harness(model=model, workspace=tmp) as agent:
            await agent.prepare(context)  # warm: the chain of a turn, not of the first load
            visits, profile = _trace(context)
            sys.setprofile(profile)
            try:
                await agent.run("hi", context=context)
            finally:
                sys.setprofile(None)
    print("chain:")
    for module in visits:
        print(f"  {module}")
    counts = Counter(visits)
    print("\nmodule                                   visits  re-entries")
    for module, count in counts.most_common():
        print(f"  {module:<40} {count:>4} {count - 1:>10}")
    print(f"\n{len(visits)} visits of {len(counts)} modules, {len(visits) - len(counts)} re-entries")


if __name__ == "__main__":
    asyncio.run(main())
