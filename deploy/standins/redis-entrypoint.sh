#!/bin/sh
# The official image builds redis-server with protected mode off, so that other containers
# reach it whatever command a compose file gives; Debian's keeps it on, so say it here.
set -eu
if [ "${1:-}" = redis-server ]; then
    shift
    exec redis-server --protected-mode no "$@"
fi
exec "$@"
