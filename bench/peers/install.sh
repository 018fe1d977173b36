#!/usr/bin/env bash
# Install the peer skill loaders that bench/load.py compares against, away from the project's venv:
#   bench/.peers/venv   Python venv with deepagents and skills-ref (PyPI)
#   bench/.peers/node   node folder with @mariozechner/pi-coding-agent (npm)
# Usage: bash bench/peers/install.sh   (PYTHON=python3.11 to choose the interpreter)
# Versions are pinned so figures stay comparable; bump them here on purpose.
set -euo pipefail

DEEPAGENTS_VERSION=0.7.32
SKILLS_REF_VERSION=0.1.1
PI_VERSION=0.73.1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
peers="$(dirname "$here")/.peers"
python="${PYTHON:-python3}"

for tool in "$python" node npm; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool not found (deepagents needs Python >= 3.11, Pi needs node >= 20.6 with npm)" >&2
        exit 1
    fi
done
echo "peers folder: $peers"
mkdir -p "$peers"

echo "== Python peers ($("$python" --version 2>&1)) into $peers/venv"
echo "   pip: deepagents==$DEEPAGENTS_VERSION skills-ref==$SKILLS_REF_VERSION"
"$python" -m venv "$peers/venv"
"$peers/venv/bin/python" -m pip install --quiet --upgrade pip
"$peers/venv/bin/python" -m pip install --quiet \
    "deepagents==$DEEPAGENTS_VERSION" "skills-ref==$SKILLS_REF_VERSION"

echo "== node peer ($(node --version)) into $peers/node"
echo "   npm: @mariozechner/pi-coding-agent@$PI_VERSION"
mkdir -p "$peers/node"
if [ ! -f "$peers/node/package.json" ]; then
    printf '{\n  "name": "harness-bench-peers",\n  "private": true,\n  "type": "module"\n}\n' >"$peers/node/package.json"
fi
npm install --prefix "$peers/node" --no-audit --no-fund --loglevel=error \
    "@mariozechner/pi-coding-agent@$PI_VERSION"

echo "== installed"
"$peers/venv/bin/python" -m pip list 2>/dev/null | grep -i -E '^(deepagents|skills-ref|langchain|langgraph) '
node -e 'const p=require(process.argv[1]);console.log(`${p.name} ${p.version}`)' \
    "$peers/node/node_modules/@mariozechner/pi-coding-agent/package.json"
