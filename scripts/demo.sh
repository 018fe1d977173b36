#!/usr/bin/env bash
# The main job on embedded defaults (no server, no API key): sets up .venv, then runs the demo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec .venv/bin/harness demo "$@"
