"""``open_model``: build a model from a spec string such as ``"openai:gpt-4o-mini"``.

Strings are sugar for the CLI and config files; code can build the model classes directly.
Third-party packages add providers through the entry-point group ``harness.models``: the entry
point's name is the provider and its object a callable ``(model: str, **kwargs) -> Model``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from harness.models.anthropic import AnthropicModel
from harness.models.base import Model
from harness.models.demo import DemoModel
from harness.models.errors import UnknownModel
from harness.models.openai import OpenAIModel

__all__ = ["open_model"]

ENTRY_POINT_GROUP = "harness.models"

ModelFactory = Callable[..., Model]


def _demo(model: str, **kwargs: Any) -> Model:
    if model:
        raise UnknownModel(f"the demo model takes no model name, got 'demo:{model}'")
    return DemoModel(**kwargs)


_BUILTIN: dict[str, ModelFactory] = {
    "openai": OpenAIModel.from_env,
    "anthropic": AnthropicModel.from_env,
    "demo": _demo,
}


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
    provider = provider.strip().lower()
    factory = _BUILTIN.get(provider) or _plugin(provider)
    if factory is None:
        known = sorted(set(_BUILTIN) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})
        raise UnknownModel(
            f"unknown model {spec!r}: expected '<provider>:<model>' with provider one of "
            f"{', '.join(known)} (e.g. 'openai:gpt-4o-mini')"
        )
    return factory(model.strip(), **kwargs)


def _plugin(provider: str) -> ModelFactory | None:
    for entry_point in entry_points(group=ENTRY_POINT_GROUP, name=provider):
        factory: ModelFactory = entry_point.load()
        return factory
    return None
