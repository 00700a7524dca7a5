# Multi-stage image: build voiced, then a slim runtime with PostgreSQL client libraries,
# espeak-ng and the models fetched at build time. Run it with VOICED_DATABASE_URL pointing at
# your PostgreSQL (the embedded default also works: the image ships PostgreSQL binaries).
FROM rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends cmake pkg-config g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ENV SQLX_OFFLINE=true CARGO_TARGET_DIR=/target
RUN cargo build --release --locked && cp /target/release/voiced /usr/local/bin/voiced

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
        ca-certificates espeak-ng postgresql python3 python3-pip libgomp1 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/voiced /usr/local/bin/voiced
COPY scripts /opt/voiced/scripts
ENV VOICED_MODELS_DIR=/var/lib/voiced/models VOICED_DATA_DIR=/var/lib/voiced/data \
    VOICED_BIND=0.0.0.0:8080
RUN voiced models fetch all
EXPOSE 8080
ENTRYPOINT ["voiced"]
CMD ["serve"]
