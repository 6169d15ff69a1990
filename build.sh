#!/usr/bin/env bash
# Build every ATREX wheel into dist/, install their declared runtime dependencies, then
# force-reinstall only the freshly built ATREX wheels (so a stale ATREX install never survives).
# PYTHON=/path/to/python selects the environment to install into.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
rm -rf dist && mkdir -p dist
if command -v uv >/dev/null 2>&1; then
  uv build --all-packages --wheel -o dist
else
  "$PYTHON" -m pip wheel --no-deps -w dist . packages/core packages/nvidia packages/ppu
fi
wheels=(dist/*.whl)
echo "built: ${wheels[*]}"
# Resolve runtime dependencies with the local wheels visible (atrex -> atrex-core, ...).
"$PYTHON" -m pip install --find-links dist "${wheels[@]}"
"$PYTHON" -m pip install --force-reinstall --no-deps "${wheels[@]}"
