#!/usr/bin/env python3
"""Issue 36 item 8: a queued generation's `queue_position` at depth, the old count and the
function of migration 0026 side by side, in one database.

Needs a scratch PostgreSQL database URL (DATABASE_URL, empty): applies every migration, fills
ACCOUNTS accounts with QUEUED waiting generations (created over the last 10 minutes, spread over
the accounts), then times, server-side (EXPLAIN ANALYZE's execution time), POLLS evaluations of
each expression for the generation at position 1 and the one at position QUEUED - 1.

Run:
    DATABASE_URL=postgres://… python3 bench/queue_position.py [--queued 100000] [--polls 40]

Prints a markdown table of medians in ms. Nothing here asserts anything about speed.
"""

import argparse
import os
import re
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

OLD = """(SELECT count(*) FROM generations q
      WHERE q.status = 'generating'
        AND (q.lease_expires_at IS NULL OR q.lease_expires_at < now())
        AND (q.created_at, q.id) < (g.created_at, g.id))"""
NEW = "generation_queue_position(g.created_at, g.id, g.queue_seq)"


def psql(url, sql):
    return subprocess.run(
        ["psql", "-qAt", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
        check=True, capture_output=True, text=True,
    ).stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--queued", type=int, default=100000)
    parser.add_argument("--accounts", type=int, default=10000)
    parser.add_argument("--polls", type=int, default=40)
    args = parser.parse_args()
    url = os.environ["DATABASE_URL"]
    for migration in sorted((ROOT / "migrations").glob("*.sql")):
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-f", str(migration)],
                       check=True, capture_output=True)
    psql(url, f"""
        INSERT INTO accounts (id, email, plan, features) SELECT 'acct_' || n, n || '@bench.invalid', 'pro', ARRAY['speech']
            FROM generate_series(1, {args.accounts}) n;
        INSERT INTO voice_profiles (id, account_id, name, voice_type, engine, language)
            SELECT 'voice_' || n, 'acct_' || n, 'v', 'preset', 'kokoro', 'en'
            FROM generate_series(1, {args.accounts}) n;
        INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status, created_at)
            SELECT 'gen_' || lpad(n::text, 8, '0'), 'acct_' || (n % {args.accounts} + 1),
                   'voice_' || (n % {args.accounts} + 1), 'kokoro', 'x', 1, 'wav', 'generating',
                   now() - interval '10 minutes' + n * interval '1 millisecond'
            FROM generate_series(1, {args.queued}) n;
        ANALYZE;""")
    ids = {"1": "gen_00000002", f"{args.queued - 1}": f"gen_{args.queued:08d}"}
    rows = []
    for name, expr in [("count (before)", OLD), ("generation_queue_position (0026)", NEW)]:
        cells = []
        for position, gid in ids.items():
            times = []
            value = psql(url, f"SELECT {expr} FROM generations g WHERE g.id = '{gid}'").strip()
            # One session, as a server's pooled connection: what it plans once stays planned.
            script = f"EXPLAIN (ANALYZE, TIMING OFF) SELECT {expr} FROM generations g WHERE g.id = '{gid}';\n"
            plans = subprocess.run(
                ["psql", "-qAt", "-v", "ON_ERROR_STOP=1", url],
                input=script * (args.polls + 1), check=True, capture_output=True, text=True,
            ).stdout
            found = [float(t) for t in re.findall(r"Execution Time: ([0-9.]+) ms", plans)]
            times.extend(found[1:])  # the first plans what the session then reuses
            cells.append(f"{statistics.median(times):.3f} ms (answers {value})")
        rows.append((name, cells))
    print(f"| {args.queued} queued, {args.polls} polls | position 1 | position {args.queued - 1} |")
    print("|---|---|---|")
    for name, cells in rows:
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
