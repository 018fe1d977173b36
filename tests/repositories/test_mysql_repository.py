"""MySQLRepository against the real MariaDB server (unique table names, dropped afterwards)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiomysql
import pytest

from repositories import (
    FileContents,
    InvalidBundle,
    InvalidRepositoryConfig,
    MySQLRepository,
    RepositoryReadOnly,
    RepositoryUnavailable,
    SkillBundleContents,
    open_repository,
    read_skill_folder,
)
from repositories.mysql import parse_mysql_dsn
from tests.support.mysql import drop_tables
from tests.support.repositories import TcpProxy, write_skill
from tests.support.skills import make_bundle


class CountingCursor(aiomysql.Cursor):  # type: ignore[misc]
    """A real cursor that counts the statements it sends."""

    executed: list[str] = []

    async def execute(self, query: str, args: Any = None) -> Any:
        CountingCursor.executed.append(query)
        return await super().execute(query, args)


def bundle(folder: str, text: str = "hello", *files: FileContents) -> SkillBundleContents:
    return replace(make_bundle(folder, description=text, body="Body\n"), files=files)


@pytest.fixture
async def table(mysql_dsn: str) -> AsyncIterator[str]:
    name = f"skills_{secrets.token_hex(4)}"
    yield name
    await drop_tables(mysql_dsn, name)


@pytest.fixture
async def repo(mysql_dsn: str, table: str) -> AsyncIterator[MySQLRepository]:
    async with MySQLRepository(mysql_dsn, table=table, writable=True, create_if_missing=True) as repo:
        yield repo


async def test_create_publish_and_read(repo: MySQLRepository, tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "pdf-tools")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.sh").write_bytes(b"#!/bin/sh\necho ok\n")
    (folder / "scripts" / "run.sh").chmod(0o755)
    (folder / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (folder / ".env").write_text("SECRET=1")
    (folder / ".gitignore").write_text(".env\n")  # what keeps a secret out of a published skill
    contents, problems = await read_skill_folder(folder)
    assert problems == ()
    assert (await repo.snapshot()).bundles == ()
    await repo.save(contents)
    snap = await repo.snapshot()
    (got,) = snap.bundles
    assert got.folder == "pdf-tools"
    assert got.skill_md == (folder / "SKILL.md").read_bytes()
    assert [(f.path, f.size, f.mode) for f in got.files] == [
        (".gitignore", 5, 0o644),
        ("logo.bin", 1024, 0o644),
        ("scripts/run.sh", 18, 0o755),
    ]
    assert got.location.endswith(f"/{repo.table}#pdf-tools")
    data = await repo.read_files("pdf-tools", ["logo.bin", "scripts/run.sh", "SKILL.md"])
    assert data["logo.bin"] == bytes(range(256)) * 4
    assert data["scripts/run.sh"] == b"#!/bin/sh\necho ok\n"
    assert repo.source == f"mysql-test-{repo.table}"


async def test_two_edits_within_one_second_are_both_seen(repo: MySQLRepository) -> None:
    await repo.save(bundle("alpha", "first"))
    first = await repo.snapshot()
    await repo.save(bundle("alpha", "second"))
    second = await repo.snapshot()
    await repo.save(bundle("alpha", "third"))
    third = await repo.snapshot()
    assert b"first" in first.bundles[0].skill_md
    assert b"second" in second.bundles[0].skill_md
    assert b"third" in third.bundles[0].skill_md
    assert len({first.version, second.version, third.version}) == 3


async def test_edit_by_another_writer_is_detected(mysql_dsn: str, table: str, repo: MySQLRepository) -> None:
    await repo.save(bundle("alpha"))
    before = await repo.snapshot()
    async with MySQLRepository(mysql_dsn, table=table, writable=True) as other:
        await other.save(bundle("beta"))
        await other.delete("alpha")
    after = await repo.snapshot()
    assert [b.folder for b in before.bundles] == ["alpha"]
    assert [b.folder for b in after.bundles] == ["beta"]


async def test_unchanged_read_costs_one_query(mysql_dsn: str, table: str, repo: MySQLRepository) -> None:
    await repo.save(bundle("alpha"))
    pool = await aiomysql.create_pool(
        autocommit=True, cursorclass=CountingCursor, minsize=0, maxsize=1, **parse_mysql_dsn(mysql_dsn)
    )
    try:
        async with MySQLRepository(pool=pool, table=table) as shared:
            first = await shared.snapshot()
            CountingCursor.executed.clear()
            second = await shared.snapshot()
            assert second is first
            assert len(CountingCursor.executed) == 1
            assert CountingCursor.executed[0].startswith("SELECT epoch, generation")
        assert not pool.closed  # a pool given by the caller stays open
    finally:
        pool.close()
        await pool.wait_closed()


async def test_read_only_repository_refuses_writes(mysql_dsn: str, table: str, repo: MySQLRepository) -> None:
    async with MySQLRepository(mysql_dsn, table=table) as read_only:
        with pytest.raises(RepositoryReadOnly, match="read-only"):
            await read_only.save(bundle("alpha"))
        with pytest.raises(RepositoryReadOnly):
            await read_only.delete("alpha")
    assert (await repo.snapshot()).bundles == ()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"table": "skills; DROP TABLE x"},
        {"table": "a" * 49},
        {"table": "bad`name"},
        {"database": "db-name"},
    ],
)
def test_bad_identifiers_are_refused(mysql_dsn: str, kwargs: dict[str, str]) -> None:
    with pytest.raises(InvalidRepositoryConfig):
        MySQLRepository(mysql_dsn, **kwargs)


async def test_folder_names_are_parameters_not_sql(repo: MySQLRepository) -> None:
    await repo.save(bundle("it's-fine"))
    assert [b.folder for b in (await repo.snapshot()).bundles] == ["it's-fine"]
    assert await repo.read_file("it's-fine", "SKILL.md")


async def _tables_like(dsn: str, database: str, table: str) -> list[str]:
    connection = await aiomysql.connect(autocommit=True, **{**parse_mysql_dsn(dsn), "db": None})
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME LIKE %s",
                (database, f"{table}%"),
            )
            return sorted(row[0] for row in await cursor.fetchall())
    finally:
        connection.close()


@pytest.mark.parametrize("via", ["python", "url"])
async def test_by_default_missing_tables_are_not_created_and_the_error_says_how(
    mysql_dsn: str, table: str, via: str
) -> None:
    repo = MySQLRepository(mysql_dsn, table=table) if via == "python" else open_repository(f"{mysql_dsn}?table={table}")
    async with repo:
        with pytest.raises(RepositoryUnavailable, match="create_if_missing=True") as raised:
            await repo.snapshot()
    assert f"{table}_generation" in str(raised.value)
    assert await _tables_like(mysql_dsn, parse_mysql_dsn(mysql_dsn)["db"], table) == []


async def test_create_if_missing_creates_the_tables_on_first_use(mysql_dsn: str, table: str) -> None:
    async with open_repository(f"{mysql_dsn}?table={table}&create_if_missing=true") as repo:
        assert (await repo.snapshot()).bundles == ()
    assert await _tables_like(mysql_dsn, parse_mysql_dsn(mysql_dsn)["db"], table) == [
        table,
        f"{table}_files",
        f"{table}_generation",
    ]


async def test_create_if_missing_creates_a_missing_database_and_without_it_says_how(mysql_dsn: str) -> None:
    database = f"harness_test_{secrets.token_hex(4)}"
    dsn = mysql_dsn.rsplit("/", 1)[0] + f"/{database}"
    try:
        async with MySQLRepository(dsn, table="skills") as repo:
            with pytest.raises(RepositoryUnavailable, match=f"Unknown database '{database}'.*create_if_missing=True"):
                await repo.snapshot()
        async with MySQLRepository(dsn, table="skills", writable=True, create_if_missing=True) as repo:
            await repo.save(bundle("made-here"))
            assert [b.folder for b in (await repo.snapshot()).bundles] == ["made-here"]
        assert await _tables_like(mysql_dsn, database, "skills") == ["skills", "skills_files", "skills_generation"]
    finally:
        connection = await aiomysql.connect(autocommit=True, **{**parse_mysql_dsn(mysql_dsn), "db": None})
        try:
            async with connection.cursor() as cursor:
                await cursor.execute(f"DROP DATABASE IF EXISTS `{database}`")
        finally:
            connection.close()


async def test_unreachable_server_serves_the_last_good_snapshot(
    mysql_dsn: str, table: str, repo: MySQLRepository
) -> None:
    await repo.save(bundle("alpha"))
    args = parse_mysql_dsn(mysql_dsn)
    proxy = TcpProxy(args["host"], args["port"])
    await proxy.start()
    try:
        await _serve_through(proxy, f"mysql://{args['user']}@127.0.0.1:{proxy.port}/{args['db']}", table, repo)
    finally:
        await proxy.stop()


async def _serve_through(proxy: TcpProxy, dsn: str, table: str, repo: MySQLRepository) -> None:
    async with MySQLRepository(dsn, table=table, connect_timeout=2) as through_proxy:
        good = await through_proxy.snapshot()
        await proxy.stop()
        served = await through_proxy.snapshot()
        assert [b.folder for b in served.bundles] == ["alpha"]
        assert served.version == good.version
        assert isinstance(served.error, RepositoryUnavailable)
        with pytest.raises(RepositoryUnavailable):
            await through_proxy.read_file("alpha", "SKILL.md")
        await proxy.start_on(proxy.port)
        await repo.save(bundle("beta"))
        recovered = await through_proxy.snapshot()
        assert recovered.error is None
        assert [b.folder for b in recovered.bundles] == ["alpha", "beta"]


@pytest.mark.parametrize("folder", ["deploy ", " deploy", "deploy\t", "deploy\x85", "deploy\u200b"])
async def test_saving_a_name_a_store_could_fold_into_another_is_refused_and_the_original_survives(
    repo: MySQLRepository, folder: str
) -> None:
    await repo.save(bundle("deploy", "the real one"))
    with pytest.raises(InvalidBundle, match="skill folder name"):
        await repo.save(bundle(folder, "impostor"))
    (got,) = (await repo.snapshot()).bundles
    assert got.folder == "deploy"
    assert b"the real one" in got.skill_md


async def _sql(mysql_dsn: str, *statements: str) -> list[Any]:
    conn = await aiomysql.connect(autocommit=True, **parse_mysql_dsn(mysql_dsn))
    rows: list[Any] = []
    try:
        async with conn.cursor() as cur:
            for statement in statements:
                await cur.execute(statement)
                rows = list(await cur.fetchall())
    finally:
        conn.close()
    return rows


async def test_folder_names_are_compared_byte_for_byte_not_with_pad_space(
    mysql_dsn: str, table: str, repo: MySQLRepository
) -> None:
    await repo.save(bundle("deploy"))
    # Another writer that skips our checks: the column itself must keep the two apart.
    await _sql(
        mysql_dsn,
        f"INSERT INTO `{table}` (folder, skill_md_name, skill_md, content_hash) VALUES ('deploy ', 'SKILL.md', 'x', 'h')",
    )
    rows = await _sql(mysql_dsn, f"SELECT folder FROM `{table}` ORDER BY folder")
    assert [bytes(r[0]) for r in rows] == [b"deploy", b"deploy "]


async def test_tables_with_the_old_pad_space_schema_are_migrated_on_start(mysql_dsn: str, table: str) -> None:
    varchar = "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"
    await _sql(
        mysql_dsn,
        f"CREATE TABLE `{table}` (folder {varchar}, skill_md_name VARCHAR(16) NOT NULL, skill_md LONGBLOB NOT NULL,"
        " content_hash CHAR(64) NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (folder))",
        f"CREATE TABLE `{table}_files` (folder {varchar}, path VARBINARY(1024) NOT NULL, mode SMALLINT UNSIGNED NOT NULL,"
        " size BIGINT UNSIGNED NOT NULL, content LONGBLOB NOT NULL, PRIMARY KEY (folder, path))",
        f"INSERT INTO `{table}` (folder, skill_md_name, skill_md, content_hash)"
        " VALUES ('legacy', 'SKILL.md', '---\nname: legacy\ndescription: d\n---\n', 'h')",
    )
    async with MySQLRepository(mysql_dsn, table=table, writable=True, create_if_missing=True) as repo:
        await repo.save(bundle("deploy", "kept", FileContents(path="run.sh", data=b"echo")))
        got, legacy = (await repo.snapshot()).bundles
        assert got.folder == "deploy" and [f.path for f in got.files] == ["run.sh"]
        assert legacy.folder == "legacy" and await repo.read_file("legacy", "SKILL.md")
    types = await _sql(
        mysql_dsn,
        "SELECT TABLE_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()"
        f" AND TABLE_NAME IN ('{table}', '{table}_files') AND COLUMN_NAME = 'folder' ORDER BY TABLE_NAME",
    )
    assert [(name, kind.lower()) for name, kind in types] == [(table, "varbinary"), (f"{table}_files", "varbinary")]
