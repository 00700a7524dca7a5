#!/usr/bin/env bash
# Issue 2 benchmark: authenticated GET /v1/voices against GET /healthz, side by side in one run,
# 64 connections, wrk (Debian). Prints requests/s, p50/p99 and the ratio voices/healthz.
# Rate limits are raised for the run (settings rate_limit_*); the code path is the same.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
ROUNDS="${ROUNDS:-3}"

cargo build --release --locked --bin voiced
bin="$CARGO_TARGET_DIR/release/voiced"
work=$(mktemp -d /tmp/voiced-bench.XXXXXX)
chmod 755 "$work"
export VOICED_DATA_DIR="$work/data" VOICED_BIND=127.0.0.1:18080 VOICED_WORKERS=0 VOICED_LOG=warn \
       VOICED_RATE_LIMIT_READS_PER_MINUTE=100000000 VOICED_RATE_LIMIT_WRITES_PER_HOUR=100000000
account=$("$bin" admin --json account create --email bench@example.com | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
key=$("$bin" admin --json key create --account "$account" --scopes voice:read | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
for i in 1 2 3; do "$bin" admin voice create --account "$account" --name "voice $i" --engine kokoro --preset jf_alpha >/dev/null; done
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 0.2; done

run() { # path, extra header → "rps p50 p99"
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency ${2:+-H "$2"} "http://127.0.0.1:18080$1" \
    | awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} END {print rps, p50, p99}'
}
echo "round endpoint rps p50 p99"
for round in $(seq "$ROUNDS"); do
  read -r hr hp50 hp99 < <(run /healthz)
  read -r vr vp50 vp99 < <(run /v1/voices "x-api-key: $key")
  echo "$round healthz $hr $hp50 $hp99"
  echo "$round voices $vr $vp50 $vp99"
  python3 -c "print('$round ratio voices/healthz = %.3f' % ($vr/$hr))"
done
