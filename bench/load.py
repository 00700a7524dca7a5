#!/usr/bin/env python3
"""Load benchmark (issue 9): many clients, a realistic mix, keys over many accounts.

One `voiced serve` (no in-process workers) and WORKERS `voiced worker` processes share an
embedded PostgreSQL in a temporary data dir. CLIENTS closed-loop clients run for DURATION
seconds: 80 % reads (voices, captures, a recent generation), 15 % asynchronous speech (short
sentences), 5 % transcription of a short clip, with keys spread over ACCOUNTS accounts. Then the
queue is drained and every accepted generation is checked to have completed, exactly once.

Prints throughput per kind, p50/p95/p99 latency, answers by status and code, and the queue's
depth over time. KILL_EVERY=N SIGKILLs one worker every N seconds (and restarts it).

Usage: python3 bench/load.py [BINARY]   (default: the release build)
Environment: DURATION (180), CLIENTS (200), ACCOUNTS (20), WORKERS (2), KILL_EVERY (0),
DRAIN_LIMIT (600 s); any VOICED_* setting is passed to the processes (e.g.
VOICED_MAX_PENDING_PER_ACCOUNT to bound the queue the drain must empty).
"""
import base64
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/voiced/target/release/voiced")
DURATION = float(os.environ.get("DURATION", "180"))
CLIENTS = int(os.environ.get("CLIENTS", "200"))
ACCOUNTS = int(os.environ.get("ACCOUNTS", "20"))
WORKERS = int(os.environ.get("WORKERS", "2"))
KILL_EVERY = float(os.environ.get("KILL_EVERY", "0"))
DRAIN_LIMIT = float(os.environ.get("DRAIN_LIMIT", "600"))
SENTENCES = ["Hello there.", "The meeting starts at nine.", "Thanks for calling.", "See you soon.",
             "Your order has shipped.", "Please hold the line."]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


class Bench:
    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="voiced-load-")
        os.chmod(self.work, 0o755)
        self.port = free_port()
        self.env = dict(os.environ, VOICED_DATA_DIR=f"{self.work}/data", VOICED_BIND=f"127.0.0.1:{self.port}",
                        VOICED_PUBLIC_BASE_URL=f"http://127.0.0.1:{self.port}", VOICED_LOG="error",
                        VOICED_WORKERS="0", VOICED_LEASE_SECS="5",
                        VOICED_RATE_LIMIT_WRITES_PER_HOUR="100000000",
                        VOICED_RATE_LIMIT_READS_PER_MINUTE="100000000")
        for name in ("VOICED_DATABASE_URL", "DATABASE_URL"):
            self.env.pop(name, None)
        self.lock = threading.Lock()
        self.latency = defaultdict(list)
        self.answers = Counter()
        self.accepted = []
        self.depth = []
        self.kills = 0

    def admin(self, *args):
        out = subprocess.run([BIN, "admin", "--json", *args], env=self.env, check=True, capture_output=True)
        return json.loads(out.stdout)

    def psql(self, sql):
        base = self.env["VOICED_DATA_DIR"]
        location = os.path.join(base, "pg.location")
        if os.path.exists(location):
            base = open(location).read().strip()
        url = f"postgresql:///voiced?host={base}/pg-socket&user=postgres"
        return subprocess.run(["psql", "-At", url, "-c", sql], capture_output=True, text=True).stdout.strip()

    def request(self, conn, method, path, key, body=None):
        started = time.monotonic()
        headers = {"x-api-key": key}
        if body is not None:
            headers["content-type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        elapsed = time.monotonic() - started
        code = "ok"
        if response.status >= 400:
            try:
                code = json.loads(data).get("code", "?")
            except ValueError:
                code = "?"
        return response.status, code, data, elapsed

    def client(self, keys, clip, deadline, recent):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        rng = random.Random()
        while time.monotonic() < deadline:
            key = rng.choice(keys)
            roll = rng.random()
            try:
                if roll < 0.80:
                    kind = "read"
                    choice = rng.random()
                    if choice < 0.4:
                        path = "/v1/voices"
                    elif choice < 0.8 or not recent:
                        path = "/v1/captures?limit=10"
                    else:
                        gen_id, key = rng.choice(recent[-200:])
                        path = f"/v1/generations/{gen_id}"
                    status, code, data, elapsed = self.request(conn, "GET", path, key)
                elif roll < 0.95:
                    kind = "speech"
                    body = json.dumps({"text": rng.choice(SENTENCES), "voice_name": "Narrator"})
                    status, code, data, elapsed = self.request(conn, "POST", "/v1/speech", key, body)
                    if status == 202:
                        gen_id = json.loads(data)["id"]
                        with self.lock:
                            self.accepted.append(gen_id)
                            recent.append((gen_id, key))
                else:
                    kind = "transcription"
                    status, code, data, elapsed = self.request(conn, "POST", "/v1/transcriptions", key, clip)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                with self.lock:
                    self.answers[("?", "connection_error")] += 1
                continue
            with self.lock:
                self.latency[kind].append(elapsed)
                self.answers[(kind, status, code)] += 1

    def run(self):
        keys = []
        for n in range(ACCOUNTS):
            account = self.admin("account", "create", "--email", f"load{n}@example.com", "--plan", "pro")["id"]
            keys.append(self.admin("key", "create", "--account", account, "--scopes", "voice:read,voice:generate")["key"])
            self.admin("voice", "create", "--account", account, "--name", "Narrator", "--engine", "kokoro",
                       "--preset", "jf_alpha", "--language", "en")
        wav = os.path.join(self.work, "clip.wav")
        subprocess.run(["espeak-ng", "-w", wav, "Please call me back tomorrow morning."], check=True)
        clip = json.dumps({"audio": base64.b64encode(open(wav, "rb").read()).decode()})

        server = subprocess.Popen([BIN, "serve"], env=self.env)
        workers = [subprocess.Popen([BIN, "worker"], env=self.env) for _ in range(WORKERS)]
        try:
            for _ in range(600):
                try:
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            started = time.monotonic()
            deadline = started + DURATION
            recent = []
            threads = [threading.Thread(target=self.client, args=(keys, clip, deadline, recent), daemon=True)
                       for _ in range(CLIENTS)]
            for t in threads:
                t.start()
            next_sample, next_kill = started, started + KILL_EVERY
            while any(t.is_alive() for t in threads):
                now = time.monotonic()
                if now >= next_sample:
                    depth = self.psql("SELECT count(*) FROM generations WHERE status = 'generating'")
                    self.depth.append((now - started, depth))
                    next_sample += 10
                if KILL_EVERY and now >= next_kill and now < deadline:
                    victim = self.kills % len(workers)
                    workers[victim].kill()
                    workers[victim].wait()
                    workers[victim] = subprocess.Popen([BIN, "worker"], env=self.env)
                    self.kills += 1
                    next_kill += KILL_EVERY
                time.sleep(0.2)
            elapsed = time.monotonic() - started
            drain_started = time.monotonic()
            while True:
                pending = self.psql("SELECT count(*) FROM generations WHERE status = 'generating'")
                if pending == "0":
                    break
                if time.monotonic() - drain_started > DRAIN_LIMIT:
                    print(f"queue not drained after {DRAIN_LIMIT:.0f} s: {pending} pending")
                    break
                time.sleep(2)
            drain = time.monotonic() - drain_started
            ids = ",".join(f"'{i}'" for i in self.accepted) or "''"
            statuses = self.psql(f"SELECT status || ':' || count(*) FROM generations WHERE id IN ({ids}) GROUP BY status")
            charged = self.psql(f"SELECT count(*) FROM usage_ledger WHERE generation_id IN ({ids})")
            doubles = self.psql("SELECT count(*) FROM (SELECT generation_id FROM usage_ledger GROUP BY 1 HAVING count(*) > 1) d")
        finally:
            for w in workers:
                w.terminate()
                w.wait()
            server.terminate()
            server.wait()
            shutil.rmtree(self.work, ignore_errors=True)

        print(f"load: {CLIENTS} clients, {ACCOUNTS} accounts, {elapsed:.0f} s, {WORKERS} workers, "
              f"kill every {KILL_EVERY or '-'} s ({self.kills} kills)")
        print(f"{'kind':14} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
        for kind in ("read", "speech", "transcription"):
            values = self.latency[kind]
            print(f"{kind:14} {len(values):9d} {len(values) / elapsed:8.1f} {percentile(values, 50) * 1000:8.1f} "
                  f"{percentile(values, 95) * 1000:8.1f} {percentile(values, 99) * 1000:8.1f}")
        print("answers:")
        for answer, n in sorted(self.answers.items(), key=str):
            print(f"  {n:8d} × {answer}")
        print("queue depth (s: generating): " + ", ".join(f"{t:.0f}: {d}" for t, d in self.depth))
        print(f"accepted generations: {len(self.accepted)}; after a {drain:.0f} s drain: {statuses}; "
              f"charged {charged}; charged twice: {doubles}")


if __name__ == "__main__":
    Bench().run()
