#!/usr/bin/env bash
# The README cannot drift: runs every shell block of README.md marked with a
# `<!-- readme-test -->` line just before its fence, in order, in one bash session (`set -euo
# pipefail`, so a failing command fails the test), from an empty working directory, with the
# `voiced` under test first on the PATH, against a live `voiced serve` on the embedded default
# PostgreSQL in a temporary data dir. Unmarked blocks (sample output, run.sh, SDK snippets) are
# not run.
#
# Where the server is: the README's commands take its URL from VOICED_URL, defaulting to
# http://127.0.0.1:8080 where `voiced serve` listens out of the box. This test starts the server
# on a port the kernel reports free and sets VOICED_URL (and VOICED_BIND,
# VOICED_PUBLIC_BASE_URL) to it, so it never needs 8080 to be free: a CI machine or a developer
# machine with voiced already running both work. `voiced admin` reaches the same embedded
# cluster through VOICED_DATA_DIR, as it does for a user through the default data dir.
#
# Usage: scripts/readme-test.sh [path/to/voiced]   (default: the debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin=$(realpath "${1:-$CARGO_TARGET_DIR/debug/voiced}")

work=$(mktemp -d /tmp/voiced-readme.XXXXXX)
chmod 755 "$work" # as root the cluster runs as `postgres`, which must reach the data dir
mkdir "$work/run"
python3 - README.md "$work/readme.sh" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
blocks, i = [], 0
while i < len(lines):
    if lines[i].strip() == "<!-- readme-test -->":
        fence = lines[i + 1]
        if not fence.startswith("```sh"):
            sys.exit(f"README.md:{i + 2}: a readme-test mark must sit right above a ```sh fence")
        end = i + 2
        while not lines[end].startswith("```"):
            end += 1
        blocks.append((i + 3, lines[i + 2:end]))
        i = end
    i += 1
if len(blocks) < 5:
    sys.exit(f"only {len(blocks)} readme-test blocks found in README.md")
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for line_no, body in blocks:
        out.write(f"printf '\\n--- README.md line {line_no}\\n'\n" + "\n".join(body) + "\n")
print(f"readme-test: {len(blocks)} blocks", file=sys.stderr)
PY

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export VOICED_DATA_DIR="$work/data" VOICED_BIND="127.0.0.1:$port"
export VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$port" VOICED_URL="http://127.0.0.1:$port"
export VOICED_LOG="${VOICED_LOG:-warn}"
unset VOICED_DATABASE_URL DATABASE_URL
"$bin" serve & server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 600); do
  curl -sf "$VOICED_URL/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "voiced serve exited" >&2; exit 1; }
  sleep 0.2
done
curl -sf "$VOICED_URL/readyz" >/dev/null || { echo "voiced serve never became ready" >&2; exit 1; }

cd "$work/run"
PATH="$(dirname "$bin"):$PATH" bash -euo pipefail "$work/readme.sh"
echo "readme-test: every marked README block ran" >&2
