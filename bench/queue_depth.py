#!/usr/bin/env python3
"""Issue 28 item 2: the queue's claim at depth, main's claim and this tree's side by side.

Starts a scratch PostgreSQL cluster (initdb under a temporary directory, Unix socket only), and
for each depth creates two databases:
- `main`: this tree's migrations without 0023 (the schema main's claim reads: view
  `queue_served`), claimed with main's SQL (`--claim main` of examples/queue_claim.rs, the
  statement of `store::queue::claim` at 2506e5a, verbatim);
- `store`: every migration, claimed with `voiced::store::queue::claim_next` itself.
Both are filled the same way (INSERT ... SELECT generate_series): ACCOUNTS accounts with one
preset voice each, QUEUED generations waiting (spread evenly over the accounts, created over the
last 10 minutes) and STARTED generations started and completed within the last hour; the `store`
database's `queue_accounts` rows (made by its trigger) then get their last service as
migration 0023 reads it from such rows. Then
examples/queue_claim.rs claims with 1 and with 8 concurrent claimers (each its own connection,
every claim committed; after each claim, untimed, the job completes and a new one is queued for
its account, so the depth holds).

Run (as root: the cluster runs as user postgres):
    cargo build --example queue_claim
    flock /tmp/w/bench.lock python3 bench/queue_depth.py [--claims 200] [--depths 1000,10000,100000]

Prints a markdown table: median and p99 claim in ms per depth, claimers and claim.
Nothing here asserts anything about speed.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/voiced/target"))
EXAMPLE = TARGET / "debug/examples/queue_claim"
PORT = 18531

# (queued, accounts, started in the last hour): the shapes at 1 k, 10 k and 100 k.
SHAPES = {
    1000: (1000, 100, 3000),
    10000: (10000, 1000, 30000),
    100000: (100000, 10000, 300000),
}


os.environ.setdefault("PGOPTIONS", "-c client_min_messages=warning")


def run(*cmd, user=None, **kw):
    if user:
        cmd = ("runuser", "-u", user, "--") + cmd
    return subprocess.run(cmd, check=True, **kw)


class Cluster:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="voiced-queue-depth-"))
        shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", user="postgres",
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        opts = f"-k {self.dir} -c listen_addresses= -p {PORT} -c fsync=off"
        run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w",
            "start", user="postgres", stdout=subprocess.DEVNULL)

    def url(self, db):
        return f"postgres://postgres@localhost:{PORT}/{db}?host={self.dir}"

    def psql(self, db, sql=None, file=None):
        cmd = ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.dir), "-p", str(PORT),
               "-U", "postgres", db]
        cmd += ["-f", str(file)] if file else ["-c", sql]
        run(*cmd, stdout=subprocess.DEVNULL)

    def stop(self):
        run("pg_ctl", "-D", str(self.data), "-m", "fast", "stop", user="postgres",
            stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir)


def fill(cluster, db, store, queued, accounts, started):
    cluster.psql("postgres", f"DROP DATABASE IF EXISTS {db}")
    cluster.psql("postgres", f"CREATE DATABASE {db}")
    for f in sorted((ROOT / "migrations").glob("*.sql")):
        if not store and f.name >= "0023":
            continue
        cluster.psql(db, file=f)
    cluster.psql(db, f"""
        INSERT INTO accounts (id, email, plan, features)
        SELECT 'acct_' || i, 'a' || i || '@bench', 'pro', '{{}}' FROM generate_series(1, {accounts}) i;
        INSERT INTO voice_profiles (id, account_id, name, language, voice_type, engine, preset)
        SELECT 'voice_' || i, 'acct_' || i, 'Narrator', 'en', 'preset', 'kokoro', 'af_heart'
        FROM generate_series(1, {accounts}) i;
        INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status,
                                 attempts, created_at, started_at, finished_at, audio_key)
        SELECT 'done_' || i, 'acct_' || (i % {accounts} + 1), 'voice_' || (i % {accounts} + 1),
               'kokoro', 'Hi.', 1, 'wav', 'completed', 1,
               now() - interval '59 minutes' + (i * interval '58 minutes') / {started},
               now() - interval '59 minutes' + (i * interval '58 minutes') / {started},
               now() - interval '59 minutes' + (i * interval '58 minutes') / {started}, 'bench'
        FROM generate_series(1, {started}) i;
        INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status,
                                 created_at)
        SELECT 'queued_' || i, 'acct_' || (i % {accounts} + 1), 'voice_' || (i % {accounts} + 1),
               'kokoro', 'Hi.', 1, 'wav', 'generating',
               now() - interval '10 minutes' + (i * interval '9 minutes') / {queued}
        FROM generate_series(1, {queued}) i;
    """)
    if store:
        # Trigger generations_queue_turn put each account in the order as its rows went in;
        # its last service, as migration 0023 reads it from such rows.
        cluster.psql(db, """
            UPDATE queue_accounts q SET last_served_at = s.last_started
            FROM (SELECT account_id, max(started_at) AS last_started FROM generations
                  WHERE started_at > now() - interval '1 hour' GROUP BY account_id) s
            WHERE s.account_id = q.account_id;
        """)
    cluster.psql(db, "VACUUM ANALYZE")


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def claims(cluster, db, store, claimers, count):
    out = subprocess.run(
        [str(EXAMPLE), "--database-url", cluster.url(db), "--claim", "store" if store else "main",
         "--claimers", str(claimers), "--claims", str(count)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["claims_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=200,
                        help="claims per claimer with this tree's claim (main's: a fifth, at least 10)")
    parser.add_argument("--depths", default="1000,10000,100000")
    args = parser.parse_args()
    if not EXAMPLE.exists():
        raise SystemExit(f"{EXAMPLE} is missing: cargo build --example queue_claim")
    print("load before:", os.getloadavg())
    cluster = Cluster()
    rows = []
    try:
        for depth in [int(d) for d in args.depths.split(",")]:
            queued, accounts, started = SHAPES[depth]
            for store in (False, True):
                db = "store" if store else "main"
                t0 = time.time()
                fill(cluster, db, store, queued, accounts, started)
                fill_s = time.time() - t0
                for claimers in (1, 8):
                    count = args.claims if store else max(10, args.claims // 5)
                    ms = claims(cluster, db, store, claimers, count)
                    rows.append((queued, accounts, started, claimers, db, len(ms),
                                 statistics.median(ms), pct(ms, 99)))
                    print(f"  {queued} queued, {claimers} claimers, {db}: median "
                          f"{rows[-1][6]:.2f} ms, p99 {rows[-1][7]:.2f} ms "
                          f"({len(ms)} claims; filled in {fill_s:.0f} s)", flush=True)
    finally:
        cluster.stop()
    print("load after:", os.getloadavg())
    print()
    print("| queued | accounts | started in the last hour | claimers | claim | claims "
          "| median | p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for q, a, s, c, db, n, med, p99 in rows:
        name = "main (view `queue_served`)" if db == "main" else "this tree (`queue_accounts`)"
        print(f"| {q:,} | {a:,} | {s:,} | {c} | {name} | {n} | {med:.2f} ms | {p99:.2f} ms |")


if __name__ == "__main__":
    main()
