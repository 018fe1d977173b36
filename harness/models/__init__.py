"""Models behind one small interface: provider adapters, a scripted model and an offline demo.

``Model.complete(messages, tools)`` takes the conversation and the tool specs and returns the
assistant's next message with its tool calls; ``Model.stream(messages, tools)`` yields the same
reply as ``TextDelta`` / ``ToolCallDelta`` pieces while it is produced, then the whole reply. Provider SDKs are optional extras
(``agent-skill-harness[openai]``, ``agent-skill-harness[anthropic]``) imported only when an
adapter is built, so importing the adapter classes costs nothing.
"""

from harness.models.anthropic import AnthropicModel
from harness.models.base import (
    Message,
    Model,
    ModelReply,
    Role,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
    reply_deltas,
)
from harness.models.demo import DemoModel
from harness.models.errors import ModelError, ModelUnavailable, ScriptExhausted, UnknownModel
from harness.models.openai import OpenAIModel
from harness.models.registry import open_model
from harness.models.scripted import ScriptedCall, ScriptedModel, ScriptStep

__all__ = [
    "AnthropicModel",
    "DemoModel",
    "Message",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelUnavailable",
    "OpenAIModel",
    "Role",
    "ScriptExhausted",
    "ScriptStep",
    "ScriptedCall",
    "ScriptedModel",
    "StreamItem",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolSpec",
    "UnknownModel",
    "Usage",
    "open_model",
    "reply_deltas",
]
