"""Lazy import of the optional provider SDKs."""

from __future__ import annotations

import importlib
from types import ModuleType

from harness.models.errors import ModelUnavailable


def import_sdk(module: str, extra: str) -> ModuleType:
    """Import the SDK ``module`` or raise ``ModelUnavailable`` naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailable(
            f"the {module!r} SDK is not installed; install agent-skill-harness[{extra}] "
            f"(pip install 'agent-skill-harness[{extra}]')"
        ) from exc
