#!/usr/bin/env bash
# Creates .venv and installs the package with its development extras.
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run again (it only installs what changed).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

as_root() { [ "$(id -u)" = 0 ]; }
apt_install() {
  if ! as_root; then
    echo "error: '$*' is missing and installing it needs root (apt-get install $*)" >&2
    return 1
  fi
  if [ ! -f /var/lib/apt/.harness-updated ]; then
    apt-get update -qq && touch /var/lib/apt/.harness-updated
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

python=${PYTHON:-python3}
command -v "$python" >/dev/null || apt_install python3
command -v git >/dev/null || apt_install git
# A venv without pip (python3-venv missing when it was made) is made again.
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  rm -rf .venv
  "$python" -m venv .venv 2>/dev/null || { rm -rf .venv; apt_install python3-venv && "$python" -m venv .venv; }
fi
stamp=.venv/.installed-$(cat pyproject.toml examples/skill-package/pyproject.toml | sha256sum | cut -c1-16)
pip_install() {
  # Build backends are chatty on stderr; keep their output for when something fails.
  if ! .venv/bin/python -m pip install -q "$@" >.venv/pip.log 2>&1; then
    cat .venv/pip.log >&2
    echo "error: pip install $* failed (log above)" >&2
    return 1
  fi
}
if [ ! -f "$stamp" ]; then
  echo "setting up .venv (the package with its dev extras) ..." >&2
  pip_install --upgrade pip
  pip_install -e ".[dev]"
  # The example skill package, so the demo and examples have a package market to show.
  pip_install ./examples/skill-package
  rm -f .venv/.installed-* && touch "$stamp"
fi
