#!/usr/bin/env bash
# The one command that runs the tests: installs what is missing, fetches the models, runs the
# Rust suites (real PostgreSQL, real models, fault and security tests, the scale-out test with
# Redis and an S3-compatible server), the OpenAI SDK compatibility test, the TypeScript and Python SDKs'
# tests, the agent interface (/mcp) with the official MCP Python SDK and conformance suite, the
# console in a real browser (Playwright driving Debian's chromium), schema fuzzing of the served
# OpenAPI document, and the README: its Markdown is linted and its walk-through run
# against a live server. Every error body the suites produced is then audited for internal detail.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
source scripts/env.sh
export VOICED_TEST_PGDATA="${VOICED_TEST_PGDATA:-$VOICED_CACHE/test-pg}"

cargo fmt --all -- --check
./scripts/lint-markdown.sh
./scripts/check-deploy.sh
python3 scripts/check-layers.py
python3 scripts/check-layers.py --self-test
cargo clippy --locked --all-targets -- -D warnings
cargo build --locked --bins --tests
bin="$CARGO_TARGET_DIR/debug/voiced"
"$bin" models fetch all

# The test asserts that the cluster stopped; as an exit trap it only warns, so that it never
# hides the exit status of the suites.
stop_test_cluster() {
  cargo test --locked --test api -- --ignored --exact db::stop_shared_test_cluster >/dev/null 2>&1 ||
    echo "warning: the shared test cluster did not stop cleanly (run: cargo test --test api -- --ignored --exact db::stop_shared_test_cluster)" >&2
}
trap stop_test_cluster EXIT

# Every error body any suite produces (debug builds append them here) is checked at the end
# for internal detail: paths, SQL, panic messages.
export VOICED_ERROR_BODY_LOG="$VOICED_CACHE/error-bodies.$$.jsonl"
rm -f "$VOICED_ERROR_BODY_LOG"
# The scale test's S3-compatible server: moto, pinned, in a venv in the cache.
moto_venv="$VOICED_CACHE/venv-moto"
if [ ! -x "$moto_venv/bin/moto_server" ]; then
  python3 -m venv "$moto_venv"
  "$moto_venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.1.4'
fi
export VOICED_MOTO_SERVER="$moto_venv/bin/moto_server"
# The webhook tests' independent verifier: the standardwebhooks package (PyPI), pinned.
hooks_venv="$VOICED_CACHE/venv-webhooks"
if ! "$hooks_venv/bin/python" -c 'import standardwebhooks' 2>/dev/null; then
  python3 -m venv --clear "$hooks_venv"
  "$hooks_venv/bin/pip" install --quiet --disable-pip-version-check 'standardwebhooks==1.1.0'
fi
export VOICED_WEBHOOKS_PYTHON="$hooks_venv/bin/python" VOICED_REQUIRE_WEBHOOK_VERIFIER=1
# The Silero VAD test's reference: the package's arithmetic on the same ONNX Runtime (PyPI),
# pinned.
vad_venv="$VOICED_CACHE/venv-vad"
if ! "$vad_venv/bin/python" -c 'import onnxruntime, numpy' 2>/dev/null; then
  python3 -m venv --clear "$vad_venv"
  "$vad_venv/bin/pip" install --quiet --disable-pip-version-check 'onnxruntime==1.31.1' 'numpy==2.2.6'
fi
export VOICED_VAD_PYTHON="$vad_venv/bin/python" VOICED_REQUIRE_VAD_REFERENCE=1
# Deepgram's dialect (`/v1/listen`): the official deepgram-sdk (PyPI), pinned, driven by
# tests/api/listen.rs.
VOICED_DEEPGRAM_PYTHON=$(./scripts/deepgram-sdk-test.sh --venv)
export VOICED_DEEPGRAM_PYTHON VOICED_REQUIRE_DEEPGRAM_SDK=1
# ElevenLabs' dialect (`/v1/text-to-speech/…`): the official elevenlabs SDK (PyPI), pinned,
# driven by tests/api/elevenlabs.rs.
VOICED_ELEVENLABS_PYTHON=$(./scripts/elevenlabs-sdk-test.sh --venv)
export VOICED_ELEVENLABS_PYTHON VOICED_REQUIRE_ELEVENLABS_SDK=1
# Cartesia's dialect (`/tts/websocket`): the official cartesia SDK with its websockets extra
# (PyPI), pinned, driven by tests/api/cartesia.rs.
VOICED_CARTESIA_PYTHON=$(./scripts/cartesia-sdk-test.sh --venv)
export VOICED_CARTESIA_PYTHON VOICED_REQUIRE_CARTESIA_SDK=1
cargo test --locked --no-fail-fast -- --test-threads="${VOICED_TEST_THREADS:-2}"
./scripts/sdk-test.sh "$bin"
./scripts/sdk-ts-test.sh "$bin"
./scripts/sdk-py-test.sh "$bin"
./scripts/mcp-test.sh "$bin"
./scripts/console-test.sh "$bin"
./scripts/readme-test.sh "$bin"
./scripts/schema-fuzz.sh "$bin"
python3 scripts/scan-error-bodies.py "$VOICED_ERROR_BODY_LOG"
rm -f "$VOICED_ERROR_BODY_LOG"
