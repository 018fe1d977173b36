"""What is wrong with a ``harness.yaml``, in words: one line per problem, naming the key's path.

The schema's validators raise :class:`UnexpectedValue` (a value of the wrong type or range) and
:class:`UnknownKeys`; :func:`problems` turns them, and any other error pydantic reports, into
messages such as ``max_steps must be an integer ≥ 1, got 'lots'`` or ``unknown keys nmae (did
you mean name?)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from filesystems import redact_secrets
from harness.errors import ConfigError

__all__ = ["UnexpectedValue", "UnknownKeys", "key_path", "problems"]


class UnexpectedValue(ConfigError):
    """A value is not what its key takes; ``expected`` says what it takes, in words. Raised by
    the schema's validators; :func:`~harness.config.load_config` reports it with the key's path."""

    def __init__(self, expected: str) -> None:
        super().__init__(f"expected {expected}")
        self.expected = expected


class UnknownKeys(ConfigError):
    """A mapping has keys its section does not know (raised by the schema, reported as above)."""

    def __init__(self, unknown: Sequence[str], known: Sequence[str], expected: str) -> None:
        super().__init__(f"unknown keys {', '.join(unknown)}")
        self.unknown, self.known, self.expected = list(unknown), list(known), expected


def key_path(loc: Sequence[int | str]) -> str:
    """``('approval', 'rules', 0, 'kinds')`` as ``approval.rules[0].kinds``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def problems(error: ValidationError) -> list[str]:
    """One message per problem ``error`` reports, secrets in the values masked."""
    return [redact_secrets(_message(detail)) for detail in error.errors()]


def _message(detail: Mapping[str, Any]) -> str:
    where = key_path(detail["loc"])
    cause = detail.get("ctx", {}).get("error")
    if isinstance(cause, UnknownKeys):
        return _unknown(where, cause)
    if isinstance(cause, UnexpectedValue):
        return f"{where or 'the configuration'} must be {cause.expected}, got {detail['input']!r}"
    if detail["type"] == "missing":
        return f"{where} is required"
    text = str(cause) if isinstance(cause, ValueError) else detail["msg"]
    return f"{where}: {text}" if where else text


def _unknown(where: str, error: UnknownKeys) -> str:
    """``unknown keys a.x (did you mean a.y?); a must be ...``; at the top, the known keys
    instead when no key is close to a known one."""
    prefix = f"{where}." if where else ""
    guesses = [guess for key in error.unknown for guess in difflib.get_close_matches(key, error.known, n=1)]
    text = f"unknown keys {', '.join(prefix + key for key in error.unknown)}"
    if guesses:
        text += f" (did you mean {' or '.join(prefix + guess for guess in guesses)}?)"
    if where:
        return f"{text}; {where} must be {error.expected}"
    return text if guesses else f"{text} (known: {', '.join(error.known)})"
