"""The async-resource lifecycle every filesystem, store, market, model and agent shares, and
:class:`Fixed`, the attributes a resource is built with."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Generic, NoReturn, Self, TypeVar, overload

__all__ = ["AsyncResource", "Fixed"]

_T = TypeVar("_T")


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


class Fixed(Generic[_T]):
    """A public attribute its owner's constructor sets once: reading it gives the value, and
    assigning it again raises ``AttributeError`` saying ``how`` to get another.

    For the parts a resource is built with (its filesystem, its markets, its name): the owner
    enters and closes them and hands them to its parts when it is built, so an assignment
    afterwards would change what the attribute says and nothing of what the owner does::

        class Agent(AsyncResource):
            name = Fixed[str]("build another agent")

            def __init__(self, name: str) -> None:
                super().__init__()
                self.name = name  # the one assignment
    """

    def __init__(self, how: str) -> None:
        self._how = how
        self._name = ""
        self._where = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name, self._where = name, f"{owner.__name__}.{name}"

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> Self | _T:
        if instance is None:
            return self
        try:
            value: _T = instance.__dict__[self._name]
        except KeyError:
            raise AttributeError(f"{self._where} is not set yet") from None
        return value

    def __set__(self, instance: object, value: _T) -> None:
        if self._name in instance.__dict__:
            self._refuse()
        instance.__dict__[self._name] = value

    def __delete__(self, instance: object) -> NoReturn:
        self._refuse()

    def _refuse(self) -> NoReturn:
        raise AttributeError(f"{self._where} is fixed when it is built; {self._how}")
