#!/usr/bin/env bash
# The developer console in a real browser: starts the real `voiced serve` (embedded PostgreSQL in
# a temporary data dir) and drives Debian's chromium with Playwright for Python
# (tests/console_browser/test_console.py, pytest). Playwright's own browser download is not used.
#
# Screenshots of each page go to a temporary dir, or to docs/console/ with --screenshots:
#   scripts/console-test.sh [BIN] [--screenshots]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin="$CARGO_TARGET_DIR/debug/voiced"
shots=""
for arg in "$@"; do
  case "$arg" in
    --screenshots) shots="$PWD/docs/console" ;;
    *) bin="$arg" ;;
  esac
done
chromium="${VOICED_CHROMIUM:-/usr/bin/chromium}"
[ -x "$chromium" ] || { echo "console-test: $chromium is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
venv="$VOICED_CACHE/venv-console"
if [ ! -x "$venv/bin/pytest" ] || ! "$venv/bin/python" -c 'import playwright' 2>/dev/null; then
  python3 -m venv --clear "$venv"
  "$venv/bin/python" -m pip install -q 'playwright==1.65.2' 'pytest==9.2.0'
fi
# axe-core (npm, MPL-2.0) for the accessibility check run inside the browser test.
axe="$VOICED_CACHE/npm-axe-core-4.14.1"
if [ ! -f "$axe/node_modules/axe-core/axe.min.js" ]; then
  rm -rf "$axe" && mkdir -p "$axe"
  npm install --prefix "$axe" --no-audit --no-fund --loglevel=error --no-save axe-core@4.14.1 >/dev/null
fi

work=$(mktemp -d /tmp/voiced-console.XXXXXX)
chmod 755 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export VOICED_DATA_DIR="$work/data" VOICED_BIND="127.0.0.1:$port" VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$port" VOICED_LOG=warn
export VOICED_BILLING_CONTACT="billing@example.com"
# One free minute in the playground, so that the browser test can spend it (default 10).
export VOICED_APP_FREE_MINUTES=1
unset VOICED_DATABASE_URL DATABASE_URL

"$bin" serve & server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "voiced serve exited" >&2; exit 1; }
  sleep 0.2
done
mkdir -p "${shots:-$work/shots}"
VOICED_BASE_URL="http://127.0.0.1:$port" VOICED_BIN="$bin" VOICED_CHROMIUM="$chromium" \
  VOICED_AXE="$axe/node_modules/axe-core/axe.min.js" \
  VOICED_SCREENSHOTS="${shots:-$work/shots}" \
  "$venv/bin/pytest" -q -p no:cacheprovider tests/console_browser/test_console.py
