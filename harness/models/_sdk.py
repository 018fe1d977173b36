"""Lazy import of the optional provider SDKs."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from harness.models.errors import ModelError, ModelUnavailable


def import_sdk(module: str, extra: str) -> ModuleType:
    """Import the SDK ``module`` or raise ``ModelUnavailable`` naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelUnavailable(
            f"the {module!r} SDK is not installed; install agent-skill-harness[{extra}] "
            f"(pip install 'agent-skill-harness[{extra}]')"
        ) from exc


def options_from_env(
    provider: str, model: str, environ: Mapping[str, str] | None, kwargs: dict[str, Any], default_base_url: str
) -> dict[str, Any]:
    """``kwargs`` completed from ``<PROVIDER>_API_KEY`` / ``<PROVIDER>_BASE_URL`` (keywords win).

    Raises ``ModelError`` when no API key is given either way.
    """
    env = os.environ if environ is None else environ
    prefix = provider.upper()
    kwargs.setdefault("base_url", env.get(f"{prefix}_BASE_URL") or default_base_url)
    if "api_key" not in kwargs:
        key = env.get(f"{prefix}_API_KEY")
        if not key:
            raise ModelError(f"no API key for {provider}:{model}: set {prefix}_API_KEY or pass api_key=...")
        kwargs["api_key"] = key
    return kwargs
