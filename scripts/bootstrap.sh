#!/usr/bin/env bash
# Makes a virtualenv and installs the package into it; safe to run again (it only installs when
# pyproject.toml changed). Sourced by scripts/test.sh (through services.sh) and scripts/demo.sh:
#   source bootstrap.sh                      # .venv: the package with its dev extras (the tests)
#   source bootstrap.sh VENV TARGET...       # VENV: exactly the pip targets given (the demo)
# Installing prints a line per step on stderr; pip's full output is kept in VENV/pip.log.
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

venv=${1:-.venv}
# The example skill package gives the demo and the examples a package market to show.
if [ $# -gt 1 ]; then targets=("${@:2}"); else targets=(-e ".[dev]" ./examples/skill-package); fi

python=${PYTHON:-python3}
command -v "$python" >/dev/null || apt_install python3
command -v git >/dev/null || apt_install git
# A venv without pip (python3-venv missing when it was made) is made again.
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "creating $venv ..." >&2
  rm -rf "$venv"
  "$python" -m venv "$venv" 2>/dev/null || { rm -rf "$venv"; apt_install python3-venv && "$python" -m venv "$venv"; }
fi

# pip's output condensed to a line per package fetched, one for the local builds and one when it
# installs; all of it goes to the log, printed whole when pip fails.
pip_install() {
  local log=$venv/pip.log status
  set +e
  "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off "$@" 2>&1 | tee "$log" |
    sed -nu -e 's,^\(Collecting\|Processing\) \([^ ]*/\)*\([^ /]*\).*,  fetching \3,p' \
      -e 's|^Building wheels for collected packages: \(.*\)|  building \1|p' \
      -e 's|^Installing collected packages: .*|  installing ...|p' >&2
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" != 0 ]; then
    cat "$log" >&2
    echo "error: pip install $* failed (log above, also in $log)" >&2
    return 1
  fi
}
stamp=$venv/.installed-$( (cat pyproject.toml examples/skill-package/pyproject.toml; echo "${targets[*]}") | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "installing into $venv: pip install ${targets[*]} ..." >&2
  [ $# -gt 1 ] || pip_install --upgrade pip
  pip_install "${targets[@]}"
  rm -f "$venv"/.installed-* && touch "$stamp"
  echo "installed." >&2
fi
