"""Models behind one small interface: provider adapters, a scripted model and an offline demo.

``Model.complete(messages, tools)`` takes the conversation and the tool specs and returns the
assistant's next message with its tool calls; ``Model.stream(messages, tools)`` yields the same
reply as ``TextDelta`` / ``ToolCallDelta`` pieces while it is produced, then the whole reply. Provider SDKs are optional extras
(``agent-skill-harness[openai]``, ``agent-skill-harness[anthropic]``) imported only when an
adapter is built; the adapter modules themselves load on first use of their names.
"""

from typing import TYPE_CHECKING

from filesystems import lazy_exports
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
from harness.models.errors import ModelError, ModelUnavailable, ScriptExhausted, UnknownModel
from harness.models.registry import ENTRY_POINT_GROUP, ModelFactory, known_model_providers, open_model, register_model

if TYPE_CHECKING:  # imported on first use: the offline models too, which a deployed agent never runs
    from harness.models.anthropic import AnthropicModel
    from harness.models.demo import DemoModel
    from harness.models.openai import OpenAIModel
    from harness.models.scripted import ScriptedCall, ScriptedModel, ScriptStep

__all__ = [
    "ENTRY_POINT_GROUP",
    "AnthropicModel",
    "DemoModel",
    "Message",
    "Model",
    "ModelError",
    "ModelFactory",
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
    "known_model_providers",
    "open_model",
    "register_model",
    "reply_deltas",
]

__getattr__, __dir__ = lazy_exports(__name__)  # the TYPE_CHECKING names, imported on first use
