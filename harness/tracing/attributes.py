"""Every span and attribute name the harness's traces use, in one place.

The names follow the OpenTelemetry semantic conventions for generative AI (``gen_ai.*``),
which are still in development: when they change, this module is the one to edit. Names of
the harness's own (``harness.*``) are the skill pipeline's, which the conventions do not cover.
"""

from __future__ import annotations

__all__ = [
    "AGENT_NAME",
    "CAPTURE_CONTENT_ENV",
    "CHAT",
    "CONVERSATION_ID",
    "DIAGNOSTICS",
    "ERROR_TYPE",
    "EXECUTE_TOOL",
    "INPUT_MESSAGES",
    "INVOKE_AGENT",
    "OPERATION_NAME",
    "OUTPUT_MESSAGES",
    "PREPARE_SPAN",
    "PROVIDER_NAME",
    "REQUEST_MODEL",
    "SKILLS",
    "SKILL_NAME",
    "SKILL_PATH",
    "SKILL_SOURCE_URI",
    "STAGED_REMOVED",
    "STAGED_UNCHANGED",
    "STAGED_WRITTEN",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_RESULT",
    "TOOL_NAME",
    "TOOL_TYPE",
    "UNKNOWN_ERROR",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
    "VISIBLE_SKILLS",
    "layer_skills",
]

# The opt-in to record message contents (prompts, replies, tool arguments and results).
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# Operations (``gen_ai.operation.name``); spans are named "<operation> <agent, model or tool>".
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
CHAT = "chat"  # one model call; its span is named "chat <model>"
PREPARE_SPAN = "harness.turn.prepare"

OPERATION_NAME = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"

TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"

SKILL_NAME = "gen_ai.skill.name"
SKILL_SOURCE_URI = "gen_ai.skill.source.uri"
SKILL_PATH = "harness.skill.path"

ERROR_TYPE = "error.type"
UNKNOWN_ERROR = "_OTHER"  # the conventions' value when the error has no better name

# ``harness.turn.prepare``: what the skill pipeline gave the turn.
SKILLS = "harness.turn.skills"
VISIBLE_SKILLS = "harness.turn.visible_skills"
DIAGNOSTICS = "harness.turn.diagnostics"
STAGED_WRITTEN = "harness.staging.written"
STAGED_UNCHANGED = "harness.staging.unchanged"
STAGED_REMOVED = "harness.staging.removed"


def layer_skills(layer: str) -> str:
    """The attribute counting the turn's skills from ``layer`` (``global``, ``market``, ...)."""
    return f"harness.turn.layer.{layer}.skills"
