#!/usr/bin/env bash
# Python SDK (sdk/python): checks that the committed types are what openapi/openapi.json
# generates and that the package passes `mypy --strict` (pinned), builds the wheel, installs it
# into a clean virtual environment (so a file missing from the wheel fails), type-checks the
# examples against the installed wheel, then starts the real `voiced serve` (embedded PostgreSQL
# in a temporary data dir, real models), makes accounts, keys and a voice with `voiced admin`,
# and runs the SDK's pytest suite (sdk/python/tests) and its examples (sdk/python/examples)
# against it. Extra arguments go to pytest (e.g. `-k listen`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin="${1:-$CARGO_TARGET_DIR/debug/voiced}"
shift || true
root=$(pwd)
sdk="$root/sdk/python"

# The tools, pinned, in a venv in the cache: the build backend (so the wheel builds without
# network), the build frontend, the type checker and the SDK's own dependencies for it.
tools="$VOICED_CACHE/venv-sdk-py"
tool_pins=('build==1.6.1' 'hatchling==1.33.0' 'mypy==2.4.1' 'httpx==0.28.1' 'websockets==17.4'
  'standardwebhooks==1.1.0')
if ! "$tools/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mypy") != "2.4.1" or m.version("hatchling") != "1.33.0")' 2>/dev/null; then
  python3 -m venv --clear "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "${tool_pins[@]}"
fi

"$tools/bin/python" "$sdk/scripts/gen_types.py" --check
(cd "$sdk" && "$tools/bin/mypy" src/voiced scripts)

work=$(mktemp -d /tmp/voiced-sdk-py.XXXXXX)
chmod 755 "$work"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$tools/bin/python" -m build --wheel --no-isolation --outdir "$work/dist" "$sdk" >/dev/null
wheel=$(ls "$work"/dist/voiced-*.whl)
# What the wheel must hold: the package, its generated types and the py.typed marker.
"$tools/bin/python" - "$wheel" <<'EOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = {"voiced/__init__.py", "voiced/py.typed", "voiced/types.py", "voiced/live/listen.py",
        "voiced/live/speak.py", "voiced/webhooks.py"}
missing = need - names
assert not missing, f"missing from the wheel: {sorted(missing)}"
assert not any(n.startswith(("tests/", "scripts/", "examples/")) for n in names), sorted(names)
EOF

# A clean venv: the wheel and what pip resolves for it, plus the test tools; nothing from the
# source tree is importable (pytest runs from $work).
venv="$work/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" 'pytest==9.2.0' \
  'soundfile==0.13.1' 'cffi==2.0.0' 'numpy==2.4.6' 'mypy==2.4.1'
# The examples type-check against the installed wheel (its py.typed and annotations).
(cd "$work" && "$venv/bin/mypy" --strict --no-incremental --cache-dir=/dev/null "$sdk/examples")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export VOICED_DATA_DIR="$work/data" VOICED_BIND="127.0.0.1:$port" \
  VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$port" VOICED_LOG=warn \
  VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES=true
unset VOICED_DATABASE_URL DATABASE_URL VOICED_API_KEY VOICED_BASE_URL
admin() { "$bin" admin --json "$@"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
main=$(admin account create --email sdk-py@example.com --plan pro | field id)
captures=$(admin account create --email sdk-py-captures@example.com --plan pro | field id)
unpaid=$(admin account create --email sdk-py-unpaid@example.com --plan none | field id)
admin voice create --account "$main" --name "SDK Voice" --engine kokoro --preset jf_alpha --language en >/dev/null
admin voice create --account "$captures" --name "SDK Voice" --engine kokoro --preset af_heart >/dev/null
# An English voice for the tests that transcribe long speech back (live speech).
admin voice create --account "$main" --name "SDK Speaker" --engine kokoro --preset af_heart --language en >/dev/null
both=voice:read,voice:generate
espeak-ng -w "$work/hello.wav" "Hello, this is a test of the transcription endpoint."
cat >"$work/fixtures.json" <<EOF
{
  "base_url": "http://127.0.0.1:$port",
  "voice": "SDK Voice",
  "speaker": "SDK Speaker",
  "bin": "$bin",
  "data_dir": "$VOICED_DATA_DIR",
  "main_account": "$main",
  "wav": "$work/hello.wav",
  "keys": {
    "main": "$(admin key create --account "$main" --scopes $both | field key)",
    "read_only": "$(admin key create --account "$main" --scopes voice:read | field key)",
    "rate_limited": "$(admin key create --account "$main" --scopes $both | field key)",
    "ceiling": "$(admin key create --account "$main" --scopes $both --ceiling-minutes 0 | field key)",
    "captures": "$(admin key create --account "$captures" --scopes $both | field key)",
    "unpaid": "$(admin key create --account "$unpaid" --scopes $both | field key)"
  }
}
EOF

"$bin" serve & server=$!
for _ in $(seq 900); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "voiced serve exited" >&2; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "voiced serve was not ready" >&2; exit 1; }

cd "$work"
VOICED_SDK_FIXTURES="$work/fixtures.json" "$venv/bin/pytest" -q -p no:cacheprovider \
  --rootdir "$sdk/tests" "$sdk/tests" "$@"

# The examples, as a user runs them: the key and base URL from the environment.
mkdir "$work/examples"
cd "$work/examples"
key_main=$(python3 -c "import json; print(json.load(open('$work/fixtures.json'))['keys']['main'])")
for example in "$sdk"/examples/*.py; do
  echo "example: $(basename "$example")"
  VOICED_API_KEY="$key_main" VOICED_BASE_URL="http://127.0.0.1:$port" VOICED_VOICE="SDK Voice" \
    "$venv/bin/python" "$example" "$work/hello.wav" >"$work/example.out"
  sed 's/^/  /' "$work/example.out"
done
