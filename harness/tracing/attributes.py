"""Every span, metric and attribute name the harness's telemetry uses, in one place.

The names follow the OpenTelemetry semantic conventions for generative AI (``gen_ai.*``),
which are still in development: when they change, this module is the one to edit. Names of
the harness's own (``harness.*``) are the skill pipeline's and the agent's, which the
conventions do not cover.
"""

from __future__ import annotations

__all__ = [
    "AGENT_DURATION",
    "AGENT_DURATION_BUCKETS",
    "AGENT_NAME",
    "CACHED_USERS",
    "CACHE_PART",
    "CACHE_USAGE",
    "CAPTURE_CONTENT_ENV",
    "CHAT",
    "CONVERSATION_ID",
    "DIAGNOSTICS",
    "ENVIRONMENT_BUILDS",
    "ENVIRONMENT_BUILD_DURATION",
    "ENVIRONMENT_BUILD_DURATION_BUCKETS",
    "ENVIRONMENT_OUTCOME",
    "ERROR_TYPE",
    "EXECUTE_TOOL",
    "INPUT_MESSAGES",
    "INVOKE_AGENT",
    "MARKET_FAILURES",
    "MARKET_SOURCE",
    "OPERATION_DURATION",
    "OPERATION_DURATION_BUCKETS",
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
    "TOKEN_TYPE",
    "TOKEN_USAGE",
    "TOKEN_USAGE_BUCKETS",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_RESULT",
    "TOOL_DURATION",
    "TOOL_NAME",
    "TOOL_TYPE",
    "TURNS",
    "TURN_OUTCOME",
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


# -- metrics ---------------------------------------------------------------------------------
# The conventions' metrics of agent runs, model calls and tool calls, with the bucket boundaries
# they recommend; each carries ``error.type`` when what it measures failed.

OPERATION_DURATION = "gen_ai.client.operation.duration"  # a model call (``chat``), seconds
OPERATION_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_USAGE = "gen_ai.client.token.usage"  # tokens of a model call, by ``gen_ai.token.type``
TOKEN_USAGE_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
TOKEN_TYPE = "gen_ai.token.type"  # ``input`` or ``output``
AGENT_DURATION = "gen_ai.invoke_agent.duration"  # a run, seconds
AGENT_DURATION_BUCKETS = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)
TOOL_DURATION = "gen_ai.execute_tool.duration"  # a tool call, seconds
# The harness's own.
TURNS = "harness.turns"  # runs that ended, by ``harness.turn.outcome``
TURN_OUTCOME = "harness.turn.outcome"  # ``completed``, ``paused``, ``failed`` or ``cancelled``
MARKET_FAILURES = "harness.market.refresh.failures"  # loads of a market that failed or timed out
MARKET_SOURCE = "harness.market.source"  # the market's slug
ENVIRONMENT_BUILDS = "harness.environment.builds"  # skill environment builds, by outcome
ENVIRONMENT_BUILD_DURATION = "harness.environment.build.duration"  # seconds
ENVIRONMENT_BUILD_DURATION_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
ENVIRONMENT_OUTCOME = "harness.environment.build.outcome"  # ``ready`` or ``failed``
CACHE_USAGE = "harness.skills_cache.usage"  # bytes in ``.skills-cache``, by part
CACHE_PART = "harness.skills_cache.part"  # ``skills`` (staged files) or ``environments``
CACHED_USERS = "harness.pipeline.user.count"  # users whose layers and views the pipeline holds


def layer_skills(layer: str) -> str:
    """The attribute counting the turn's skills from ``layer`` (``global``, ``market``, ...)."""
    return f"harness.turn.layer.{layer}.skills"
