"""The async-resource lifecycle every filesystem, store, market, model and agent shares."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncResource"]


class AsyncResource:
    """Something that holds resources and releases them once.

    Use it as an async context manager (``async with`` returns the resource itself and calls
    :meth:`aclose` on exit) or call :meth:`aclose` yourself. :meth:`aclose` is idempotent: the
    first call marks the resource closed *before* running :meth:`_aclose`, so a cleanup that
    partly fails is not retried and a second call does nothing. Subclasses release what they
    own in :meth:`_aclose` (through an ``AsyncExitStack`` when there are several things, so one
    failure does not skip the rest); subclasses that acquire on entry override ``__aenter__``
    and return ``await super().__aenter__()``.
    """

    def __init__(self) -> None:
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` has been called."""
        return self._closed

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release what this resource owns. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        await self._aclose()

    async def _aclose(self) -> None:
        """Release the resource's own holdings; called at most once. The default holds nothing."""
