#!/usr/bin/env python3
"""Issue 39 (the scaled layout): time to the first audio byte of POST /v1/audio/speech when the
generation runs in the serve process itself, against a serve process with no engine threads and
a `voiced worker` process whose audio crosses over through Redis (`worker::relay`), side by side
in one run.

- one process: `voiced serve` with one generation worker (`VOICED_WORKERS=1`), no Redis;
- across processes: `voiced serve` with `VOICED_WORKERS=0` and `voiced worker --count 1`, both
  with `VOICED_REDIS_URL` on one Redis.

Both layouts run at once on one PostgreSQL server, each on a database of its own (so that
neither's workers claim the other's generations), with the same settings otherwise; requests go
one at a time, the order of the two layouts flipping every round, the same text and seed each
time. Reported: median and p95 of the time to the first body byte and to the last, and the
ratio across/one of the medians (target: first audio across ≤ 1.3 × in one process).

PostgreSQL: a private cluster under a temp dir (`initdb` from /usr/lib/postgresql/*/bin, run as
`postgres` when this runs as root), or --database-url (a server where databases may be created).
Redis: a private `redis-server` on a unix socket (Debian's package, scripts/install-deps.sh).

Run: python3 bench/relay_first_audio.py [--rounds 20] [--format wav] [--bin PATH]
(VOICED_BIN or --bin picks the build; the default is $CARGO_TARGET_DIR/release/voiced).

The compose layout (compose.yaml: serve + worker + PostgreSQL + Redis as containers) is measured
the same way with --compose BASE_ONE,BASE_ACROSS: two running deployments' base URLs (one
without Redis and with workers in serve, one scaled) and --keys KEY_ONE,KEY_ACROSS (a key of
each, each account with a voice named "bench"); the script then starts nothing.
"""

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import BIN, MODELS, http, http_stream, median, pct  # noqa: E402

TEXT = (
    "The weather was cold and windy this morning, so we stayed inside and read the newspaper. "
    "In the afternoon the sun came out, and we walked to the market to buy bread and apples. "
    "On the way home we met an old friend, who told us about her trip to the mountains."
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, within=180):
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up")


class Postgres:
    """A private cluster (or --database-url's server)."""

    def __init__(self, work: Path, url: str | None):
        self.proc_dir = None
        if url:
            self.base = url.rsplit("/", 1)[0]
            self.query = ""
            return
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        assert bins, "no PostgreSQL server binaries (scripts/install-deps.sh)"
        bindir = Path(bins[-1]).parent
        self.proc_dir = work / "pg"
        self.proc_dir.mkdir()
        as_root = os.geteuid() == 0
        if as_root:
            shutil.chown(self.proc_dir, "postgres")
        self.port = free_port()
        self.pg_ctl = bindir / "pg_ctl"

        def run(*args):
            command = [str(a) for a in args]
            if as_root:
                command = ["su", "postgres", "-c", " ".join(command)]
            subprocess.run(command, check=True, capture_output=True)

        self.run = run
        run(bindir / "initdb", "-D", self.proc_dir / "data", "-A", "trust", "-U", "postgres")
        run(self.pg_ctl, "-D", self.proc_dir / "data", "-o",
            f"'-p {self.port} -k {self.proc_dir} -c max_connections=200'",
            "-l", self.proc_dir / "log", "-w", "start")
        self.base = f"postgres://postgres@localhost:{self.port}"
        self.query = f"?host={self.proc_dir}"

    def create(self, name: str) -> str:
        admin = f"{self.base}/postgres{self.query}"
        quiet = dict(os.environ, PGOPTIONS="-c client_min_messages=warning")
        for statement in (f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}"):
            subprocess.run(["psql", admin, "-qc", statement], check=True, env=quiet)
        return f"{self.base}/{name}{self.query}"

    def stop(self):
        if self.proc_dir:
            self.run(self.pg_ctl, "-D", self.proc_dir / "data", "-m", "fast", "stop")


class Layout:
    """One deployment: a serve process (and a worker process when scaled), its database, one
    account, key and voice."""

    def __init__(self, name, binary, work, database_url, redis_url=None):
        self.name, self.binary = name, binary
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = dict(
            os.environ,
            VOICED_DATABASE_URL=database_url,
            VOICED_BIND=f"127.0.0.1:{self.port}",
            VOICED_PUBLIC_BASE_URL=self.base,
            VOICED_SIGNING_SECRET="bench-signing-secret-bench-signing-secret",
            VOICED_MODELS_DIR=str(MODELS),
            VOICED_WHISPER_MODEL="whisper-tiny.en",
            VOICED_RATE_LIMIT_READS_PER_MINUTE="100000000",
            VOICED_RATE_LIMIT_WRITES_PER_HOUR="100000000",
            VOICED_LOG="warn",
        )
        if redis_url:
            self.env["VOICED_REDIS_URL"] = redis_url
        self.logs = open(work / f"{name}.log", "w")
        self.procs = []
        subprocess.run([binary, "migrate"], env=self.env, check=True, capture_output=True)
        account = self.admin("account", "create", "--email", f"{name}@example.com",
                             "--plan", "pro")["id"]
        self.key = self.admin("key", "create", "--account", account,
                              "--scopes", "voice:read,voice:generate")["key"]
        self.admin("voice", "create", "--account", account, "--name", "bench",
                   "--engine", "kokoro", "--preset", "af_heart", "--language", "en")
        scaled = redis_url is not None
        self.spawn([binary, "serve"], VOICED_WORKERS="0" if scaled else "1")
        if scaled:
            self.spawn([binary, "worker", "--count", "1"])
        wait_for(f"{name}'s serve", lambda: http("GET", self.base + "/readyz", timeout=2)[0] == 200)

    def admin(self, *args) -> dict:
        out = subprocess.run([self.binary, "admin", "--json", *args], env=self.env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    def spawn(self, command, **env):
        self.procs.append(subprocess.Popen(command, env=dict(self.env, **env), stdout=self.logs,
                                           stderr=subprocess.STDOUT))

    def stop(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


class Remote:
    """A deployment started elsewhere (--compose)."""

    def __init__(self, name, base, key):
        self.name, self.base, self.key = name, base.rstrip("/"), key

    def stop(self):
        pass


def speak(layout, fmt):
    status, body, first, last = http_stream(
        "POST", layout.base + "/v1/audio/speech",
        {"model": "kokoro", "input": TEXT, "voice": "bench", "response_format": fmt, "seed": 1},
        {"authorization": f"Bearer {layout.key}"})
    assert status == 200, (layout.name, status, body[:300])
    return first, last, len(body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--format", default="wav")
    parser.add_argument("--bin", default=os.environ.get("VOICED_BIN", str(BIN)))
    parser.add_argument("--database-url")
    parser.add_argument("--compose", help="BASE_ONE,BASE_ACROSS of running deployments")
    parser.add_argument("--keys", help="KEY_ONE,KEY_ACROSS: an API key of each --compose deployment")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="relay-bench."))
    os.chmod(work, 0o755)
    pg = redis = None
    layouts = []
    try:
        if args.compose:
            one, across = args.compose.split(",")
            key_one, key_across = args.keys.split(",")
            layouts = [Remote("one", one, key_one), Remote("across", across, key_across)]
        else:
            assert Path(args.bin).exists(), f"build first: cargo build --release --bin voiced ({args.bin})"
            pg = Postgres(work, args.database_url)
            sock = work / "redis.sock"
            redis = subprocess.Popen(["redis-server", "--port", "0", "--save", "", "--appendonly", "no",
                                      "--unixsocket", str(sock), "--dir", str(work)],
                                     stdout=subprocess.DEVNULL)
            wait_for("redis-server", sock.exists)
            layouts = [
                Layout("one", args.bin, work, pg.create("relay_bench_one")),
                Layout("across", args.bin, work, pg.create("relay_bench_across"),
                       redis_url=f"unix://{sock}"),
            ]
        # Warm-up: the first request of each loads the engine's wide instance, the connections.
        for layout in layouts:
            for _ in range(2):
                speak(layout, args.format)
        results = {layout.name: {"first": [], "last": []} for layout in layouts}
        started = time.time()
        for round_ in range(args.rounds):
            order = layouts if round_ % 2 == 0 else layouts[::-1]
            for layout in order:
                first, last, _ = speak(layout, args.format)
                results[layout.name]["first"].append(first)
                results[layout.name]["last"].append(last)
        elapsed = time.time() - started

        print(f"\nPOST /v1/audio/speech, {args.format}, {len(TEXT)} characters (3 sentences), "
              f"{args.rounds} rounds, one request at a time, order flipped every round "
              f"({elapsed:.0f} s; binary {args.bin if not args.compose else 'compose'})\n")
        print("| layout | first byte median | first byte p95 | last byte median | last byte p95 |")
        print("|---|---|---|---|---|")
        for layout in layouts:
            r = results[layout.name]
            print(f"| {layout.name} | {median(r['first']) * 1000:.0f} ms | "
                  f"{pct(r['first'], 95) * 1000:.0f} ms | {median(r['last']) * 1000:.0f} ms | "
                  f"{pct(r['last'], 95) * 1000:.0f} ms |")
        one, across = (results[layout.name] for layout in layouts)
        ratio = median(across["first"]) / median(one["first"])
        print(f"\nfirst audio across / one process (medians): {ratio:.2f} (target ≤ 1.3)")
        print(f"first audio across / one process (p95): "
              f"{pct(across['first'], 95) / pct(one['first'], 95):.2f}")
        print(f"last byte across / one process (medians): "
              f"{median(across['last']) / median(one['last']):.2f}")
    finally:
        for layout in layouts:
            layout.stop()
        if redis:
            redis.terminate()
            redis.wait()
        if pg:
            pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
