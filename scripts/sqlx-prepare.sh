#!/usr/bin/env bash
# Regenerates .sqlx/ (the offline query data the build checks queries against).
# DATABASE_URL must name an empty scratch database; the migrations are applied to it with psql.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?set DATABASE_URL to an empty scratch database}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/voiced/target}"
for f in migrations/*.sql; do psql -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -f "$f"; done
rm -rf .sqlx && mkdir .sqlx
touch src/lib.rs
SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$PWD/.sqlx" cargo check --lib
echo "$(ls .sqlx | wc -l) queries recorded in .sqlx/"
