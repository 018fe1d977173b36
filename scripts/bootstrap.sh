#!/usr/bin/env bash
# Makes a virtualenv and installs the package into it; safe to run again (it only installs when
# pyproject.toml changed). Sourced by scripts/test.sh (through services.sh) and scripts/demo.sh:
#   source bootstrap.sh                      # .venv: the package with its dev extras (the tests)
#   source bootstrap.sh VENV TARGET...       # VENV: exactly the pip targets given (the demo)
# Installing prints a line per step on stderr; the installer's full output is kept in VENV/pip.log.
# uv installs when there is one (the dev extras bring it; a copy is kept for the next fresh clone),
# from the sources pip is configured with; pip installs when uv is not there or fails.
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
# uv is many times faster than pip, most of all from its cache: the tests' venv installs uv, and
# a copy of it is kept here for the next venv a fresh clone makes, with the time of the last
# install that asked the indexes.
kept=${XDG_CACHE_HOME:-$HOME/.cache}/agent-skill-harness-setup
find_uv() {
  local uv
  for uv in "$venv/bin/uv" "$root/.venv/bin/uv" "$kept/uv"; do
    if [ -x "$uv" ] && "$uv" --version >/dev/null 2>&1; then echo "$uv" && return; fi
  done
  return 0
}

# A venv without pip (python3-venv missing when it was made) is made again. With uv at hand, pip
# comes from uv's cache (ensurepip spends seconds compiling it).
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "creating $venv ..." >&2
  rm -rf "$venv"
  uv=$(find_uv)
  if ! { [ -n "$uv" ] && "$python" -m venv --without-pip "$venv" 2>/dev/null &&
    "$uv" pip install --quiet --offline --python "$venv/bin/python" pip >/dev/null 2>&1; }; then
    rm -rf "$venv"
    "$python" -m venv "$venv" 2>/dev/null || { rm -rf "$venv"; apt_install python3-venv && "$python" -m venv "$venv"; }
  fi
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
# pip's settings (its config files and PIP_* variables) as uv's options and variables, NUL
# separated: the same indexes (their best match, as pip takes it), find-links, constraints, CA
# bundle and timeout, so that uv installs what pip would from where pip would.
uv_settings() {
  "$venv/bin/python" - <<'PY'
import ast, subprocess, sys

listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True)
found: dict[str, tuple[int, str]] = {}
for line in listed.stdout.splitlines():  # section.key='value'; the variables as :env:.key
    name, _, value = line.partition("=")
    section, _, key = name.rpartition(".")
    rank = {"global": 0, "install": 1, ":env:": 2}.get(section, -1)
    if rank >= 0 and rank >= found.get(key, (0, ""))[0]:
        found[key] = (rank, ast.literal_eval(value))
options = {
    "index-url": "--default-index",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraints",
    "trusted-host": "--allow-insecure-host",
}
variables = {"cert": "SSL_CERT_FILE", "timeout": "UV_HTTP_TIMEOUT", "default-timeout": "UV_HTTP_TIMEOUT"}
settings = ["--index-strategy=unsafe-best-match"]
for key, (_, value) in found.items():
    if key in options:
        settings += [f"{options[key]}={item}" for item in value.split()]
    elif key in variables:
        settings.append(f"{variables[key]}={value}")
    elif key == "no-index" and value.lower() in {"1", "true", "yes", "on"}:
        settings.append("--no-index")
sys.stdout.write("\0".join(settings))
PY
}

# uv's output condensed like pip's; the whole of it goes to the log. First from uv's cache alone,
# when an install within the last day asked the indexes (the cache then holds what they
# offered), else from the indexes.
uv_install() {
  local log=$venv/pip.log settings options=() variables=() item
  mapfile -d '' settings < <(uv_settings)
  [ "${#settings[@]}" -gt 0 ] || { echo "error: could not read pip's settings for uv" >&2; return 1; }
  for item in "${settings[@]}"; do
    case $item in --*) options+=("$item") ;; *) variables+=("$item") ;; esac
  done
  if [ -n "$(find "$kept/online" -mmin -1440 2>/dev/null)" ] &&
    env "${variables[@]}" "$uv" pip install --offline --python "$venv/bin/python" "${options[@]}" "$@" >"$log" 2>&1; then
    echo "  from uv's cache" >&2
  else
    set +e
    env "${variables[@]}" "$uv" pip install --python "$venv/bin/python" "${options[@]}" "$@" 2>&1 | tee "$log" |
      sed -nu -e 's|^Downloading \([^ ]*\).*|  fetching \1|p' -e 's|^ *Building \([^ ]*\).*|  building \1|p' >&2
    [ "${PIPESTATUS[0]}" = 0 ] || { set -e; tail -n 5 "$log" >&2; return 1; }
    set -e
    mkdir -p "$kept" && touch "$kept/online"
  fi
  sed -n 's|^Installed \(.*\)|  installed \1|p' "$log" >&2
}

# The uv that installed the tests' venv, kept for the next fresh clone (written beside, then
# renamed, so that a venv made meanwhile never runs half a copy).
keep_uv() {
  mkdir -p "$kept" && cp "$venv/bin/uv" "$kept/uv.$$" && mv -f "$kept/uv.$$" "$kept/uv"
}

stamp=$venv/.installed-$( (cat pyproject.toml examples/skill-package/pyproject.toml; echo "${targets[*]}") | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  uv=$(find_uv)
  # The tests' venv: uv is one of its dev extras, so pip fetches it first when there is none.
  if [ -z "$uv" ] && [ $# -le 1 ] && echo "installing uv into $venv with pip ..." >&2 && pip_install uv; then
    uv=$venv/bin/uv
  fi
  if [ -n "$uv" ]; then
    echo "installing into $venv: uv pip install ${targets[*]} ..." >&2
    if [ $# -gt 1 ]; then uv_install "${targets[@]}" || uv=""; else uv_install --upgrade-package pip pip "${targets[@]}" || uv=""; fi
    [ -n "$uv" ] || echo "uv failed (above, and in $venv/pip.log): installing with pip instead" >&2
  fi
  if [ -z "$uv" ]; then
    echo "installing into $venv: pip install ${targets[*]} ..." >&2
    [ $# -gt 1 ] || pip_install --upgrade pip
    pip_install "${targets[@]}"
  fi
  [ $# -gt 1 ] || keep_uv
  rm -f "$venv"/.installed-* && touch "$stamp"
  echo "installed." >&2
fi
