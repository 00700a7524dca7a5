#!/usr/bin/env bash
# Schema fuzzing: schemathesis (pinned) against the served /openapi.json of the real
# `voiced serve` (embedded PostgreSQL in a temporary data dir), with a real key and voice, all of
# its checks, 100 examples per operation and its stateful phase. Any 5xx or any answer that breaks
# the document fails the run. docs/reliability.md has the exact command and what it covers.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin="${1:-$CARGO_TARGET_DIR/debug/voiced}"
examples="${SCHEMA_FUZZ_EXAMPLES:-100}"
venv="$VOICED_CACHE/venv-schema"
if [ ! -x "$venv/bin/st" ] || ! "$venv/bin/st" --version 2>/dev/null | grep -q 4.32.5; then
  python3 -m venv --clear "$venv"
  "$venv/bin/python" -m pip install -q 'schemathesis==4.32.5'
fi

work=$(mktemp -d /tmp/voiced-schema.XXXXXX)
chmod 755 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export VOICED_DATA_DIR="$work/data" VOICED_BIND="127.0.0.1:$port" VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$port"
export VOICED_LOG=error VOICED_WORKERS=1
# The fuzzer sends thousands of requests with one key: the rate limits would answer most of them.
export VOICED_RATE_LIMIT_WRITES_PER_HOUR=100000000 VOICED_RATE_LIMIT_READS_PER_MINUTE=100000000
export VOICED_MAX_PENDING_PER_ACCOUNT=100000
unset VOICED_DATABASE_URL DATABASE_URL
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
account=$("$bin" admin --json account create --email fuzz@example.com --plan pro | json_field id)
key=$("$bin" admin --json key create --account "$account" --scopes voice:read,voice:generate | json_field key)
"$bin" admin --json voice create --account "$account" --name Narrator --engine kokoro --preset jf_alpha --language en >/dev/null

"$bin" serve & server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "voiced serve exited" >&2; exit 1; }
  sleep 0.2
done
"$venv/bin/st" --config-file scripts/schemathesis.toml run "http://127.0.0.1:$port/openapi.json" \
  --header "x-api-key: $key" \
  --checks all \
  --max-examples "$examples" \
  --phases examples,coverage,fuzzing,stateful \
  --workers 1 \
  --request-timeout 60 \
  --seed 20261123 \
  --generation-deterministic \
  --no-color
