"""Secrets the harness keeps in its machine-owned files (``.harness/…``) to sign its own records."""

from __future__ import annotations

import secrets

from .base import AbstractFilesystem

__all__ = ["machine_key"]


async def machine_key(filesystem: AbstractFilesystem, path: str) -> bytes:
    """The secret kept at ``path`` of ``filesystem`` (as hex text): read, or created with 32
    random bytes and mode 0600 when missing. Of processes creating it at once, exactly one
    writes it (an exclusive create) and every one uses that key. ``ValueError`` for a file that
    does not hold hex text."""
    try:
        return _secret(await filesystem.read_bytes(path))
    except FileNotFoundError:
        pass
    try:
        await filesystem.create_exclusive(path, secrets.token_hex(32).encode("ascii"))
        await filesystem.write_bytes(path, await filesystem.read_bytes(path), mode=0o600)
    except FileExistsError:
        pass  # another process made it first; use theirs
    return _secret(await filesystem.read_bytes(path))


def _secret(data: bytes) -> bytes:
    return bytes.fromhex(data.decode("ascii").strip())
