#!/usr/bin/env bash
# The main job on embedded defaults (no server, no API key): installs what the demo needs (the
# package and the example skill package, not the dev extras) into .venv-demo, then runs
# `harness demo` (arguments go to it). .venv-demo is the demo's own: it shows that the core
# install alone runs the demo, and installing into it never disturbs the tests' .venv.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh" .venv-demo -e . ./examples/skill-package
exec .venv-demo/bin/harness demo "$@"
