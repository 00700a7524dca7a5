#!/usr/bin/env bash
# TypeScript SDK (sdk/typescript): installs its pinned dev tools (npm ci), checks its formatting
# and that the committed generated types match openapi/openapi.json, builds it, and runs its tests
# with `node --test` against one real `voiced serve` that the test setup starts (test/run.mjs).
# OpenAI's Node SDK and the Vercel AI SDK (pinned dev dependencies) run against the same server
# (test/openai-node.test.mjs: the transcription dialect).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin="${1:-$CARGO_TARGET_DIR/debug/voiced}"
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "sdk-ts-test: Node.js $(node --version) is too old; the SDK and its tests need Node >= 20" >&2
  exit 1
fi
cd sdk/typescript
npm ci --no-audit --no-fund --loglevel=error
npm run --silent check:types
npm run --silent check:format
npm run --silent build
VOICED_BIN="$bin" npm test --silent
