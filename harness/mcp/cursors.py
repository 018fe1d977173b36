"""``skills/list`` cursors: where the next page starts, signed for the user it was given to.

A stateless server (replicas behind a load balancer) keeps nothing between two requests, so the
cursor is all it knows of the page before. It names the last skill that page gave (its name and
source, the order of :meth:`SkillCatalog.paths`), so the next page starts after it: a cursor
replayed after the catalog changed neither repeats nor skips a skill that is still there. It is
signed (HMAC-SHA256) with a secret of the workspace (``.harness/mcp-cursor.key``, shared by the
replicas that serve it) over the user it was given to, so a cursor from another user, an altered
or made-up one, or one longer than :data:`MAX_CURSOR` is refused with :class:`SkillRequestError`
before anything is listed: a cursor can only ever page through its own user's skills.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import hmac
import json
import logging
import re
import secrets

from filesystems import MACHINE_DIR, AbstractFilesystem, machine_key
from harness.mcp.errors import SkillRequestError
from harness.pipeline.plan import ResolvedSkill

__all__ = ["MAX_CURSOR", "CursorSigner", "position"]

log = logging.getLogger(__name__)

#: Longest cursor accepted, in characters (the ones given are far shorter).
MAX_CURSOR = 1024
_KEY_FILE = f"{MACHINE_DIR}/mcp-cursor.key"
_SHAPE = re.compile(r"1\.([A-Za-z0-9_-]+)\.([0-9a-f]{32})")
_AGAIN = "list again without a cursor"

Place = tuple[str, str]


def position(skills: list[ResolvedSkill], after: Place) -> int:
    """How many of ``skills`` (in catalog order) come up to and including ``after``."""
    return bisect.bisect_right([(s.skill.name, s.skill.source) for s in skills], after)


class CursorSigner:
    """Writes and reads the cursors of one server over the workspace ``filesystem`` (see the
    module docstring). The secret is read, or created, on first use; a workspace where it cannot
    be kept gets one for this process only (a warning: cursors then work on this replica only)."""

    def __init__(self, filesystem: AbstractFilesystem) -> None:
        self.filesystem = filesystem
        self._secret: bytes | None = None

    async def give(self, user: str, after: Place) -> str:
        """The cursor, for ``user``, of the page after the skill ``after`` (name, source)."""
        payload = base64.urlsafe_b64encode(json.dumps(list(after)).encode("utf-8")).decode("ascii").rstrip("=")
        return f"1.{payload}.{await self._mac(user, payload)}"

    async def read(self, user: str, cursor: str) -> Place:
        """The skill after which ``user``'s page of ``cursor`` starts; :class:`SkillRequestError`
        for a cursor this server did not give to ``user``."""
        shown = f"cursor {cursor[:40]!r}{'...' if len(cursor) > 40 else ''}"
        match = _SHAPE.fullmatch(cursor) if len(cursor) <= MAX_CURSOR else None
        if match is None:
            raise SkillRequestError(f"{shown} was not given by this server; {_AGAIN}")
        payload, mac = match.groups()
        if not hmac.compare_digest(mac, await self._mac(user, payload)):
            raise SkillRequestError(
                f"{shown} was not given by this server to this user (it is another user's, altered, or from before "
                f"the server's key changed); {_AGAIN}"
            )
        try:
            name, source = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (ValueError, TypeError, binascii.Error):  # signed by us: only a key shared with another program
            raise SkillRequestError(f"{shown} cannot be read; {_AGAIN}") from None
        return str(name), str(source)

    async def _mac(self, user: str, payload: str) -> str:
        message = b"\0".join((b"skills/list cursor", user.encode("utf-8"), payload.encode("ascii")))
        return hmac.new(await self._key(), message, hashlib.sha256).hexdigest()[:32]

    async def _key(self) -> bytes:
        if self._secret is None:
            try:
                self._secret = await machine_key(self.filesystem, _KEY_FILE)
            except (OSError, ValueError) as exc:
                log.warning("cannot keep %s (%s): skills/list cursors work on this server process only", _KEY_FILE, exc)
                self._secret = secrets.token_bytes(32)
        return self._secret
