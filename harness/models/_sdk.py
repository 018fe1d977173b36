"""The provider-SDK models' shared part: lazy SDK import, the client, env options, errors."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar, Self

from filesystems import redact_secrets, redact_url
from harness.models.base import Model, ToolCall, ToolCallDelta
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


@dataclass
class PartialCall:
    """A tool call being assembled from a reply stream: its position among the reply's calls,
    id, name and the argument fragments so far."""

    index: int
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)

    def add(self, fragment: str) -> ToolCallDelta:
        """Append ``fragment`` to the arguments; the delta that reports it."""
        self.fragments.append(fragment)
        return ToolCallDelta(index=self.index, call_id=self.id, name=self.name, arguments=fragment)


class SDKModel(Model):
    """A :class:`Model` talking to a provider through its official async SDK client.

    Subclasses name the ``provider`` (the SDK module, the pip extra, the ``<PROVIDER>_*``
    environment prefix and the model-name prefix), the SDK's client and base error classes, an
    ``example`` model name and the ``default_base_url``; they build the request and parse the
    reply, and send it through :meth:`_send`, which turns SDK errors into ``ModelError``.

    A provider's error may echo the API key (or credentials in the base URL): the ``ModelError``
    carries the SDK error's text with them masked, and does not chain the SDK error itself.
    """

    provider: ClassVar[str]
    client_class: ClassVar[str]
    error_class: ClassVar[str]
    example: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(self, *, model: str, api_key: str, base_url: str, timeout: float, max_retries: int) -> None:
        if not model:
            raise ValueError(f"{type(self).__name__} needs a model name, e.g. model={self.example!r}")
        sdk = import_sdk(self.provider, self.provider)
        super().__init__(name=f"{self.provider}:{model}")
        self.model = model
        self.base_url = base_url
        self._secrets = (api_key,)
        self._sdk_error: type[Exception] = getattr(sdk, self.error_class)
        self._client: Any = getattr(sdk, self.client_class)(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    @classmethod
    def from_env(cls, model: str, *, environ: Mapping[str, str] | None = None, **kwargs: Any) -> Self:
        """Build from ``<PROVIDER>_API_KEY`` / ``<PROVIDER>_BASE_URL``; keyword arguments win.

        Raises ``ModelError`` when no API key is given either way.
        """
        return cls(model=model, **options_from_env(cls.provider, model, environ, kwargs, cls.default_base_url))

    @property
    def where(self) -> str:
        """The server as messages name it (credentials in the URL masked)."""
        return redact_url(self.base_url)

    def _failed(self, what: str, exc: Exception) -> ModelError:
        """The ``ModelError`` for an SDK error, its text with the API key masked."""
        return ModelError(redact_secrets(f"{self.name} at {self.where} {what}: {exc}", *self._secrets))

    async def _send(self, create: Any, request: dict[str, Any]) -> Any:
        """``await create(**request)``, SDK errors raised as ``ModelError`` naming model and server."""
        try:
            return await create(**request)
        except self._sdk_error as exc:
            raise self._failed("failed", exc) from None

    async def _events(self, create: Any, request: dict[str, Any]) -> AsyncIterator[Any]:
        """The events of ``create(**request, stream=True)``, SDK errors raised as ``ModelError``
        (also those arriving mid-stream); the response is closed however iteration ends."""
        stream = await self._send(create, {**request, "stream": True})
        async with stream:
            try:
                async for event in stream:
                    yield event
            except self._sdk_error as exc:
                raise self._failed("failed while streaming", exc) from None

    def _assembled(self, call: PartialCall) -> ToolCall:
        """The tool call a stream assembled in ``call``."""
        return self._tool_call(call.id, call.name, "".join(call.fragments))

    def _tool_call(self, call_id: str, name: str, wire_arguments: str | None) -> ToolCall:
        """The tool call ``name(wire_arguments)`` the model sent; ``ModelError`` when its
        arguments are not a JSON object or it names no tool."""
        try:
            arguments = json.loads(wire_arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ModelError(f"{self.name} called {name} with arguments that are not JSON: {wire_arguments!r}") from exc
        if not isinstance(arguments, dict):
            raise ModelError(f"{self.name} called {name} with arguments that are not a JSON object: {wire_arguments!r}")
        if not name:
            raise ModelError(f"{self.name} sent tool call {call_id!r} without a tool name")
        return ToolCall(id=call_id, name=name, arguments=arguments)

    async def _aclose(self) -> None:
        await self._client.close()
