"""Conversation stores for tests: a URL per engine (a SQLite file, throw-away MySQL tables), and
raw SQL against a store's tables, as an operator (or an attacker with database access) would
run it."""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiomysql

from filesystems.stores.mysql import parse_mysql_dsn
from tests.support.mysql import drop_tables, unique_table

__all__ = ["SESSION_TABLES", "raw_sql", "session_url", "store_tables"]

SESSION_TABLES = ("", "_messages", "_paused", "_requests")
"""The table suffixes a ``MySQLSessionStore`` creates."""


@asynccontextmanager
async def session_url(engine: str, tmp_path: Path, mysql_dsn: str | None = None) -> AsyncIterator[str]:
    """The URL of an empty store on ``engine`` (``sqlite`` or ``mysql``), dropped afterwards."""
    if engine == "sqlite":
        yield f"sqlite:///{tmp_path / 'sessions.db'}"
        return
    assert mysql_dsn is not None
    table = unique_table("sessions")
    parts = urllib.parse.urlsplit(mysql_dsn)
    try:
        yield urllib.parse.urlunsplit(parts._replace(query=f"table={table}"))
    finally:
        await drop_tables(mysql_dsn, table, SESSION_TABLES)


def store_tables(url: str) -> dict[str, str]:
    """The names of the tables a store at ``url`` keeps, by what they hold: ``sessions``,
    ``messages``, ``paused``, ``requests``."""
    if url.startswith("sqlite:"):
        return {kind: kind for kind in ("sessions", "messages", "paused", "requests")}
    table = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["table"][-1]
    return {"sessions": table, **{kind: f"{table}_{kind}" for kind in ("messages", "paused", "requests")}}


async def raw_sql(url: str, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Run ``statement`` (``?`` placeholders; ``{sessions}``, ``{messages}``, ``{paused}``,
    ``{requests}`` name the store's tables) directly on the database of the store at ``url``; its rows. In MySQL,
    text parameters are sent as the bytes of their UTF-8, the way the store keeps them."""
    sql = statement.format(**store_tables(url))
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            return list(connection.execute(sql, tuple(params)).fetchall())
    dsn = urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(query=""))
    connection = await aiomysql.connect(autocommit=True, **parse_mysql_dsn(dsn))
    try:
        pieces = sql.split("?")
        marks = ["UNHEX(%s)" if isinstance(p, str) else "%s" for p in params]
        values = tuple(p.encode("utf-8").hex() if isinstance(p, str) else p for p in params)
        async with connection.cursor() as cursor:
            await cursor.execute(
                pieces[0] + "".join(m + rest for m, rest in zip(marks, pieces[1:], strict=True)), values
            )
            return list(await cursor.fetchall())
    finally:
        connection.close()
