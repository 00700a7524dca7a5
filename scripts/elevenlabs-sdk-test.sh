#!/usr/bin/env bash
# ElevenLabs' official Python SDK against voiced (issue 39): makes or reuses the venv with
# elevenlabs pinned, then runs the Rust test that starts a server, makes a key and a voice and
# runs tests/elevenlabs_sdk/test_tts.py (`text_to_speech.convert` and `.stream` with base_url
# pointed at the server; the audio is transcribed back). With --venv it only makes the venv and
# prints its python, for scripts/test.sh, whose test run then includes that test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
venv="$VOICED_CACHE/venv-elevenlabs"
if ! "$venv/bin/python" -c 'import importlib.metadata as m, elevenlabs; assert m.version("elevenlabs") == "2.78.0"' 2>/dev/null; then
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'elevenlabs==2.78.0' >&2
fi
if [ "${1:-}" = "--venv" ]; then
  echo "$venv/bin/python"
  exit 0
fi
export VOICED_ELEVENLABS_PYTHON="$venv/bin/python" VOICED_REQUIRE_ELEVENLABS_SDK=1
exec cargo test --locked --test api -- --test-threads=1 --exact \
  elevenlabs::elevenlabs_python_sdk_converts_and_streams
