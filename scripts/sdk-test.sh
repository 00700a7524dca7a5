#!/usr/bin/env bash
# OpenAI SDK compatibility test: starts the real `voiced serve` (embedded PostgreSQL in a
# temporary data dir), sets up an account, key and voice with `voiced admin`, and runs the
# official `openai` Python package against it (tests/sdk/test_openai_sdk.py, pytest): speech,
# transcriptions (every response format, both granularities, the stream) and translations, and a
# realtime transcription session (`client.realtime.connect`, its `realtime` extra: websockets).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin="${1:-$CARGO_TARGET_DIR/debug/voiced}"
venv="$VOICED_CACHE/venv-sdk"
if [ ! -x "$venv/bin/pytest" ] || ! "$venv/bin/python" -c 'import openai, soundfile, mutagen, webvtt, srt, websockets' 2>/dev/null; then
  python3 -m venv --clear "$venv"
  # soundfile (libsndfile) and mutagen: strict readers of the stored files' declared lengths.
  # webvtt-py and srt parse the captions of /v1/audio/transcriptions (issue 25).
  "$venv/bin/python" -m pip install -q 'openai[realtime]==3.51.0' 'websockets==15.0.1' 'pytest==9.2.0' \
    'soundfile==0.13.1' 'cffi==2.0.0' 'numpy==2.4.6' 'mutagen==1.48.1' \
    'webvtt-py==0.6.0' 'srt==3.5.3'
fi

work=$(mktemp -d /tmp/voiced-sdk.XXXXXX)
chmod 755 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export VOICED_DATA_DIR="$work/data" VOICED_BIND="127.0.0.1:$port" VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$port" VOICED_LOG=warn
unset VOICED_DATABASE_URL DATABASE_URL
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
account=$("$bin" admin --json account create --email sdk@example.com | json_field id)
key=$("$bin" admin --json key create --account "$account" --scopes voice:read,voice:generate | json_field key)
"$bin" admin --json voice create --account "$account" --name "SDK Voice" --engine kokoro --preset jf_alpha --language en >/dev/null

"$bin" serve & server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "voiced serve exited" >&2; exit 1; }
  sleep 0.2
done
VOICED_BASE_URL="http://127.0.0.1:$port" VOICED_KEY="$key" VOICED_VOICE="SDK Voice" \
  "$venv/bin/pytest" -q -p no:cacheprovider tests/sdk/test_openai_sdk.py
