#!/usr/bin/env bash
# The test command: sets up everything the tests need (virtualenv, the package, bubblewrap,
# a running MariaDB), then runs ruff, and the whole test suite with mypy --strict, a strict build
# of the documentation site and the release check (build + twine) beside it. Extra arguments go
# to pytest.
#   scripts/test.sh --fast [PYTEST ARGS]   the inner loop: ruff and the tests not marked slow;
#                                          no mypy, docs build or release check
#   scripts/test.sh --large [PYTEST ARGS]  the scale tests at their full size (pytest's --large)
# pytest runs in one worker process per core and one more (pytest-xdist), since much of a test's
# time is spent waiting on the processes it starts; HARNESS_TEST_WORKERS sets how many (0: all in
# this process, as `-n 0` among the arguments does).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fast=0
if [ "${1:-}" = --fast ]; then fast=1; shift; fi
export HARNESS_TEST_MYSQL_DSN=${HARNESS_TEST_MYSQL_DSN:-$(bash scripts/services.sh | tail -n 1 | cut -d= -f2-)}
# The tests start a few hundred Python processes that import this checkout: let the first one
# write the bytecode the others read (a __pycache__ next to each source, ignored by git and
# left out of the release) instead of compiling the sources again in every process.
unset PYTHONDONTWRITEBYTECODE
# Tests about unreadable files run the harness as an unprivileged user, who must be able to
# reach the checkout (a clone made inside a private temporary folder is not).
if [ "$(id -u)" = 0 ]; then chmod o+x . 2>/dev/null || true; fi
echo "== ruff format --check, ruff check"
.venv/bin/python -m ruff format --check --quiet .
.venv/bin/python -m ruff check --quiet .
workers=(-n "${HARNESS_TEST_WORKERS:-$(($(nproc) + 1))}" --dist worksteal)
if [ $fast = 1 ]; then
    echo "== pytest --fast: the tests not marked slow; no mypy, docs build or release check"
    exec .venv/bin/python -m pytest -q -p no:cacheprovider "${workers[@]}" -m "not slow" "$@"
fi
# mypy, the strict docs build and the release check run beside pytest, one after the other, at a
# lower priority: pytest is the longest part and much of its time is spent waiting on the
# processes it starts, which the checks fill.
# Their output, with how long each took, follows pytest's. mypy keeps its cache beside the set-up's
# (MYPY_CACHE_DIR to move it), so a fresh clone on a machine that ran the command before checks
# only what differs from the last run; mypy compares each file's hash, so a stale entry is rebuilt.
mypy_cache=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-skill-harness-setup/mypy-cache}
mkdir -p "$mypy_cache" 2>/dev/null && [ -w "$mypy_cache" ] || mypy_cache=.venv/mypy-cache
checks_log=$(mktemp)
(
    set -e
    renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true
    echo "== mypy --strict"
    start=$SECONDS
    .venv/bin/python -m mypy --cache-dir "$mypy_cache" harness repositories filesystems
    echo "   (mypy took $((SECONDS - start))s)"
    echo "== mkdocs build --strict (the documentation site)"
    site=$(mktemp -d)
    trap 'rm -rf "$site"' EXIT
    start=$SECONDS
    NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --quiet --site-dir "$site"
    echo "   (the docs build took $((SECONDS - start))s)"
    echo "== python -m build, twine check (into a temporary folder)"
    start=$SECONDS
    .venv/bin/python scripts/check_release.py
    echo "   (the release check took $((SECONDS - start))s)"
) >"$checks_log" 2>&1 &
checks=$!
echo "== pytest (MySQL: ${HARNESS_TEST_MYSQL_DSN:-none}, bubblewrap: $(command -v bwrap || echo none), workers: ${workers[1]}); mypy, docs and release checks beside it"
set +e
started=$SECONDS
.venv/bin/python -m pytest -q -p no:cacheprovider "${workers[@]}" "$@"
rc=$?
echo "   (pytest, from its start to its exit, took $((SECONDS - started))s)"
wait "$checks"
checks_rc=$?
set -e
cat "$checks_log"
rm -f "$checks_log"
echo "== the test command took ${SECONDS}s"
if [ $checks_rc != 0 ]; then echo "mypy, the docs build or the release check failed (above)" >&2; fi
if [ $rc = 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi
if [ $rc != 0 ]; then exit $rc; fi
exit $checks_rc
