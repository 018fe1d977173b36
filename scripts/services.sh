#!/usr/bin/env bash
# Makes sure what the tests integrate with is here: bubblewrap and a running MariaDB reachable
# over TCP. Installs with apt when running as root and missing. Prints the DSN the tests use as
# `HARNESS_TEST_MYSQL_DSN=...` on its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh" .venv

if ! command -v bwrap >/dev/null; then
  apt_install bubblewrap || echo "warning: bubblewrap is not installed; sandbox tests will not run" >&2
fi

if ! command -v mariadbd >/dev/null && ! command -v mysqld >/dev/null; then
  apt_install mariadb-server mariadb-client || echo "warning: MariaDB is not installed; MySQL tests will not run" >&2
fi

client=$(command -v mariadb || command -v mysql || true)
host=${HARNESS_MYSQL_HOST:-127.0.0.1}
port=${HARNESS_MYSQL_PORT:-3306}

tcp_ok() { [ -n "$client" ] && "$client" --protocol=TCP -h"$host" -P"$port" -u"$1" ${2:+-p"$2"} -e 'SELECT 1' >/dev/null 2>&1; }

if [ -n "$client" ] && ! tcp_ok root && ! tcp_ok harness harness; then
  server=$(command -v mariadbd || command -v mysqld || true)
  if [ -n "$server" ] && ! "$client" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
    # Not running (the socket answers nothing): start it the way Debian's init script would.
    if as_root; then
      mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
      start-stop-daemon --start --oknodo --background --exec "$server"
    else
      echo "warning: MariaDB is not running and starting it needs root" >&2
    fi
    for _ in $(seq 60); do
      "$client" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
      tcp_ok root && break
      sleep 0.5
    done
  fi
fi

dsn=""
if tcp_ok root; then
  dsn="mysql://root@$host:$port/test"
  "$client" --protocol=TCP -h"$host" -P"$port" -uroot -e 'CREATE DATABASE IF NOT EXISTS test' >/dev/null
elif tcp_ok harness harness; then
  dsn="mysql://harness:harness@$host:$port/test"
elif [ -n "$client" ] && "$client" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
  # Root may only log in through the socket (Debian's default): make a TCP user for the tests.
  "$client" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS test;
CREATE USER IF NOT EXISTS 'harness'@'127.0.0.1' IDENTIFIED BY 'harness';
CREATE USER IF NOT EXISTS 'harness'@'localhost' IDENTIFIED BY 'harness';
GRANT ALL PRIVILEGES ON *.* TO 'harness'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'harness'@'localhost';
FLUSH PRIVILEGES;
SQL
  tcp_ok harness harness && dsn="mysql://harness:harness@$host:$port/test"
fi
[ -n "$dsn" ] || echo "warning: no MariaDB reachable over TCP at $host:$port; MySQL tests will not run" >&2
echo "HARNESS_TEST_MYSQL_DSN=$dsn"
