#!/usr/bin/env bash
# Deepgram's official Python SDK against voiced (issue 38): makes or reuses the venv with
# deepgram-sdk pinned, then runs the Rust test that starts a server, makes a key, writes a real
# speech clip and runs tests/deepgram_sdk/test_listen.py (the live client streams it, the
# pre-recorded client sends it). With --venv it only makes the venv and prints its python, for
# scripts/test.sh, whose test run then includes that test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
venv="$VOICED_CACHE/venv-deepgram"
if ! "$venv/bin/python" -c 'import importlib.metadata as m, deepgram; assert m.version("deepgram-sdk") == "7.16.0"' 2>/dev/null; then
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'deepgram-sdk==7.16.0' >&2
fi
if [ "${1:-}" = "--venv" ]; then
  echo "$venv/bin/python"
  exit 0
fi
export VOICED_DEEPGRAM_PYTHON="$venv/bin/python" VOICED_REQUIRE_DEEPGRAM_SDK=1
exec cargo test --locked --test api -- --test-threads=1 --exact \
  listen::deepgram_python_sdk_streams_and_transcribes_a_real_clip
