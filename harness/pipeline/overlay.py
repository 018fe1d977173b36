"""A user's skills as the shared base's plus the user's own changes, without copying the base.

With 10,000 market skills a copy of the merged skills costs about 300 KiB; every user with
skills of their own would pay it. :class:`SkillOverlay` reads through to the base (shared by
every user of one merge) and holds only what the user adds, replaces or hides.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, ValuesView
from typing import TypeVar

__all__ = ["SkillOverlay"]

_V = TypeVar("_V")


class SkillOverlay(MutableMapping[str, _V]):
    """``base`` with ``own`` entries added or replacing the base's, and the ``gone`` keys removed.

    The base is read, never written: setting or deleting a key changes only this overlay, so a
    turn may change its plan's skills without touching another turn's. Iteration keeps the
    base's order (a replaced key where the base has it), then the keys only ``own`` has.
    """

    __slots__ = ("_base", "_gone", "_len", "_own")

    def __init__(
        self, base: Mapping[str, _V], own: Mapping[str, _V] | None = None, gone: frozenset[str] | set[str] = frozenset()
    ) -> None:
        self._base = base
        self._own: dict[str, _V] = dict(own or {})
        self._gone: set[str] = {key for key in gone if key in base and key not in self._own}
        self._len = len(base) - len(self._gone) + sum(1 for key in self._own if key not in base)

    @property
    def base(self) -> Mapping[str, _V]:
        """The shared mapping this overlay reads through to."""
        return self._base

    @property
    def own(self) -> Mapping[str, _V]:
        """What this overlay adds or replaces."""
        return self._own

    @property
    def gone(self) -> frozenset[str]:
        """The base's keys this overlay removes."""
        return frozenset(self._gone)

    def __getitem__(self, key: str) -> _V:
        if key in self._own:
            return self._own[key]
        if key in self._gone:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._own or (key in self._base and key not in self._gone)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[str]:
        if not self._own and not self._gone:
            yield from self._base
            return
        own, gone = self._own, self._gone
        for key in self._base:
            if key not in gone:
                yield key
        for key in own:
            if key not in self._base:
                yield key

    def __setitem__(self, key: str, value: _V) -> None:
        if key not in self:
            self._len += 1
        self._own[key] = value
        self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._own.pop(key, None)
        if key in self._base:
            self._gone.add(key)
        self._len -= 1

    def values(self) -> ValuesView[_V]:
        """The values in iteration order (the base's own view when nothing is overlaid)."""
        if not self._own and not self._gone:
            return self._base.values()
        return super().values()

    def copy(self) -> SkillOverlay[_V]:
        """A new overlay over the same base with its own copy of the changes."""
        return SkillOverlay(self._base, self._own, self._gone)

    def __repr__(self) -> str:
        return f"SkillOverlay(base={len(self._base)} keys, own={sorted(self._own)}, gone={sorted(self._gone)})"
