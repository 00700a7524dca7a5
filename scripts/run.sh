#!/usr/bin/env bash
# The one command that runs voiced on a fresh Debian-like machine: installs what is missing,
# builds, fetches the models, then `voiced serve` on the embedded PostgreSQL default.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
source scripts/env.sh
cargo build --release --locked
bin="$CARGO_TARGET_DIR/release/voiced"
"$bin" models fetch all
exec "$bin" serve
