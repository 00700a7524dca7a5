#!/usr/bin/env bash
# The container image and the scaled layout, built and run for real (docs/deployment.md,
# "Container test"). Needs podman (or docker) and about 12 GiB of disk; not part of .ci/run
# (a second release build does not fit its budget).
#
#   scripts/container-test.sh            all of it: stand-ins, image, image checks, compose run
#   scripts/container-test.sh standins   only the stand-in base images
#   scripts/container-test.sh image      stand-ins, build, image checks
#   scripts/container-test.sh check      image checks only (the image must exist)
#   scripts/container-test.sh compose    compose run (the image must exist)
#
# 1. Stand-ins. Where a base image the Dockerfile or compose.yaml names cannot be pulled (no
#    registry), one is made from Debian packages and tagged with that name, so that the
#    unchanged Dockerfile and compose.yaml use it: debian:bookworm-slim by debootstrap; the Rust
#    build image from it plus this machine's pinned toolchain (rust-toolchain.toml); postgres,
#    redis, nginx and moto from Debian's packages / PyPI (deploy/standins/). Stand-ins never go
#    into the image users get: only the Dockerfile's stages do.
# 2. The image: build, then as the non-root user `voiced --version`, `models status`, `migrate`
#    and `serve` with its embedded database: /readyz, speech, its transcription back; no
#    compiler and no Python inside; `stop` ends it within the grace.
# 3. compose.yaml's services (deploy/compose-podman.py; Debian's podman-compose 1.0.3 cannot
#    read the file) driven from outside through nginx: speech on both serve processes,
#    transcription, the shared rate limit exact across them, audio from S3 through either, a
#    worker killed mid-job and its generation completed by the other, everything stopped and
#    started again with no generation lost.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
WORK=${VOICED_CTR_WORK:-$VOICED_CACHE/ctr}
PORT=${VOICED_CTR_PORT:-18080}
export VOICED_CTR_WORK=$WORK
mkdir -p "$WORK"
what=${1:-all}

if command -v podman >/dev/null; then
  ENGINE=podman
elif command -v docker >/dev/null; then
  ENGINE=docker
else
  echo "container-test: needs podman or docker" >&2
  exit 1
fi
export CONTAINER_ENGINE=$ENGINE
if [ "$ENGINE" = podman ] && [ -z "${CONTAINERS_CONF:-}" ] \
  && [ "$(podman info --format '{{.Host.CgroupsVersion}}')" = v1 ] && command -v runc >/dev/null; then
  # crun refuses cgroups v1 in hybrid mode ("cgroups in hybrid mode not supported") and the
  # default ulimits (above this nested machine's hard limits) cannot be set: runc, and the
  # open-files limit this shell has.
  cat > "$WORK/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF
  export CONTAINERS_CONF=$WORK/containers.conf
fi
e() { "$ENGINE" "$@"; }
step() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
fail() { echo "container-test: FAIL: $*" >&2; exit 1; }
have() { e image inspect "$1" >/dev/null 2>&1; }
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
python_yaml=python3
python3 -c 'import yaml' 2>/dev/null || python_yaml=$VOICED_CACHE/venv-deploy-lint/bin/python
compose() { "$python_yaml" deploy/compose-podman.py "$@"; }

# --- 1. stand-ins ------------------------------------------------------------------------
pull_or_stand_in() { # NAME CONTAINERFILE
  local name=$1 file=$2
  have "$name" && return 0
  if timeout 60 "$ENGINE" pull -q "$name" >/dev/null 2>&1; then
    echo "pulled $name"
    return 0
  fi
  echo "stand-in for $name from deploy/standins/$file"
  local ctx="$WORK/ctx-standins"
  rm -rf "$ctx" && mkdir -p "$ctx/ca"
  cp deploy/standins/* "$ctx/"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/ca/" 2>/dev/null || true
  if [ "$file" = rust.Containerfile ]; then
    local channel toolchain
    channel=$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
    toolchain=$(readlink -f "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$channel-x86_64-unknown-linux-gnu")
    [ -x "$toolchain/bin/cargo" ] || fail "no Rust $channel toolchain here (rustup toolchain install $channel)"
    mkdir -p "$ctx/toolchain"
    tar -C "$toolchain" --exclude=./share/doc -c . | tar -C "$ctx/toolchain" -x
  fi
  e build -q -f "$ctx/$file" -t "$name" "$ctx" >/dev/null
  rm -rf "$ctx"
}

standins() {
  step "base images: pulled where a registry answers, else stand-ins"
  local t0=$SECONDS
  if ! have docker.io/library/debian:bookworm-slim \
    && ! timeout 60 "$ENGINE" pull -q docker.io/library/debian:bookworm-slim >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || fail "no registry and no debootstrap (apt-get install debootstrap)"
    echo "stand-in for debian:bookworm-slim by debootstrap"
    rm -rf "$WORK/rootfs"
    debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >/dev/null
    rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
    tar -C "$WORK/rootfs" -c . | e import - docker.io/library/debian:bookworm-slim >/dev/null
    rm -rf "$WORK/rootfs"
  fi
  pull_or_stand_in docker.io/library/rust:1.95-bookworm rust.Containerfile
  pull_or_stand_in docker.io/library/postgres:17 postgres.Containerfile
  pull_or_stand_in docker.io/library/redis:7 redis.Containerfile
  pull_or_stand_in docker.io/library/nginx:1.27 nginx.Containerfile
  pull_or_stand_in docker.io/motoserver/moto:5.1.4 moto.Containerfile
  echo "base images ready in $((SECONDS - t0)) s"
}

# --- 2. the image -------------------------------------------------------------------------
build_image() {
  step "build voiced:local from the Dockerfile"
  local t0=$SECONDS cache=()
  if [ "$ENGINE" = podman ]; then
    # The crates this machine already has, and a build cache kept between runs (podman only:
    # docker build has no volumes; the Dockerfile itself stays plain).
    mkdir -p "$WORK/target"
    [ -d "$HOME/.cargo/registry" ] && cache+=(-v "$HOME/.cargo/registry:/usr/local/cargo/registry")
    cache+=(-v "$WORK/target:/target")
  fi
  nice -n 10 "$ENGINE" build "${cache[@]}" -t localhost/voiced:local . > "$WORK/build.log" 2>&1 \
    || { tail -40 "$WORK/build.log"; fail "image build"; }
  echo "built in $((SECONDS - t0)) s; size $(e image inspect --format '{{.Size}}' localhost/voiced:local) bytes"
}

check_image() {
  local img=localhost/voiced:local
  step "the image as its non-root user"
  e run --rm "$img" --version
  e run --rm --entrypoint id "$img"
  [ "$(e run --rm --entrypoint id "$img" -u)" = 10001 ] || fail "not uid 10001"
  e run --rm "$img" models status
  step "no compiler, no Python"
  e run --rm --entrypoint sh "$img" -c '
    found=0
    for c in cc gcc g++ c++ clang rustc cargo ld python python3 pip pip3 node npm; do
      if command -v "$c" >/dev/null; then echo "found $c"; found=1; fi
    done
    ls /usr/bin /usr/local/bin | grep -E "^(python|gcc|g\+\+|x86_64-linux-gnu-gcc)" && found=1
    exit $found' || fail "a compiler or Python is in the image"
  echo "none of cc gcc g++ c++ clang rustc cargo ld python python3 pip node npm"

  step "voiced migrate (embedded database, a fresh volume)"
  e volume rm -f voiced-ctr-data >/dev/null 2>&1 || true
  e volume create voiced-ctr-data >/dev/null
  e run --rm -v voiced-ctr-data:/var/lib/voiced/data "$img" migrate

  step "voiced serve: the embedded default"
  e rm -f voiced-ctr-serve >/dev/null 2>&1 || true
  e run -d --name voiced-ctr-serve -v voiced-ctr-data:/var/lib/voiced/data \
    -p "127.0.0.1:$PORT:8080" -e VOICED_PUBLIC_BASE_URL="http://127.0.0.1:$PORT" "$img" >/dev/null
  local base="http://127.0.0.1:$PORT" t0=$SECONDS
  until curl -sf "$base/readyz" >/dev/null; do
    [ $((SECONDS - t0)) -lt 300 ] || { e logs --tail 40 voiced-ctr-serve; fail "/readyz"; }
    sleep 1
  done
  echo "/readyz after $((SECONDS - t0)) s: $(curl -s "$base/readyz")"
  local x="e exec voiced-ctr-serve voiced"
  $x admin account create --email ops@example.com --plan pro >/dev/null
  local key
  key=$($x admin --json key create --account ops@example.com --scopes voice:read,voice:generate | json key)
  $x admin voice create --account ops@example.com --name Narrator --engine kokoro --preset af_heart --language en >/dev/null
  speak_and_transcribe "$base" "$key" "The quick brown fox jumps over the lazy dog." image
  step "stop: SIGTERM, within the grace"
  t0=$SECONDS
  e stop -t 40 voiced-ctr-serve >/dev/null
  local code
  code=$(e inspect --format '{{.State.ExitCode}}' voiced-ctr-serve)
  echo "stopped in $((SECONDS - t0)) s, exit code $code"
  e logs --tail 5 voiced-ctr-serve 2>&1 | cut -c1-200
  [ "$code" = 0 ] || fail "exit code $code after stop"
  e rm voiced-ctr-serve >/dev/null
  e volume rm voiced-ctr-data >/dev/null
  echo "image size: $(e image inspect --format '{{.Size}}' "$img") bytes"
}

# speak_and_transcribe BASE KEY TEXT TAG: generate wav through BASE, wait, download the audio
# through BASE (its signed link, rebased), transcribe it back through BASE; prints the text.
speak_and_transcribe() {
  local base=$1 key=$2 text=$3 tag=$4 gen status audio
  gen=$(curl -sS --fail-with-body "$base/v1/speech" -H "x-api-key: $key" -H 'content-type: application/json' \
    -d "{\"text\":\"$text\",\"voice_name\":\"Narrator\",\"seed\":7,\"response_format\":\"wav\"}" | json id)
  status=$(wait_generation "$base" "$key" "$gen")
  [ "$status" = completed ] || fail "$gen: $status"
  audio=$(curl -sS --fail-with-body "$base/v1/generations/$gen" -H "x-api-key: $key" | json audio_url)
  curl -sS --fail-with-body -o "$WORK/$tag.wav" "$base/${audio#*://*/}"
  echo "speech $gen: $(stat -c %s "$WORK/$tag.wav") bytes of wav"
  { printf '{"audio":"'; base64 -w0 "$WORK/$tag.wav"; printf '"}'; } > "$WORK/$tag.json"
  local heard
  heard=$(curl -sS --fail-with-body "$base/v1/transcriptions" -H "x-api-key: $key" \
    -H 'content-type: application/json' -d @"$WORK/$tag.json" | json text)
  echo "transcribed back: $heard"
  grep -qi "brown fox" <<<"$heard" || fail "the transcription does not say what was spoken"
}

wait_generation() { # BASE KEY ID -> final status
  local status=generating n=0
  while [ "$status" = generating ] && [ $n -lt 600 ]; do
    sleep 1
    n=$((n + 1))
    status=$(curl -sS --fail-with-body "$1/v1/generations/$3" -H "x-api-key: $2" | json status)
  done
  echo "$status"
}

# --- 3. the scaled layout -----------------------------------------------------------------
metric() { # CONTAINER NAME-AND-LABELS -> value (0 if absent)
  local ip
  ip=$(e inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1")
  curl -s "http://$ip:9090/metrics" | awk -v m="$2" '$1 == m { v = $2 } END { print v + 0 }'
}
psql_() { e exec voiced-postgres psql -U voiced -d voiced -tA -c "$1"; }

run_compose() {
  local base="http://127.0.0.1:$PORT" t0
  # compose.yaml takes every secret from the environment (and refuses to start without
  # them): fresh random ones for this run, hex so that the password is URL-safe.
  rand_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
  VOICED_SIGNING_SECRET=$(rand_hex 32)
  POSTGRES_PASSWORD=$(rand_hex 24)
  AWS_ACCESS_KEY_ID=$(rand_hex 10)
  AWS_SECRET_ACCESS_KEY=$(rand_hex 20)
  export VOICED_SIGNING_SECRET POSTGRES_PASSWORD AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
  step "compose.yaml up (deploy/compose-podman.py), nginx on 127.0.0.1:$PORT"
  compose down >/dev/null 2>&1 || true
  t0=$SECONDS
  compose up --host-port "8080:$PORT"
  until curl -sf "$base/readyz" >/dev/null; do
    [ $((SECONDS - t0)) -lt 300 ] || { compose ps; fail "/readyz through nginx"; }
    sleep 1
  done
  echo "up and ready through nginx in $((SECONDS - t0)) s"
  compose ps

  step "a key, speech through nginx on both serve processes, transcription"
  local x="e exec voiced-serve-1 voiced" key key2
  $x admin account create --email ops@example.com --plan pro >/dev/null
  key=$($x admin --json key create --account ops@example.com --scopes voice:read,voice:generate | json key)
  key2=$($x admin --json key create --account ops@example.com --scopes voice:read,voice:generate | json key)
  $x admin voice create --account ops@example.com --name Narrator --engine kokoro --preset af_heart --language en >/dev/null
  speak_and_transcribe "$base" "$key" "The quick brown fox jumps over the lazy dog." compose
  local gens=() n
  for n in 1 2 3 4; do
    gens+=("$(curl -sS --fail-with-body "$base/v1/speech" -H "x-api-key: $key" -H 'content-type: application/json' \
      -d "{\"text\":\"Take number $n.\",\"voice_name\":\"Narrator\",\"response_format\":\"mp3\"}" | json id)")
  done
  for g in "${gens[@]}"; do
    [ "$(wait_generation "$base" "$key" "$g")" = completed ] || fail "$g"
  done
  local route='voiced_http_requests_total{route="/v1/speech",method="POST",status="202"}' a b
  a=$(metric voiced-serve-1 "$route"); b=$(metric voiced-serve-2 "$route")
  echo "POST /v1/speech answered 202: serve-1 $a, serve-2 $b"
  [ "${a%.*}" -ge 1 ] && [ "${b%.*}" -ge 1 ] || fail "speech did not reach both serve processes"

  step "audio from S3 through either serve process"
  local objects
  objects=$(curl -s "http://$(e inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' voiced-s3):5000/voiced-audio?list-type=2" \
    | grep -o '<Key>[^<]*</Key>' | wc -l)
  echo "objects in s3://voiced-audio: $objects; an audio_key in PostgreSQL: $(psql_ "select audio_key from generations where audio_key is not null limit 1")"
  [ "$objects" -ge 5 ] || fail "audio is not in S3"
  local url sums=()
  url=$(curl -sS --fail-with-body "$base/v1/generations/${gens[0]}" -H "x-api-key: $key" | json audio_url)
  local before1 before2
  before1=$(metric voiced-serve-1 'voiced_http_requests_total{route="/v1/audio/{generationId}",method="GET",status="200"}')
  before2=$(metric voiced-serve-2 'voiced_http_requests_total{route="/v1/audio/{generationId}",method="GET",status="200"}')
  for n in 1 2 3 4; do
    sums+=("$(curl -sS --fail-with-body "$base/${url#*://*/}" | sha256sum | cut -c1-16)")
  done
  echo "the same audio 4 times through nginx: ${sums[*]}"
  [ "$(printf '%s\n' "${sums[@]}" | sort -u | wc -l)" = 1 ] || fail "different bytes"
  a=$(metric voiced-serve-1 'voiced_http_requests_total{route="/v1/audio/{generationId}",method="GET",status="200"}')
  b=$(metric voiced-serve-2 'voiced_http_requests_total{route="/v1/audio/{generationId}",method="GET",status="200"}')
  echo "GET /v1/audio/{generationId} 200: serve-1 +$(python3 -c "print(int($a-$before1))"), serve-2 +$(python3 -c "print(int($b-$before2))")"

  step "the shared rate limit, exact across both serve processes (writes, a fresh key)"
  local header left first status
  header=$(curl -s -o /dev/null -D - "$base/v1/speech" -H "x-api-key: $key2" -H 'content-type: application/json' -d '{}' \
    | tr -d '\r' | grep -i '^ratelimit:')
  first=$(sed -n 's/.*"writes";r=\([0-9]*\);.*/\1/p' <<<"$header")
  echo "first write: $header"
  # The quota refills continuously (600 an hour: one every 6 s), so a write may find one
  # more than the last left; otherwise each write, whichever process takes it, counts one.
  local accepted=1 refills=0 t1=$SECONDS
  left=$first
  while [ "$left" -gt 0 ]; do
    header=$(curl -s -o /dev/null -D - "$base/v1/speech" -H "x-api-key: $key2" -H 'content-type: application/json' -d '{}' \
      | tr -d '\r' | grep -i '^ratelimit:')
    n=$(sed -n 's/.*"writes";r=\([0-9]*\);.*/\1/p' <<<"$header")
    accepted=$((accepted + 1))
    if [ "$n" = "$left" ]; then
      refills=$((refills + 1))
    else
      [ "$n" = $((left - 1)) ] || fail "after r=$left the next write says: $header"
    fi
    left=$n
  done
  [ "$refills" -le $(( (SECONDS - t1) / 6 + 1 )) ] \
    || fail "$refills refills in $((SECONDS - t1)) s: writes went uncounted"
  for n in 1 2; do
    status=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/speech" -H "x-api-key: $key2" -H 'content-type: application/json' -d '{}')
    [ "$status" = 429 ] || fail "write $((first + 1 + n)) answered $status"
  done
  a=$(metric voiced-serve-1 'voiced_rate_limit_refusals_total{policy="writes"}')
  b=$(metric voiced-serve-2 'voiced_rate_limit_refusals_total{policy="writes"}')
  echo "$accepted writes accepted in $((SECONDS - t1)) s through nginx, each counted once ($refills refills of one at 6 s each), the next 2 refused (429): refusals serve-1 $a, serve-2 $b"

  step "a worker killed mid-job; the other completes the generation"
  local long gen owner victim other t1
  long=$(python3 -c 'print(" ".join(["This sentence is spoken again and again so that the generation takes a while."] * 12))')
  gen=$(curl -sS --fail-with-body "$base/v1/speech" -H "x-api-key: $key" -H 'content-type: application/json' \
    -d "{\"text\":\"$long\",\"voice_name\":\"Narrator\",\"response_format\":\"mp3\"}" | json id)
  t1=$SECONDS
  until owner=$(psql_ "select lease_owner from generations where id = '$gen' and status = 'generating'") && [ -n "$owner" ]; do
    [ $((SECONDS - t1)) -lt 60 ] || fail "$gen was not claimed"
    sleep 0.2
  done
  victim=""
  for c in voiced-worker-1 voiced-worker-2; do
    [ "${owner%%:*}" = "$(e inspect --format '{{.Config.Hostname}}' "$c")" ] && victim=$c
  done
  [ -n "$victim" ] || fail "lease owner $owner is no worker container"
  other=voiced-worker-1; [ "$victim" = voiced-worker-1 ] && other=voiced-worker-2
  e kill "$victim" >/dev/null
  echo "$gen claimed by $owner ($victim); podman kill $victim after $((SECONDS - t1)) s"
  status=$(wait_generation "$base" "$key" "$gen")
  echo "$gen: $status $((SECONDS - t1)) s after submission; $(psql_ "select 'attempts ' || attempts || ', lease owner ' || coalesce(lease_owner, '-') from generations where id = '$gen'")"
  [ "$status" = completed ] || fail "$gen: $status"
  local lines
  lines=$(e logs "$other" 2>&1 | grep -c "$gen" || true)
  echo "completed by $other (hostname $(e inspect --format '{{.Config.Hostname}}' "$other")): $lines log lines name $gen"
  [ "$lines" -ge 1 ] || fail "$other's log does not name $gen"
  e start "$victim" >/dev/null

  step "stop everything with generations in flight; start again; none lost"
  local pending=()
  for n in 1 2 3; do
    pending+=("$(curl -sS --fail-with-body "$base/v1/speech" -H "x-api-key: $key" -H 'content-type: application/json' \
      -d "{\"text\":\"In flight number $n. $long\",\"voice_name\":\"Narrator\",\"response_format\":\"mp3\"}" | json id)")
  done
  sleep 2
  echo "before stop: $(psql_ "select string_agg(status || ' ' || c, ', ') from (select status, count(*) c from generations group by status) s")"
  t1=$SECONDS
  compose stop
  echo "everything stopped in $((SECONDS - t1)) s:"
  e ps -a --filter label=com.docker.compose.project=voiced --format '{{.Names}} {{.Status}}'
  t1=$SECONDS
  compose up --host-port "8080:$PORT"
  until curl -sf "$base/readyz" >/dev/null; do
    [ $((SECONDS - t1)) -lt 300 ] || fail "/readyz after restart"
    sleep 1
  done
  echo "started again in $((SECONDS - t1)) s"
  for g in "${pending[@]}"; do
    status=$(wait_generation "$base" "$key" "$g")
    echo "$g: $status"
    [ "$status" = completed ] || fail "$g: $status"
  done
  echo "after restart: $(psql_ "select string_agg(status || ' ' || c, ', ') from (select status, count(*) c from generations group by status) s")"
  [ "$(psql_ "select count(*) from generations where status <> 'completed'")" = 0 ] || fail "a generation is not completed"
  step "down"
  compose down >/dev/null 2>&1
  echo "compose run passed"
}

case $what in
  standins) standins ;;
  image) standins; build_image; check_image ;;
  check) check_image ;;
  compose) run_compose ;;
  all) standins; build_image; check_image; run_compose ;;
  *) echo "usage: $0 [all|standins|image|check|compose]" >&2; exit 2 ;;
esac
echo "container-test: $what passed"
