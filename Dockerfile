# Multi-stage image (not built in CI: no container engine there). Build voiced, then a slim
# runtime with PostgreSQL binaries (embedded default), espeak-ng, and the models fetched at build
# time. Point VOICED_DATABASE_URL at your PostgreSQL to scale out.
FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends cmake pkg-config g++ python3 python3-pip \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# build.rs fetches the CTranslate2 library (PyPI wheel) into the models dir and links it.
ENV SQLX_OFFLINE=true CARGO_TARGET_DIR=/target VOICED_MODELS_DIR=/models
RUN cargo build --release --locked && cp /target/release/voiced /usr/local/bin/voiced \
    && mkdir -p /out/lib && cp -L /models/ctranslate2/*.so* /out/lib/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
        ca-certificates espeak-ng postgresql python3 python3-pip \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/voiced /usr/local/bin/voiced
# The binary's rpath includes $ORIGIN/../lib.
COPY --from=build /out/lib/ /usr/local/lib/
ENV VOICED_MODELS_DIR=/var/lib/voiced/models VOICED_DATA_DIR=/var/lib/voiced/data \
    VOICED_BIND=0.0.0.0:8080
# npm only for the fetch (`npm pack kokoro-js` carries Kokoro's voices); nothing runs Node after.
RUN apt-get update && apt-get install -y --no-install-recommends npm \
    && voiced models fetch all \
    && apt-get purge -y --auto-remove npm nodejs && rm -rf /var/lib/apt/lists/* /root/.npm
EXPOSE 8080
ENTRYPOINT ["voiced"]
CMD ["serve"]
