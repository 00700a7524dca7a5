#!/usr/bin/env bash
# Cartesia's official Python SDK against voiced (issue 39): makes or reuses the venv with
# cartesia[websockets] pinned, then runs the Rust test that starts a server, makes a key and a
# voice and runs tests/cartesia_sdk/test_tts.py (the SDK's WebSocket TTS pointed at the server;
# the audio is transcribed back, the word timestamps checked). With --venv it only makes the
# venv and prints its python, for scripts/test.sh, whose test run then includes that test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
venv="$VOICED_CACHE/venv-cartesia"
if ! "$venv/bin/python" -c 'import importlib.metadata as m, cartesia, websockets; assert m.version("cartesia") == "4.2.0"' 2>/dev/null; then
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'cartesia[websockets]==4.2.0' >&2
fi
if [ "${1:-}" = "--venv" ]; then
  echo "$venv/bin/python"
  exit 0
fi
export VOICED_CARTESIA_PYTHON="$venv/bin/python" VOICED_REQUIRE_CARTESIA_SDK=1
exec cargo test --locked --test api -- --test-threads=1 --exact \
  cartesia::cartesia_python_sdk_speaks_over_the_socket
