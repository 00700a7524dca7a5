#!/bin/sh
# The official image's contract, the part compose.yaml uses: a first start creates the cluster
# with POSTGRES_USER/POSTGRES_PASSWORD and the database POSTGRES_DB; every start runs postgres
# as the postgres user, listening on every address, as PID 1 (signals reach it).
set -eu
if [ "${1:-postgres}" = postgres ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
        user=${POSTGRES_USER:-postgres}
        pwfile=$(mktemp)
        printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" > "$pwfile"
        chown postgres "$pwfile"
        setpriv --reuid postgres --regid postgres --init-groups \
            initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
        rm -f "$pwfile"
        echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
        db=${POSTGRES_DB:-$user}
        if [ "$db" != postgres ]; then
            setpriv --reuid postgres --regid postgres --init-groups \
                postgres --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$db" OWNER "$user";
SQL
        fi
    fi
    shift || true
    exec setpriv --reuid postgres --regid postgres --init-groups \
        postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
