#!/usr/bin/env bash
# The one command that runs voiced on a fresh Debian-like machine: installs what is missing,
# builds, puts `voiced` on the PATH, fetches the models, then `voiced serve` on the embedded
# PostgreSQL default until Ctrl-C. It says which step it is in, and once the API answers, where
# it is and what to do next.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [%s/5] %s\n' "$1" "$2"; }

step 1 "Installing what is missing (apt: PostgreSQL, espeak-ng, build tools; Rust toolchain)"
./scripts/install-deps.sh
source scripts/env.sh

step 2 "Building the release binary (cargo; about ten minutes the first time)"
cargo build --release --locked
bin="$CARGO_TARGET_DIR/release/voiced"

# As root /usr/local/bin (on every PATH); otherwise ~/.local/bin, where Debian's ~/.profile
# looks; VOICED_INSTALL_DIR overrides both. The binary finds libctranslate2 through its absolute
# rpath into the models dir (see build.rs), so the installed copy runs as long as that dir stays
# where it was built; the check below proves it loads.
if [ -n "${VOICED_INSTALL_DIR:-}" ]; then
  dest="$VOICED_INSTALL_DIR"
elif [ "$(id -u)" -eq 0 ]; then
  dest=/usr/local/bin
else
  dest="$HOME/.local/bin"
fi
step 3 "Installing voiced into $dest"
mkdir -p "$dest"
install -m 0755 "$bin" "$dest/voiced"
"$dest/voiced" --version >/dev/null || {
  echo "run.sh: the installed $dest/voiced does not start" >&2
  exit 1
}
echo "installed $dest/voiced ($("$dest/voiced" --version))"
on_path=$(command -v voiced || true)
if [ "$on_path" != "$dest/voiced" ]; then
  echo "note: \`voiced\` on your PATH is ${on_path:-nothing}; add $dest to it, e.g." \
    "echo 'export PATH=\"$dest:\$PATH\"' >> ~/.bashrc, then open a new shell"
fi

step 4 "Fetching and verifying the models (PyPI) into $VOICED_MODELS_DIR"
"$dest/voiced" models fetch all

bind="${VOICED_BIND:-127.0.0.1:8080}"
url="http://$bind"
step 5 "Starting voiced serve on $url (Ctrl-C stops it)"
"$dest/voiced" serve &
server=$!
# A background job of a script ignores SIGINT, so Ctrl-C (and a TERM to this script) is passed
# on as the TERM that makes voiced shut down gracefully and stop its PostgreSQL.
trap 'kill -TERM "$server" 2>/dev/null || true' INT TERM
ready=""
while kill -0 "$server" 2>/dev/null; do
  if curl -sf "$url/readyz" >/dev/null 2>&1; then
    ready=yes
    break
  fi
  sleep 0.5
done
if [ -n "$ready" ]; then
  cat <<EOF

voiced is serving on $url   (OpenAPI: $url/openapi.json; Ctrl-C stops it)

Create the first account and key, in another terminal:
  voiced admin account create --email you@example.com --plan pro
  voiced admin key create --account you@example.com --scopes voice:read,voice:generate
then follow the README's walk-through (curl, OpenAI SDKs). \`voiced admin --help\` lists the rest.
Or sign up in the developer console at $url/console/sign-up (new accounts start without a plan:
  voiced admin account set-plan you@example.com --plan pro).

EOF
fi
status=0
wait "$server" || status=$?
# A wait cut short by the trap returns 128+signal; wait again for voiced's own exit status.
if [ "$status" -gt 128 ]; then
  status=0
  wait "$server" || status=$?
fi
exit "$status"
