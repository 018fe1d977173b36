"""Plain-language descriptions of what a run waits for (for CLIs, tools and logs)."""

from __future__ import annotations

import json

from harness.engine.run import PendingAction

__all__ = ["describe_action"]


def describe_action(pending: PendingAction) -> str:
    """What performing ``pending`` means, e.g. ``call tool fetch-diff with {} (action 1a2b...)``."""
    action = pending.action
    if action.type == "ask_user":
        options = f" (options: {', '.join(action.options)})" if action.options else ""
        what = f"ask the user: {action.question}{options}"
    elif action.type == "handoff":
        what = f"hand off to agent {action.to}"
    elif action.type == "checkpoint":
        what = f"acknowledge checkpoint {pending.step_id}"
    elif action.type == "call_tool":
        what = f"call tool {action.ref} with {json.dumps(dict(action.args), ensure_ascii=False)}"
    else:
        what = f"invoke skill {action.ref}"
    if action.instructions:
        what += f" ({action.instructions})"
    return f"{what} for action {pending.id}"
