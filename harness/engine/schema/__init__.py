"""JSON Schemas of the native workflow files, shipped as package data."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Literal

__all__ = ["load_schema", "schema_path"]

SchemaName = Literal["workflow", "guardrails", "checks"]


def schema_path(name: SchemaName) -> str:
    """The package-resource name of a schema (``workflow.schema.json`` ...)."""
    if name not in ("workflow", "guardrails", "checks"):
        raise ValueError(f"no schema {name!r} (workflow, guardrails, checks)")
    return f"{name}.schema.json"


def load_schema(name: SchemaName) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``workflow.yaml``, ``guardrails.yaml`` or ``checks.yaml``."""
    text = resources.files(__name__).joinpath(schema_path(name)).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
