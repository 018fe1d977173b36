"""Throw-away tables on the shared MariaDB server: unique names and dropping them afterwards."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

import aiomysql

from filesystems.stores.mysql import parse_mysql_dsn

__all__ = ["MARKET_TABLES", "STORE_TABLES", "drop_tables", "unique_table"]

MARKET_TABLES = ("", "_files", "_generation")
"""The table suffixes a ``MySQLRepository`` creates."""

STORE_TABLES = ("", "_meta")
"""The table suffixes a ``MySQLKeyValueStore`` creates."""


def unique_table(prefix: str) -> str:
    """A table name no other test (or test process) uses."""
    return f"{prefix}_{secrets.token_hex(5)}"


async def drop_tables(dsn: str, table: str, suffixes: Iterable[str] = MARKET_TABLES) -> None:
    """Drop ``table`` with each of ``suffixes`` appended, if they exist."""
    connection = await aiomysql.connect(autocommit=True, **parse_mysql_dsn(dsn))
    try:
        async with connection.cursor() as cursor:
            for suffix in suffixes:
                await cursor.execute(f"DROP TABLE IF EXISTS `{table}{suffix}`")
    finally:
        connection.close()
