#!/usr/bin/env python3
"""Issue 28 item 3: generations claimed and completed per second without the model.

`voiced worker` processes (one worker each) built with the bench-only cargo feature
`bench-engine` and run with VOICED_BENCH_INSTANT_ENGINE=1: every engine returns the same
0.25 s clip at once (src/engines/instant.rs), so what is timed is the pipeline around the model:
claim (`store::queue::claim_next`), lease, encode (mp3), store the audio, complete, charge,
notify. The shipped binary has no such engine (no shipped or CI build enables the feature).

A scratch PostgreSQL cluster (initdb, Unix socket, default durability settings: fsync on, with
pg_stat_statements) gets a fresh database per run, migrated by `voiced migrate`, with 100
accounts and one preset voice each. The workers start and idle; then JOBS generations are queued
in one transaction (as `store::queue::enqueue` leaves them: rows `generating` and their accounts
in `queue_accounts` (the trigger of migration 0023 does it; the explicit insert serves builds
before it), one `voiced_jobs` notification), and the run ends when none is left
generating. Jobs/s = JOBS / (last finished_at - the queueing transaction's now()).

CPU per job: the cluster's postmaster and its children (live backends' utime+stime from /proc,
plus the postmaster's cutime+cstime for exited ones), the worker processes', and moto's for the
S3 setting; all / JOBS. pg_stat_statements lists the statements that cost the database most.

Blob stores: `postgres` (the default: audio in table `blobs`) and `s3` (moto in server mode,
as tests/process/scale.rs starts it: ~/.cache/voiced/venv-moto/bin/moto_server).

Run (as root: the cluster runs as user postgres):
    cargo build --release --bin voiced --features bench-engine
    flock /tmp/w/bench.lock python3 bench/jobs_per_second.py [--jobs 2000] [--workers 1,2,4]

Nothing here asserts anything about speed.
"""

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("VOICED_CACHE", Path.home() / ".cache/voiced"))
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", CACHE / "target"))
BIN = Path(os.environ.get("VOICED_BIN", TARGET / "release/voiced"))
MOTO = Path(os.environ.get("VOICED_MOTO_SERVER", CACHE / "venv-moto/bin/moto_server"))
PG_PORT = 18541
MOTO_PORT = 18542
ACCOUNTS = 100
TICKS = os.sysconf("SC_CLK_TCK")

os.environ.setdefault("PGOPTIONS", "-c client_min_messages=warning")


def run(*cmd, user=None, **kw):
    if user:
        cmd = ("runuser", "-u", user, "--") + cmd
    return subprocess.run(cmd, check=True, **kw)


def cpu_secs(pid, children=False):
    """utime+stime (and, with `children`, the reaped children's) of a process, seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICKS


def children_of(pid):
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(stat[1]) == pid:
                out.append(int(entry.name))
    return out


class Cluster:
    def __init__(self, extra=""):
        self.dir = Path(tempfile.mkdtemp(prefix="voiced-jobs-"))
        shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", user="postgres",
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        opts = (f"-k {self.dir} -c listen_addresses= -p {PG_PORT} -c max_connections=200 "
                f"-c shared_preload_libraries=pg_stat_statements {extra}")
        run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w",
            "start", user="postgres", stdout=subprocess.DEVNULL)
        self.postmaster = int((self.data / "postmaster.pid").read_text().split()[0])

    def url(self, db):
        return f"postgres://postgres@localhost:{PG_PORT}/{db}?host={self.dir}"

    def psql(self, db, sql):
        return subprocess.run(
            ["psql", "-qAt", "-v", "ON_ERROR_STOP=1", "-h", str(self.dir), "-p", str(PG_PORT),
             "-U", "postgres", db, "-c", sql],
            check=True, capture_output=True, text=True).stdout.strip()

    def cpu(self):
        return cpu_secs(self.postmaster, children=True) + sum(
            cpu_secs(p) for p in children_of(self.postmaster))

    def stop(self):
        run("pg_ctl", "-D", str(self.data), "-m", "fast", "stop", user="postgres",
            stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir)


class Moto:
    def __init__(self):
        self.child = subprocess.Popen(
            [str(MOTO), "-H", "127.0.0.1", "-p", str(MOTO_PORT)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{MOTO_PORT}"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)

    def bucket(self, name):
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request).read()

    def env(self, bucket):
        return {
            "VOICED_BLOB_STORE": f"s3://{bucket}/audio",
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
        }

    def stop(self):
        self.child.terminate()
        self.child.wait()


def one_run(cluster, moto, workers, jobs, tmp):
    db = f"jobs_{'s3' if moto else 'pg'}_{workers}"
    cluster.psql("postgres", f"DROP DATABASE IF EXISTS {db}")
    cluster.psql("postgres", f"CREATE DATABASE {db}")
    env = dict(os.environ)
    env.update({
        "VOICED_DATABASE_URL": cluster.url(db),
        "VOICED_MODELS_DIR": str(tmp / "no-models"),
        "VOICED_DATA_DIR": str(tmp / "data"),
        "VOICED_BENCH_INSTANT_ENGINE": "1",
        "VOICED_LOG": "info",
    })
    (tmp / "no-models").mkdir(exist_ok=True)
    if moto:
        bucket = f"bench-{workers}"
        moto.bucket(bucket)
        env.update(moto.env(bucket))
    run(str(BIN), "migrate", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cluster.psql(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    cluster.psql(db, f"""
        INSERT INTO accounts (id, email, plan, features)
        SELECT 'acct_' || i, 'a' || i || '@bench', 'pro', '{{}}' FROM generate_series(1, {ACCOUNTS}) i;
        INSERT INTO voice_profiles (id, account_id, name, language, voice_type, engine, preset)
        SELECT 'voice_' || i, 'acct_' || i, 'Narrator', 'en', 'preset', 'kokoro', 'af_heart'
        FROM generate_series(1, {ACCOUNTS}) i;
    """)
    logs, procs = [], []
    for i in range(workers):
        log = open(tmp / f"{db}-worker{i}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen([str(BIN), "worker", "--count", "1"], env=env,
                                      stdout=log, stderr=subprocess.STDOUT))
    deadline = time.time() + 120
    while sum("worker started" in (tmp / f"{db}-worker{i}.log").read_text()
              for i in range(workers)) < workers:
        if time.time() > deadline or any(p.poll() is not None for p in procs):
            raise SystemExit(f"workers did not start; see {tmp}")
        time.sleep(0.2)
    time.sleep(1)
    cluster.psql(db, "SELECT pg_stat_statements_reset()")
    db0, w0 = cluster.cpu(), sum(cpu_secs(p.pid) for p in procs)
    m0 = cpu_secs(moto.child.pid) if moto else 0.0
    queued_at = cluster.psql(db, f"""
        BEGIN;
        INSERT INTO generations (id, account_id, voice_id, engine, text, seed, format, status,
                                 estimated_ms)
        SELECT 'gen_' || i, 'acct_' || (i % {ACCOUNTS} + 1), 'voice_' || (i % {ACCOUNTS} + 1),
               'kokoro', 'Hi.', 1, 'mp3', 'generating', 250
        FROM generate_series(1, {jobs}) i;
        INSERT INTO queue_accounts (account_id) SELECT id FROM accounts ON CONFLICT DO NOTHING;
        SELECT pg_notify('voiced_jobs', 'bench');
        SELECT extract(epoch FROM now());
        COMMIT;
    """).splitlines()[-1]
    while int(cluster.psql(db, "SELECT count(*) FROM generations WHERE status = 'generating'")):
        time.sleep(0.25)
    db1, w1 = cluster.cpu(), sum(cpu_secs(p.pid) for p in procs)
    m1 = cpu_secs(moto.child.pid) if moto else 0.0
    done, failed, last = cluster.psql(db, """
        SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'),
               extract(epoch FROM max(finished_at)) FROM generations""").split("|")
    elapsed = float(last) - float(queued_at)
    top = cluster.psql(db, f"""
        SELECT round(calls::numeric / {jobs}, 2) || '|' || round((total_exec_time / {jobs})::numeric, 3)
               || '|' || regexp_replace(left(query, 90), '\\s+', ' ', 'g')
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{db}')
        ORDER BY total_exec_time DESC LIMIT 12""")
    calls = cluster.psql(db, f"""
        SELECT round(sum(calls)::numeric / {jobs}, 1), round((sum(total_exec_time) / {jobs})::numeric, 3)
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{db}')""")
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait()
    for log in logs:
        log.close()
    return {
        "workers": workers, "store": "s3" if moto else "postgres", "completed": int(done),
        "failed": int(failed), "secs": elapsed, "jobs_per_s": int(done) / elapsed,
        "db_cpu_ms": (db1 - db0) * 1000 / jobs, "worker_cpu_ms": (w1 - w0) * 1000 / jobs,
        "moto_cpu_ms": (m1 - m0) * 1000 / jobs, "top": top, "calls": calls,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--stores", default="postgres,s3")
    parser.add_argument("--pg-options", default="",
                        help="more server settings, e.g. '-c synchronous_commit=off' (a diagnostic)")
    args = parser.parse_args()
    if not BIN.exists():
        raise SystemExit(f"{BIN} is missing: cargo build --release --bin voiced --features bench-engine")
    print("load before:", os.getloadavg(), flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="voiced-jobs-run-"))
    cluster = Cluster(args.pg_options)
    moto = None
    results = []
    try:
        for store in args.stores.split(","):
            if store == "s3" and moto is None:
                moto = Moto()
            for workers in [int(w) for w in args.workers.split(",")]:
                r = one_run(cluster, moto if store == "s3" else None, workers, args.jobs, tmp)
                results.append(r)
                print(f"  {r['store']}, {workers} workers: {r['jobs_per_s']:.0f} jobs/s "
                      f"({r['completed']} completed, {r['failed']} failed in {r['secs']:.1f} s); "
                      f"database CPU {r['db_cpu_ms']:.2f} ms/job, workers {r['worker_cpu_ms']:.2f} "
                      f"ms/job, moto {r['moto_cpu_ms']:.2f} ms/job; statements per job, "
                      f"execution ms per job: {r['calls']}", flush=True)
                print("    calls/job | exec ms/job | statement")
                for line in r["top"].splitlines():
                    print("    " + line.replace("|", " | ", 2))
    finally:
        if moto:
            moto.stop()
        cluster.stop()
    print("load after:", os.getloadavg())
    print()
    print("| blob store | workers | jobs | jobs/s | database CPU per job | workers' CPU per job "
          "| moto CPU per job | statements per job |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        moto_cpu = f"{r['moto_cpu_ms']:.2f} ms" if r["store"] == "s3" else "–"
        print(f"| {r['store']} | {r['workers']} | {r['completed']} | {r['jobs_per_s']:.0f} "
              f"| {r['db_cpu_ms']:.2f} ms | {r['worker_cpu_ms']:.2f} ms | {moto_cpu} "
              f"| {r['calls'].split('|')[0]} |")


if __name__ == "__main__":
    main()
