"""What keeping a conversation costs a turn: reading it at the start, appending the turn at the end.

    .venv/bin/python bench/sessions.py [--turns 200] [--mysql mysql://root@127.0.0.1:3306/test]

For each store — memory (the baseline), a SQLite file in a temporary folder and, with
``--mysql``, throw-away tables on that server — one conversation of a turn of four messages
(the user's, a tool call, its result, the answer) after another: ``get`` then ``append``, as the
agent does, ``--turns`` times over a history bounded at 200 messages. Printed per store: the
median and 95th percentile of ``get`` + ``append`` per turn, and its ratio to memory's median;
then the same for turns sent with an idempotency key (``claim`` first, the key answered in the
transaction of the ``append``).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
import time
import urllib.parse
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.agent.sessions import SessionStore, open_session_store  # noqa: E402
from harness.agent.sessions.base import Completion  # noqa: E402
from harness.models import Message, ToolCall  # noqa: E402


def _turn(n: int) -> list[Message]:
    call = ToolCall(id=f"c{n}", name="load_skill_through_path", arguments={"skillId": "weather"})
    return [
        Message.user(f"question {n}: " + "words " * 20),
        Message.assistant("", [call]),
        Message.tool_result(call, "---\nname: weather\n---\n" + "instructions " * 100),
        Message.assistant("answer " * 40),
    ]


async def _measure(store: SessionStore, turns: int, keyed: bool) -> list[float]:
    timings = []
    async with store:
        for n in range(turns):
            started = time.perf_counter()
            done = None
            if keyed:
                await store.claim("alice", "bench", f"key-{n}", f"digest-{n}", lease=600)
                done = Completion(key=f"key-{n}", digest=f"digest-{n}", outcome='{"reply": "sunny"}')
            session = await store.get("alice", "bench")
            await store.append("alice", "bench", _turn(n), loaded=session.loaded | {"weather_workspace"}, done=done)
            timings.append(time.perf_counter() - started)
    return timings


async def _drop(dsn: str, table: str) -> None:
    import aiomysql

    from filesystems.stores.mysql import parse_mysql_dsn

    connection = await aiomysql.connect(autocommit=True, **parse_mysql_dsn(dsn))
    try:
        async with connection.cursor() as cursor:
            for suffix in ("", "_messages", "_paused", "_requests"):
                await cursor.execute(f"DROP TABLE IF EXISTS `{table}{suffix}`")
    finally:
        connection.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per store")
    parser.add_argument("--mysql", metavar="DSN", help="also measure MySQL tables on this server")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="Table .* already exists")  # the server's note on a second open
    with tempfile.TemporaryDirectory() as folder:
        urls = {"memory": "memory:", "sqlite": f"sqlite:///{folder}/sessions.db"}
        table = f"bench_sessions_{secrets.token_hex(4)}"
        if args.mysql:
            parts = urllib.parse.urlsplit(args.mysql)
            urls["mysql"] = urllib.parse.urlunsplit(parts._replace(query=f"table={table}"))
        baseline = None
        print(f"get + append of one 4-message turn, {args.turns} turns, history bounded at 200 messages")
        try:
            for keyed in (False, True):
                if keyed:
                    print("the same, each turn with an idempotency key (claim, then answered with the append)")
                for name, url in urls.items():
                    timings = await _measure(open_session_store(url), args.turns, keyed)
                    median = statistics.median(timings)
                    p95 = statistics.quantiles(timings, n=20)[-1]
                    baseline = baseline or median
                    print(
                        f"  {name:7} median {median * 1e3:7.3f} ms  p95 {p95 * 1e3:7.3f} ms  x{median / baseline:8.1f}"
                    )
        finally:
            if args.mysql:
                await _drop(args.mysql, table)


if __name__ == "__main__":
    asyncio.run(main())
