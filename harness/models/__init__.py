"""Models behind one small interface: provider adapters, a scripted model and an offline demo.

``Model.complete(messages, tools)`` takes the conversation and the tool specs and returns the
assistant's next message with its tool calls. Provider SDKs are optional extras
(``agent-skill-harness[openai]``, ``agent-skill-harness[anthropic]``) imported only when an
adapter is built.
"""

from harness.models.base import Message, Model, ModelReply, Role, ToolCall, ToolSpec, Usage
from harness.models.errors import ModelError, ModelUnavailable, ScriptExhausted, UnknownModel
from harness.models.registry import open_model
from harness.models.scripted import ScriptedCall, ScriptedModel, ScriptStep

__all__ = [
    "Message",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelUnavailable",
    "Role",
    "ScriptExhausted",
    "ScriptStep",
    "ScriptedCall",
    "ScriptedModel",
    "ToolCall",
    "ToolSpec",
    "UnknownModel",
    "Usage",
    "open_model",
]
