# Sourced by the scripts: caches live outside the checkout so that repeated runs reuse them.
export VOICED_CACHE="${VOICED_CACHE:-$HOME/.cache/voiced}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$VOICED_CACHE/target}"
export VOICED_MODELS_DIR="${VOICED_MODELS_DIR:-$VOICED_CACHE/models}"
# Queries are checked at compile time against the committed .sqlx data, no database needed.
export SQLX_OFFLINE="${SQLX_OFFLINE:-true}"
