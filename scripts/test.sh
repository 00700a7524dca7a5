#!/usr/bin/env bash
# The one command that runs the tests: installs what is missing, fetches the models, runs the
# Rust suites (real PostgreSQL, real models), the OpenAI SDK compatibility test, the console in a
# real browser (Playwright driving Debian's chromium), and the README:
# its Markdown is linted and its walk-through run against a live server.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
source scripts/env.sh
export VOICED_TEST_PGDATA="${VOICED_TEST_PGDATA:-$VOICED_CACHE/test-pg}"

cargo fmt --all -- --check
./scripts/lint-markdown.sh
cargo clippy --locked --all-targets -- -D warnings
cargo build --locked --bins --tests
bin="$CARGO_TARGET_DIR/debug/voiced"
"$bin" models fetch all

stop_test_cluster() {
  cargo test --locked --test db -- --ignored stop_shared_test_cluster >/dev/null 2>&1 || true
}
trap stop_test_cluster EXIT

cargo test --locked --no-fail-fast -- --test-threads="${VOICED_TEST_THREADS:-2}"
./scripts/sdk-test.sh "$bin"
./scripts/console-test.sh "$bin"
./scripts/readme-test.sh "$bin"
