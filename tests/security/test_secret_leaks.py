"""Attacks on secrecy: a DSN password and a git token, used in every bad way an operator or a
failing server can produce, must never show in an exception (traceback included), ``str()``,
a location, a slug, a diagnostic, a log line or CLI output."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from filesystems import LocalFilesystem, MySQLKeyValueStore, redact_secrets, redact_url
from harness.agent import Harness, PipelineOptions
from harness.agent.agui import agui_sse
from harness.config import HarnessConfig, load_config
from harness.context import RuntimeContext
from harness.errors import ConfigError
from harness.models import Message, Model, ModelError
from harness.models.anthropic import AnthropicModel
from harness.models.openai import OpenAIModel
from harness.pipeline import SkillPipeline
from repositories import (
    GitRepository,
    MySQLRepository,
    RepositoryError,
    RepositoryUnavailable,
    SkillRepository,
    Snapshot,
    open_repository,
)
from repositories.mcp import McpRepository
from tests.support.cli import run_harness
from tests.support.git import GitRemote
from tests.support.model_wire import serving
from tests.support.skills import make_skill

PASSWORD = "s3cr3t-pw"
TOKEN = "tok3n"
ALICE = RuntimeContext(user_id="alice")
# Port 9 (discard) has nothing listening on the test machine: connections are refused.
UNREACHABLE_DSN = f"mysql://harness:{PASSWORD}@127.0.0.1:9/skills_db"
UNREACHABLE_GIT = f"http://acme:{TOKEN}@127.0.0.1:9/acme/skills.git"


def _everything(exc: BaseException) -> str:
    """The exception as a user could ever see it: message, repr and the full traceback."""
    return "\n".join([str(exc), repr(exc), "".join(traceback.format_exception(exc))])


def _assert_clean(text: str) -> None:
    assert PASSWORD not in text and TOKEN not in text, text


@contextmanager
def _raises_without_secrets(error: type[BaseException]) -> Iterator[None]:
    """Expect ``error`` from the block, and no secret anywhere a user could see it."""
    with pytest.raises(error) as caught:
        yield
    _assert_clean(_everything(caught.value))


# -- the helper --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("mysql://harness:s3cr3t-pw@db:3306/x", "mysql://harness:***@db:3306/x"),
        ("https://user:tok3n@github.com/acme/skills.git", "https://***@github.com/acme/skills.git"),
        ("https://tok3n@github.com/acme/skills.git", "https://***@github.com/acme/skills.git"),
        ("https://h.example/x?password=s3cr3t-pw&table=t", "https://h.example/x?password=***&table=t"),
        ("https://h.example/x?access_token=tok3n", "https://h.example/x?access_token=***"),
        ("mysql://harness:s3cr3t-pw/db", "mysql://harness:***/db"),
        ("git+ssh://git@github.com/acme/skills.git", "git+ssh://git@github.com/acme/skills.git"),
    ],
)
def test_redact_url_masks_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_secrets_masks_urls_inside_text() -> None:
    text = f"Cmd('git') failed: git ls-remote -- {UNREACHABLE_GIT} HEAD; token={TOKEN}"
    _assert_clean(redact_secrets(text))


# -- MySQL DSNs --------------------------------------------------------------------------------

BAD_STORE_DSNS = {
    "bad port": f"mysql://harness:{PASSWORD}@db:notaport/x",
    "no host": f"mysql://harness:{PASSWORD}@/x",
    "no database": f"mysql://harness:{PASSWORD}@db:3306",
    "forgotten @host": f"mysql://harness:{PASSWORD}/x",
    "bad table option": f"mysql://harness:{PASSWORD}@db/x?table=no-such-table!",
}


@pytest.mark.parametrize("name", sorted(BAD_STORE_DSNS))
def test_bad_store_dsn_errors_hide_the_password(name: str) -> None:
    with _raises_without_secrets(ValueError):
        MySQLKeyValueStore(BAD_STORE_DSNS[name])


@pytest.mark.parametrize("name", sorted(BAD_STORE_DSNS))
def test_bad_store_dsn_in_config_is_a_config_error_without_the_password(name: str) -> None:
    with _raises_without_secrets(ConfigError):
        HarnessConfig(filesystem="remote", store=BAD_STORE_DSNS[name]).open_filesystem()


BAD_REPOSITORY_URLS = {
    "bad option": f"mysql://harness:{PASSWORD}@db/x?table=skills&bogus=1",
    "bad flag value": f"mysql://harness:{PASSWORD}@db/x?writable=maybe",
    "bad port": f"mysql://harness:{PASSWORD}@db:notaport/x",
    "no host": f"mysql://harness:{PASSWORD}@/x",
}


@pytest.mark.parametrize("name", sorted(BAD_REPOSITORY_URLS))
def test_bad_mysql_repository_urls_hide_the_password(name: str) -> None:
    with _raises_without_secrets(RepositoryError):
        open_repository(BAD_REPOSITORY_URLS[name])


async def test_unreachable_mysql_store_hides_the_password() -> None:
    async with MySQLKeyValueStore(UNREACHABLE_DSN) as store:
        _assert_clean(repr(store))
        with pytest.raises(Exception) as caught:
            await store.get("k")
    _assert_clean(_everything(caught.value))


async def test_unreachable_mysql_market_hides_the_password(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    repo = MySQLRepository(UNREACHABLE_DSN, connect_timeout=2)
    _assert_clean(str(repo) + repo.source)
    with _raises_without_secrets(RepositoryError):
        await repo.snapshot()
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    assert any(d.code == "market-unavailable" for d in plan.diagnostics)
    _assert_clean(json.dumps([d.as_dict() for d in plan.diagnostics]) + caplog.text)


async def test_wrong_password_against_the_real_server_is_not_echoed(mysql_dsn: str) -> None:
    host = mysql_dsn.split("@", 1)[1]
    repo = MySQLRepository(f"mysql://nobody:{PASSWORD}@{host}", connect_timeout=5)
    with pytest.raises(RepositoryError) as caught:
        await repo.snapshot()
    await repo.aclose()
    _assert_clean(_everything(caught.value))


# -- git URLs ----------------------------------------------------------------------------------


def test_git_slug_and_repr_never_contain_the_token(tmp_path: Path) -> None:
    for url in (
        UNREACHABLE_GIT,
        f"https://{TOKEN}@github.com/acme/skills.git",
        f"acme:{TOKEN}@host.example:acme/skills.git",
    ):
        repo = GitRepository(url, cache_dir=tmp_path)
        _assert_clean(f"{repo!r} {repo.source} {repo.clone_path} {repo.shown_url}")


async def test_git_market_with_credentials_in_its_url_keeps_them_out_of_locations(tmp_path: Path) -> None:
    remote = GitRemote(tmp_path / "remote")
    make_skill(remote.work, "notes", description="Use for notes.", body="Body\n")
    remote.commit()
    url = f"file://acme:{TOKEN}@localhost{remote.bare}"
    repo = GitRepository(url, cache_dir=tmp_path / "cache")
    snapshot = await repo.snapshot()
    assert [b.folder for b in snapshot.bundles] == ["notes"]
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    [resolved] = plan.skills.values()
    assert resolved.entry.skill.location.startswith("file://***@localhost")
    _assert_clean(f"{resolved.entry.skill} {plan.catalog} {plan.diagnostics}")
    await repo.aclose()


async def test_unreachable_git_market_hides_the_token(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    repo = GitRepository(UNREACHABLE_GIT, cache_dir=tmp_path / "cache", timeout=20)
    with _raises_without_secrets(RepositoryError):
        await repo.snapshot()
    async with (
        LocalFilesystem(tmp_path / "ws", shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[repo], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    [problem] = [d for d in plan.diagnostics if d.code == "market-unavailable"]
    assert "127.0.0.1:9" in problem.message
    _assert_clean(json.dumps([d.as_dict() for d in plan.diagnostics]) + caplog.text)
    assert "market" in caplog.text
    await repo.aclose()


# -- CLI ---------------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_harness(*args)


def test_cli_skills_list_json_hides_market_credentials(tmp_path: Path) -> None:
    result = _cli(
        "skills",
        "list",
        "--json",
        "--workspace",
        str(tmp_path / "ws"),
        "--repo",
        f"git+{UNREACHABLE_GIT}",
        "--repo",
        f"{UNREACHABLE_DSN}?connect_timeout=2",
    )
    assert result.returncode == 1, result.stderr  # the markets are down: error diagnostics
    data = json.loads(result.stdout)
    assert "127.0.0.1:9" in json.dumps(data)
    _assert_clean(result.stdout + result.stderr)


@pytest.mark.parametrize("name", sorted(BAD_STORE_DSNS))
def test_cli_config_error_hides_the_store_password(tmp_path: Path, name: str) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(f"filesystem: {{mode: remote, store: '{BAD_STORE_DSNS[name]}'}}\n")
    result = _cli("skills", "list", "--json", "--config", str(config))
    assert result.returncode == 2 and "configuration error" in result.stderr
    _assert_clean(result.stdout + result.stderr)


def test_cli_bad_repository_option_hides_the_password(tmp_path: Path) -> None:
    result = _cli("skills", "list", "--json", "--workspace", str(tmp_path), "--repo", BAD_REPOSITORY_URLS["bad option"])
    assert result.returncode != 0 and "bogus" in result.stderr
    _assert_clean(result.stdout + result.stderr)


def test_config_file_with_a_bad_store_raises_without_the_password(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(f"filesystem: {{mode: remote, store: '{BAD_STORE_DSNS['no database']}'}}\n")
    with _raises_without_secrets(ConfigError):
        load_config(config).open_filesystem()


def test_config_repr_hides_store_and_market_credentials(tmp_path: Path) -> None:
    config = tmp_path / "harness.yaml"
    config.write_text(
        f"filesystem: {{mode: remote, store: '{UNREACHABLE_DSN}'}}\nrepositories: ['git+{UNREACHABLE_GIT}']\n"
    )
    loaded = load_config(config)
    assert loaded.store == UNREACHABLE_DSN
    _assert_clean(repr(loaded))


class _LeakyMarket(SkillRepository):
    """A third-party market whose errors quote its credentialed URL."""

    def __init__(self) -> None:
        super().__init__(source="leaky")

    async def _version(self) -> str:
        raise RepositoryUnavailable(f"cannot reach {UNREACHABLE_GIT}?access_token={TOKEN}")

    async def _load(self, version: str) -> Snapshot:
        raise AssertionError("never loaded")

    async def _read_files(self, folder: str, paths: tuple[str, ...]) -> dict[str, bytes]:
        raise AssertionError("never read")


async def test_custom_market_errors_are_masked_in_diagnostics_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        LocalFilesystem(tmp_path, shell=True) as fs,
        SkillPipeline(filesystem=fs, repositories=[_LeakyMarket()], watch=False) as pipeline,
    ):
        plan = await pipeline.prepare(ALICE)
    [problem] = [d for d in plan.diagnostics if d.code == "market-unavailable"]
    assert "cannot reach http://***@127.0.0.1:9" in problem.message
    assert "cannot reach" in caplog.text
    _assert_clean(str(problem) + caplog.text)


API_KEY = "sk-live-API-KEY-4e7a91"
ECHOES = {
    "openai": {"error": {"message": f"Incorrect API key provided: {API_KEY}.", "type": "invalid_request_error"}},
    "anthropic": {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {API_KEY}"},
    },
}


def _model(provider: str, url: str) -> Model:
    if provider == "openai":
        return OpenAIModel(model="gpt-test", api_key=API_KEY, base_url=f"{url}/v1", max_retries=0, timeout=10)
    return AnthropicModel(model="claude-test", api_key=API_KEY, base_url=url, max_retries=0, timeout=10)


@pytest.mark.parametrize("provider", sorted(ECHOES))
async def test_a_provider_error_echoing_the_api_key_never_shows_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, provider: str
) -> None:
    caplog.set_level(logging.DEBUG)
    with serving() as wire:
        wire.reply(ECHOES[provider], status=401)
        wire.reply(ECHOES[provider], status=401)
        async with _model(provider, wire.url) as model:
            with pytest.raises(ModelError) as caught:
                await model.complete([Message.user("hi")])
            async with Harness(model=model, workspace=tmp_path, pipeline=PipelineOptions(watch=False)) as agent:
                frames = [frame async for frame in agui_sse(agent.stream("hi", context=ALICE))]
    assert wire.requests and all(API_KEY in str(r.headers) for r in wire.requests)  # the key was sent
    run_error = json.loads(frames[-1].removeprefix("data: "))
    assert run_error["type"] == "RUN_ERROR" and "***" in run_error["message"]
    seen = _everything(caught.value) + "".join(frames) + caplog.text
    assert API_KEY not in seen, seen


async def test_credentials_in_an_mcp_market_url_go_as_auth_and_reach_no_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serving() as wire:  # answers 500: the market is unavailable, after sending its request
        repo = McpRepository(url=f"{wire.url.replace('://', f'://reader:{TOKEN}@')}/mcp", timeout=10)
        with pytest.raises(RepositoryUnavailable) as caught:
            await repo.snapshot()
    _assert_clean(_everything(caught.value) + caplog.text + repo.where)
    [request, *_] = wire.requests
    assert request.headers["authorization"] == "Basic " + base64.b64encode(f"reader:{TOKEN}".encode()).decode()
    assert repo.url == f"{wire.url}/mcp"
