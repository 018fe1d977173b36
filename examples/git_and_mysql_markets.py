"""Two skill markets side by side: a git repository and a MySQL/MariaDB table.

The script builds a local bare git repository holding a ``weather`` skill (with the ``git``
command), opens a writable ``MySQLRepository`` on tables with a random name, publishes a
``unit-convert`` skill into it with ``save()``, and runs one turn per skill with the offline
``DemoModel``. The MySQL tables are dropped at the end.

Run::

    python examples/git_and_mysql_markets.py [WORKDIR] [DSN]

The DSN comes from the second argument, else ``HARNESS_MYSQL_DSN``, else
``mysql://root@127.0.0.1:3306/test``. Without WORKDIR a temporary folder is used.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from _workdir import run_in_workdir

from filesystems.stores.mysql import parse_mysql_dsn
from harness import DemoModel, Harness, RuntimeContext
from repositories import FileContents, GitRepository, MySQLRepository, SkillBundleContents

WEATHER_MD = """---
name: weather
description: Use when the user asks about the weather forecast for a city.
---

Get the forecast:

```bash
python3 scripts/weather.py
```
"""
CONVERT_MD = """---
name: unit-convert
description: Use when the user wants to convert units such as km to miles.
---

Convert:

```bash
python3 scripts/convert.py
```
"""


def build_git_market(workdir: Path) -> Path:
    """Commit the weather skill into a fresh repository and return a bare clone of it."""
    source, bare = workdir / "market-src", workdir / "market.git"
    skill = source / "skills" / "weather"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(WEATHER_MD)
    (skill / "scripts" / "weather.py").write_text("print('Forecast from the git market: sunny, 21 C')\n")
    git = [
        "git",
        "-c",
        "user.name=example",
        "-c",
        "user.email=example@example.invalid",
        "-c",
        "init.defaultBranch=main",
    ]
    subprocess.run([*git, "init", "-q", str(source)], check=True)
    subprocess.run([*git, "-C", str(source), "add", "."], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "weather skill"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(source), str(bare)], check=True)
    return bare


async def drop_tables(dsn: str, table: str) -> None:
    """Remove the three tables a MySQLRepository named ``table`` creates."""
    import aiomysql

    params = parse_mysql_dsn(dsn)
    connection = await aiomysql.connect(**params)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"DROP TABLE IF EXISTS `{table}`, `{table}_files`, `{table}_generation`")
    finally:
        connection.close()


async def main(workdir: Path, dsn: str) -> None:
    bare = build_git_market(workdir)
    table = f"example_skills_{uuid.uuid4().hex[:8]}"
    git_market = GitRepository(f"file://{bare}", cache_dir=workdir / "git-cache")
    mysql_market = MySQLRepository(dsn, table=table, writable=True, create_if_missing=True)
    try:
        async with Harness(
            name="markets",
            model=DemoModel(),
            workspace=workdir / "workspace",
            repositories=[git_market, mysql_market],
        ) as agent:
            await mysql_market.save(
                SkillBundleContents(
                    folder="unit-convert",
                    skill_md=CONVERT_MD.encode(),
                    files=(
                        FileContents(
                            path="scripts/convert.py",
                            data=b"print('10 km = 6.21 miles (from the MySQL market)')\n",
                            mode=0o755,
                        ),
                    ),
                )
            )
            print(f"markets: {git_market.source}, {mysql_market.source}")
            context = RuntimeContext(user_id="alice")
            for message in ("What is the weather forecast for Paris?", "Please convert 10 km to miles."):
                result = await agent.run(message, context=context)
                print(f"\n> {message}\n{result.reply}")
    finally:
        await drop_tables(dsn, table)


if __name__ == "__main__":
    dsn = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("HARNESS_MYSQL_DSN", "mysql://root@127.0.0.1:3306/test")
    run_in_workdir(lambda workdir: main(workdir, dsn))
