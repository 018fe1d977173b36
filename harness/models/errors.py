"""Errors raised by model adapters.

``ModelError`` is the root; provider SDK errors are translated into it where they enter: the
message carries the SDK error's text with the API key masked, and the original is not chained
(its text may echo the key).
"""

from __future__ import annotations

from harness.errors import ConfigError, HarnessError

__all__ = ["ModelError", "ModelUnavailable", "ScriptExhausted", "UnknownModel"]


class ModelError(HarnessError):
    """A model call failed: the provider refused it, could not be reached or answered garbage."""


class ModelUnavailable(ModelError):
    """The SDK an adapter needs is not installed; the message names the extra to install."""


class ScriptExhausted(ModelError):
    """A ``ScriptedModel`` was asked for more replies than it was given."""


class UnknownModel(ModelError, ConfigError):
    """A model spec string (``"openai:gpt-4o-mini"``) names no known provider."""
