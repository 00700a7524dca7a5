#!/bin/sh
# The official image builds redis-server with protected mode off, so that other containers
# reach it whatever command a compose file gives; Debian's keeps it on, so say it here. Runs as
# the redis user (the official image drops root the same way).
set -eu
if [ "${1:-}" = redis-server ]; then
    shift
    exec setpriv --reuid redis --regid redis --init-groups redis-server --protected-mode no "$@"
fi
exec "$@"
