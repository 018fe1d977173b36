"""open_model turns spec strings into models."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.models import Message, Model, ModelError, ScriptedModel, UnknownModel, open_model
from harness.models.anthropic import AnthropicModel
from harness.models.openai import OpenAIModel
from harness.models.registry import known_model_providers, register_model


async def test_openai_spec_reads_the_environment_and_kwargs_win() -> None:
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    async with open_model("openai:gpt-4o-mini", environ=env) as model:
        assert isinstance(model, OpenAIModel)
        assert (model.name, model.base_url) == ("openai:gpt-4o-mini", "http://127.0.0.1:1/v1")
    async with open_model("openai:m", api_key="k", base_url="http://h/v1", environ={}) as model:
        assert isinstance(model, OpenAIModel) and model.base_url == "http://h/v1"


async def test_anthropic_spec() -> None:
    async with open_model("anthropic:claude-x", environ={"ANTHROPIC_API_KEY": "k"}) as model:
        assert isinstance(model, AnthropicModel)
        assert model.name == "anthropic:claude-x"


def test_missing_key_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        open_model("openai:gpt-4o-mini", environ={})


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(UnknownModel, match="provider one of anthropic, demo, openai"):
        open_model("mistral:large")
    with pytest.raises(ConfigError):
        open_model("")


def test_demo_takes_no_model_name() -> None:
    with pytest.raises(UnknownModel, match="takes no model name"):
        open_model("demo:large")


async def test_providers_from_installed_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "acme_models.py").write_text(
        "from harness.models import ScriptedModel\n"
        "def build(model, **kwargs):\n"
        "    return ScriptedModel([f'{model} says {kwargs[\"greeting\"]}'], name='acme:' + model)\n"
    )
    dist = tmp_path / "acme_models-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-models\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[harness.models]\nacme = acme_models:build\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    async with open_model("acme:tiny", greeting="hi") as model:
        reply = await model.complete([Message.user("hello")])
    assert model.name == "acme:tiny"
    assert reply.message.content == "tiny says hi"


def test_a_registered_provider_is_opened_by_its_spec() -> None:
    provider = f"acme-{uuid.uuid4().hex[:8]}"

    def build(model: str, **kwargs: Any) -> Model:
        return ScriptedModel([], name=f"{provider}:{model}:{kwargs['size']}")

    register_model(provider, build)
    assert provider in known_model_providers()
    assert open_model(f"{provider}:tiny", size=3).name == f"{provider}:tiny:3"


def test_a_provider_name_is_taken_only_with_replace() -> None:
    provider = f"acme-{uuid.uuid4().hex[:8]}"
    register_model(provider, lambda model, **kwargs: ScriptedModel([], name="first"))
    for taken in (provider, "openai"):
        with pytest.raises(ConfigError, match="already registered"):
            register_model(taken, lambda model, **kwargs: ScriptedModel([], name="second"))
    register_model(provider, lambda model, **kwargs: ScriptedModel([], name="second"), replace=True)
    assert open_model(provider).name == "second"
