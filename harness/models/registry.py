"""``open_model``: build a model from a spec string such as ``"openai:gpt-4o-mini"``.

Strings are sugar for the CLI and config files; code can build the model classes directly.
Providers are added with :func:`register_model` or, from a third-party package, through the
entry-point group ``harness.models``: the entry point's name is the provider and its object a
callable ``(model: str, **kwargs) -> Model``. A built-in provider's module is imported the first
time the provider is opened (see :class:`filesystems.Registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from filesystems import Registry
from harness.errors import ConfigError
from harness.models.base import Model
from harness.models.errors import ModelUnavailable, UnknownModel

__all__ = ["ENTRY_POINT_GROUP", "ModelFactory", "known_model_providers", "open_model", "register_model"]

ENTRY_POINT_GROUP = "harness.models"

ModelFactory = Callable[..., Model]
"""Builds a model from its name (the spec after ``<provider>:``) and keyword arguments."""


def _demo(model: str, **kwargs: Any) -> Model:
    if model:
        raise UnknownModel(f"the demo model takes no model name, got 'demo:{model}'")
    from harness.models.demo import DemoModel  # loaded when the demo is opened

    return DemoModel(**kwargs)


def _unknown(provider: str, known: Sequence[str]) -> UnknownModel:
    return UnknownModel(
        f"unknown model provider {provider!r}: expected '<provider>:<model>' with provider one of "
        f"{', '.join(known)} (e.g. 'openai:gpt-4o-mini')"
    )


_MODELS: Registry[ModelFactory] = Registry(
    "model provider",
    ENTRY_POINT_GROUP,
    {
        "openai": "harness.models.openai:OpenAIModel.from_env [openai]",
        "anthropic": "harness.models.anthropic:AnthropicModel.from_env [anthropic]",
        "demo": _demo,
    },
    error=ConfigError,
    unavailable=ModelUnavailable,
    unknown=_unknown,
)


def register_model(provider: str, factory: ModelFactory, *, replace: bool = False) -> None:
    """Make :func:`open_model` build ``"<provider>:<model>"`` with ``factory(model, **kwargs)``.

    Raises ``ConfigError`` for a malformed provider name, or one already taken unless ``replace``.
    """
    _MODELS.register(provider, factory, replace=replace)


def known_model_providers() -> list[str]:
    """Every provider :func:`open_model` understands: built in, registered and advertised."""
    return _MODELS.known()


def open_model(spec: str, **kwargs: Any) -> Model:
    """The model a spec names: ``"<provider>:<model>"`` or a bare provider (``"demo"``).

    Built in: ``openai:<model>`` (``OpenAIModel.from_env``: ``OPENAI_API_KEY`` and
    ``OPENAI_BASE_URL`` are read, keyword arguments win), ``anthropic:<model>``
    (``AnthropicModel.from_env``, ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``) and ``demo``
    (the offline ``DemoModel``). ``kwargs`` go to the provider's constructor.

    Raises ``UnknownModel`` for a provider nobody registered (the message lists the known ones),
    ``ModelUnavailable`` when the provider's SDK is missing, ``ModelError`` for a missing key.
    """
    provider, _, model = spec.partition(":")
    return _MODELS.factory(provider.strip())(model.strip(), **kwargs)
