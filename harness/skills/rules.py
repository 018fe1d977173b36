"""The Agent Skills specification's frontmatter rules, shared by strict and lenient loading.

Messages follow the wording of the specification's reference validator (``skills-ref``), so
people who know that tool recognise them, and the verdicts agree with it (held together by
tests/skills/test_reference_validator.py). Where we differ on purpose: our own documented field
``disable-model-invocation`` is a warning, not an unknown field; a wrongly typed field says
"must be a string"; and a ``metadata`` that is not a mapping of strings is a warning (the
reference stringifies its values silently).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from filesystems.paths import segment_problem
from harness.skills.arguments import CLAUDE_CODE_FIELDS

__all__ = [
    "ALLOWED_FIELDS",
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "Problem",
    "check_fields",
    "check_name",
    "unsafe_name_reason",
    "unsafe_segment_reason",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
ALLOWED_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
# Our own field and Claude Code's: accepted, but reported by strict validation as outside the
# specification.
EXTENSION_FIELDS = frozenset({"disable-model-invocation"}) | CLAUDE_CODE_FIELDS


@dataclass(frozen=True, kw_only=True, slots=True)
class Problem:
    """One rule broken: a stable code, the message, and whether the spec treats it as an error."""

    code: str
    message: str
    error: bool = True


_PLAIN_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def unsafe_segment_reason(name: str) -> str | None:
    """Why ``name`` cannot be a path segment (``None`` when it can).

    The rules of :func:`filesystems.paths.segment_problem`: the empty string, ``.`` and ``..``,
    path separators, controls, format characters, leading or trailing whitespace, non-NFC.
    """
    if _PLAIN_NAME.fullmatch(name):
        return None
    return segment_problem(name)


def unsafe_name_reason(name: str) -> str | None:
    """Why ``name`` cannot be a skill name, and so part of a skill id (``None`` when it can).

    A path segment without whitespace anywhere: ``/skill:<name>`` commands and skill ids are
    split on whitespace.
    """
    if _PLAIN_NAME.fullmatch(name):
        return None
    if any(char.isspace() for char in name):
        return "must not contain whitespace"
    return unsafe_segment_reason(name)


def check_fields(
    fields: Mapping[str, Any], *, folder: str | None, duplicate_keys: tuple[str, ...] = ()
) -> list[Problem]:
    """Every specification rule the frontmatter breaks, in a stable order.

    ``duplicate_keys`` (from :attr:`harness.skills.frontmatter.Frontmatter.duplicate_keys`) are errors.
    """
    problems = [
        Problem(code="duplicate-key", message=f"Duplicate key in frontmatter: {key} (the last value is used)")
        for key in duplicate_keys
    ]
    if "name" in fields:
        problems += check_name(fields["name"], folder)
    else:
        problems.append(Problem(code="missing-name", message="Missing required field in frontmatter: name"))
    problems += _check_description(fields)
    if "compatibility" in fields:
        problems += _check_compatibility(fields["compatibility"])
    if "metadata" in fields:
        problems += _check_metadata(fields["metadata"])
    if "disable-model-invocation" in fields and not isinstance(fields["disable-model-invocation"], bool):
        problems.append(
            Problem(
                code="disable-model-invocation-not-bool",
                message="Field 'disable-model-invocation' must be true or false",
            )
        )
    unknown = set(fields) - ALLOWED_FIELDS - EXTENSION_FIELDS
    if unknown:
        problems.append(
            Problem(
                code="unexpected-fields",
                message=(
                    f"Unexpected fields in frontmatter: {', '.join(sorted(unknown))}. "
                    f"Only {sorted(ALLOWED_FIELDS)} are allowed."
                ),
            )
        )
    extensions = set(fields) & EXTENSION_FIELDS
    if extensions:
        problems.append(
            Problem(
                code="extension-field",
                message=(
                    f"Field {', '.join(sorted(extensions))} is a harness or Claude Code extension, "
                    "not part of the Agent Skills specification"
                ),
                error=False,
            )
        )
    return problems


def check_name(name: object, folder: str | None) -> list[Problem]:
    """The specification's rules for a skill name (given, or derived from its folder)."""
    if not isinstance(name, str):
        return [Problem(code="name-not-string", message="Field 'name' must be a string")]
    if not name.strip():
        return [Problem(code="missing-name", message="Field 'name' must be a non-empty string")]
    name = name.strip()
    if _PLAIN_NAME.fullmatch(name) and len(name) <= MAX_NAME_LENGTH:
        # The common case: every character rule holds; only the folder can differ.
        return [] if folder is None or folder == name else _check_folder(name, folder)
    name = unicodedata.normalize("NFKC", name)
    problems = []
    if len(name) > MAX_NAME_LENGTH:
        problems.append(
            Problem(
                code="name-too-long",
                message=f"Skill name '{name}' exceeds {MAX_NAME_LENGTH} character limit ({len(name)} chars)",
            )
        )
    if name != name.lower():
        problems.append(Problem(code="name-not-lowercase", message=f"Skill name '{name}' must be lowercase"))
    if name.startswith("-") or name.endswith("-"):
        problems.append(Problem(code="name-hyphen-edge", message="Skill name cannot start or end with a hyphen"))
    if "--" in name:
        problems.append(
            Problem(code="name-consecutive-hyphens", message="Skill name cannot contain consecutive hyphens")
        )
    if not all(char.isalnum() or char == "-" for char in name):
        problems.append(
            Problem(
                code="name-invalid-characters",
                message=(
                    f"Skill name '{name}' contains invalid characters. Only letters, digits, and hyphens are allowed."
                ),
            )
        )
    if folder is not None:
        problems += _check_folder(name, folder)
    return problems


def _check_folder(name: str, folder: str) -> list[Problem]:
    if unicodedata.normalize("NFKC", folder) == name:
        return []
    return [Problem(code="name-folder-mismatch", message=f"Directory name '{folder}' must match skill name '{name}'")]


def _check_description(fields: Mapping[str, Any]) -> list[Problem]:
    if "description" not in fields:
        return [Problem(code="missing-description", message="Missing required field in frontmatter: description")]
    description = fields["description"]
    if not isinstance(description, str):
        return [Problem(code="description-not-string", message="Field 'description' must be a string")]
    if not description.strip():
        return [Problem(code="missing-description", message="Field 'description' must be a non-empty string")]
    if len(description) > MAX_DESCRIPTION_LENGTH:
        return [
            Problem(
                code="description-too-long",
                message=f"Description exceeds {MAX_DESCRIPTION_LENGTH} character limit ({len(description)} chars)",
            )
        ]
    return []


def _check_compatibility(value: object) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem(code="compatibility-not-string", message="Field 'compatibility' must be a string")]
    if len(value) > MAX_COMPATIBILITY_LENGTH:
        return [
            Problem(
                code="compatibility-too-long",
                message=f"Compatibility exceeds {MAX_COMPATIBILITY_LENGTH} character limit ({len(value)} chars)",
            )
        ]
    return []


def _check_metadata(value: object) -> list[Problem]:
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and isinstance(val, str) for key, val in value.items()
    ):
        return [
            Problem(
                code="metadata-not-string-map",
                message="Field 'metadata' should be a mapping of strings to strings",
                error=False,
            )
        ]
    return []
