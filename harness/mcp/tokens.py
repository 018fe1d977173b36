"""Who is asking over HTTP: the bearer-token → user mapping of ``harness mcp serve --http``.

The mapping is YAML (JSON works too) from a user id to one token or a list of tokens::

    alice: s3cret-alice
    bob:
      - s3cret-bob-laptop
      - sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08

A token written ``sha256:<hex>`` is the SHA-256 of the real token, so the file need not hold
the secret itself. The mapping comes from ``--tokens FILE`` or from the environment variable
``HARNESS_MCP_TOKENS`` (same format, inline); both may be given and are merged. A request
without ``Authorization: Bearer <token>``, or with a token nobody maps, is refused with HTTP
401 before it reaches the skills: no principal, no skills.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from filesystems import validate_user_id
from harness.mcp.errors import TokenConfigError

__all__ = ["TOKENS_ENV", "TokenMap"]

#: The environment variable holding an inline token mapping.
TOKENS_ENV = "HARNESS_MCP_TOKENS"

_HASHED = re.compile(r"sha256:([0-9a-f]{64})")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenMap:
    """Token digests → user ids. Tokens are compared by their SHA-256, never stored in clear."""

    users: Mapping[str, str] = field(default_factory=dict)  # sha256 hex of a token -> user id

    def __len__(self) -> int:
        return len(self.users)

    def user_for(self, token: str) -> str | None:
        """The user a presented bearer token stands for, or ``None``."""
        digest = _digest(token)
        for known, user in self.users.items():
            if hmac.compare_digest(known, digest):
                return user
        return None

    @classmethod
    def parse(cls, text: str, *, where: str) -> TokenMap:
        """The mapping written in ``text`` (see the module docstring); ``where`` names it in errors."""
        try:
            data: Any = yaml.load(text, Loader=yaml.SafeLoader) or {}
        except yaml.YAMLError as exc:
            raise TokenConfigError(f"{where}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise TokenConfigError(f"{where}: must map user ids to a token or a list of tokens")
        users: dict[str, str] = {}
        for user, tokens in data.items():
            try:
                validate_user_id(user)
            except (TypeError, ValueError) as exc:
                raise TokenConfigError(f"{where}: {exc}") from None
            items = tokens if isinstance(tokens, list) else [tokens]
            for token in items:
                if not isinstance(token, str) or len(token.strip()) < 8:
                    raise TokenConfigError(f"{where}: user {user!r} has a token that is not text of 8+ characters")
                hashed = _HASHED.fullmatch(token.strip())
                digest = hashed.group(1) if hashed else _digest(token.strip())
                if users.get(digest, user) != user:
                    raise TokenConfigError(f"{where}: one token is given to both {users[digest]!r} and {user!r}")
                users[digest] = user
        return cls(users)

    @classmethod
    def load(cls, path: Path | None = None, *, environ: Mapping[str, str] | None = None) -> TokenMap:
        """The mapping of the file ``path`` merged with ``HARNESS_MCP_TOKENS`` (either may be absent)."""
        environ = os.environ if environ is None else environ
        merged: dict[str, str] = {}
        sources: list[TokenMap] = []
        if path is not None:
            try:
                sources.append(cls.parse(path.read_text(encoding="utf-8"), where=str(path)))
            except OSError as exc:
                raise TokenConfigError(f"cannot read the token file {path}: {exc.strerror or exc}") from None
        if environ.get(TOKENS_ENV, "").strip():
            sources.append(cls.parse(environ[TOKENS_ENV], where=TOKENS_ENV))
        for source in sources:
            for digest, user in source.users.items():
                if merged.get(digest, user) != user:
                    raise TokenConfigError(f"one token is given to both {merged[digest]!r} and {user!r}")
                merged[digest] = user
        return cls(merged)
