#!/usr/bin/env bash
# Issues 2 and 14 benchmark: authenticated reads against GET /healthz, side by side in one run,
# 64 connections, wrk (Debian). Prints requests/s, p50/p99 and the ratio of each read to healthz.
# Rate limits are raised for the run (settings rate_limit_*); the code path is the same.
#
# Authenticated reads (one key, its principal in memory after the first request; each read's
# statement checks the key, docs/architecture.md):
#   voices         GET /v1/voices (three voices)
#   presets        GET /v1/voices/presets (the key check is the only statement)
#   captures       GET /v1/captures (empty page and total, one statement)
#   generation     GET /v1/generations/{id} (one queued generation)
#
# Breakdown rows (same run, same rounds, interleaved):
#   voices-nokey   GET /v1/voices without a credential: routing + middleware + a 401 problem
#                  document; no hashing, no database.
#   voices-badkey  GET /v1/voices with an unknown key: adds SHA-256 + the key lookup query
#                  (one PostgreSQL round trip), then 401; no rate limiter, no voices query.
#   voices-429     the same valid key against a second `voiced serve` on the same database whose
#                  read quota is 1 per minute: rate limiter, then a key lookup (a refusal of a
#                  principal from memory is checked before it leaves), then 429; no voices query.
# For each run the CPU seconds used by `voiced serve` and by this cluster's PostgreSQL backends
# are read from /proc, per 1000 requests (wrk itself shares the same 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
ROUNDS="${ROUNDS:-3}"

# VOICED_BIN runs another build (e.g. a copy of an older commit's, to compare before and after).
if [ -z "${VOICED_BIN:-}" ]; then
  nice -n 5 cargo build --release --locked --bin voiced
fi
bin="${VOICED_BIN:-$CARGO_TARGET_DIR/release/voiced}"
work=$(mktemp -d /tmp/voiced-bench.XXXXXX)
chmod 755 "$work"
export VOICED_DATA_DIR="$work/data" VOICED_BIND=127.0.0.1:18080 VOICED_WORKERS=0 VOICED_LOG=warn \
       VOICED_RATE_LIMIT_READS_PER_MINUTE=100000000 VOICED_RATE_LIMIT_WRITES_PER_HOUR=100000000
account=$("$bin" admin --json account create --email bench@example.com | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
key=$("$bin" admin --json key create --account "$account" --scopes voice:read,voice:generate | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
for i in 1 2 3; do "$bin" admin voice create --account "$account" --name "voice $i" --engine kokoro --preset jf_alpha >/dev/null; done
limited=
"$bin" serve & server=$!
trap 'kill $limited $server 2>/dev/null; wait $limited $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:18080/readyz >/dev/null && break; sleep 0.2; done
VOICED_BIND=127.0.0.1:18081 VOICED_RATE_LIMIT_READS_PER_MINUTE=1 "$bin" serve & limited=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:18081/readyz >/dev/null && break; sleep 0.2; done
# One queued generation to poll (no worker runs, so it stays queued).
generation=$(curl -sf -X POST http://127.0.0.1:18080/v1/speech -H "x-api-key: $key" -H 'content-type: application/json' \
  -d '{"text":"Benchmark.","voice_name":"voice 1"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
pgbase="$VOICED_DATA_DIR"; [ -s "$VOICED_DATA_DIR/pg.location" ] && pgbase=$(cat "$VOICED_DATA_DIR/pg.location")
postmaster=$(head -1 "$pgbase/pg/postmaster.pid" 2>/dev/null || echo 0)

cpu_ticks() { # pid → utime+stime of the process and (for the postmaster) its children, in ticks
  python3 - "$1" <<'EOF'
import os, sys
root = int(sys.argv[1])
if root <= 1:
    print(0); sys.exit()
def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])  # ppid, utime+stime
total = 0
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            ppid, ticks = stat(int(entry))
        except OSError:
            continue
        if int(entry) == root or ppid == root:
            total += ticks
        if int(entry) == root:  # children that exited are counted in cutime+cstime
            with open(f"/proc/{root}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[13]) + int(fields[14])
print(total)
EOF
}

run() { # pid of the server, url, extra header → "rps p50 p99 requests voiced_cpu_ticks pg_cpu_ticks"
  local s0 p0 s1 p1
  s0=$(cpu_ticks "$1"); p0=$(cpu_ticks "$postmaster")
  local out
  out=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency ${3:+-H "$3"} "$2")
  s1=$(cpu_ticks "$1"); p1=$(cpu_ticks "$postmaster")
  echo "$out" | awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) \
    '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} / requests in / {n=$1}
     END {print rps, p50, p99, n, s, p}'
}
hz=$(getconf CLK_TCK)
echo "round endpoint rps p50 p99 voiced_cpu_ms/1k_req postgres_cpu_ms/1k_req"
for round in $(seq "$ROUNDS"); do
  declare -A rps=()
  endpoints=(healthz voices presets captures generation voices-nokey voices-badkey voices-429)
  # The order flips every round, so that neither end of a round is always the same request.
  if [ $((round % 2)) -eq 0 ]; then
    for ((i = ${#endpoints[@]} - 1; i >= 0; i--)); do reversed+=("${endpoints[i]}"); done
    endpoints=("${reversed[@]}"); unset reversed
  fi
  for endpoint in "${endpoints[@]}"; do
    url=http://127.0.0.1:18080
    case $endpoint in
      healthz) args=("$server" $url/healthz "") ;;
      voices) args=("$server" $url/v1/voices "x-api-key: $key") ;;
      presets) args=("$server" $url/v1/voices/presets "x-api-key: $key") ;;
      captures) args=("$server" $url/v1/captures "x-api-key: $key") ;;
      generation) args=("$server" "$url/v1/generations/$generation" "x-api-key: $key") ;;
      voices-nokey) args=("$server" $url/v1/voices "") ;;
      voices-badkey) args=("$server" $url/v1/voices "x-api-key: vk_not_a_real_key_0000000000000000") ;;
      voices-429) args=("$limited" http://127.0.0.1:18081/v1/voices "x-api-key: $key") ;;
    esac
    read -r r p50 p99 n s p < <(run "${args[@]}")
    rps[$endpoint]=$r
    python3 -c "print('$round $endpoint $r $p50 $p99 %.1f %.1f' % ($s*1000/$hz/$n*1000, $p*1000/$hz/$n*1000))"
  done
  for read in voices presets captures generation; do
    python3 -c "print('$round ratio $read/healthz = %.3f' % (${rps[$read]}/${rps[healthz]}))"
  done
done
