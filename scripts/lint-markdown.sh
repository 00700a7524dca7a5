#!/usr/bin/env bash
# Keeps README.md and docs/*.md well-formed with markdownlint-cli2, pinned by the lockfile in
# tools/markdown/ and installed with `npm ci` into the cache (outside the checkout). The rules
# kept and dropped are in .markdownlint-cli2.jsonc.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
dir="$VOICED_CACHE/markdownlint"
lint="$dir/node_modules/.bin/markdownlint-cli2"
if [ ! -x "$lint" ] || ! cmp -s tools/markdown/package-lock.json "$dir/package-lock.json"; then
  mkdir -p "$dir"
  cp tools/markdown/package.json tools/markdown/package-lock.json "$dir/"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
fi
"$lint" README.md 'docs/*.md'
