"""Shared helpers of the bench scripts: a throw-away `voiced serve` with an account, a key and a
voice, plus small HTTP and statistics helpers. Standard library only.

Nothing here is a test: the scripts print tables, they assert nothing about speed.
"""

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("VOICED_CACHE", Path.home() / ".cache/voiced"))
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", CACHE / "target"))
MODELS = Path(os.environ.get("VOICED_MODELS_DIR", CACHE / "models"))
# VOICED_BIN runs another build (e.g. a copy of an older commit's, to compare before and after).
BIN = Path(os.environ.get("VOICED_BIN", TARGET / "release/voiced"))
VENV_PY = CACHE / "venv-bench/bin/python"
KOKORO_MODEL = MODELS / "kokoro/kokoro-v1.0.int8.onnx"
KOKORO_VOICES = MODELS / "kokoro/voices_ja.npz"


def ts(value: str) -> float:
    """RFC 3339 timestamp → seconds since the epoch."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def median(values):
    return statistics.median(values) if values else float("nan")


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def rss_mib(pid: int, field: str = "VmHWM") -> float:
    """Peak (VmHWM) or current (VmRSS) resident set of a process, MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def http(method: str, url: str, body=None, headers=None, timeout=600):
    """→ (status, body bytes, seconds to last byte)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = response.read()
            status = response.status
    except urllib.error.HTTPError as err:
        payload, status = err.read(), err.code
    return status, payload, time.perf_counter() - started


def http_stream(method: str, url: str, body=None, headers=None, timeout=600):
    """→ (status, body bytes, seconds to the first body byte, seconds to the last byte)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    started = time.perf_counter()
    first = None
    chunks = []
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
            while True:
                chunk = response.read1(1 << 16)
                if not chunk:
                    break
                if first is None:
                    first = time.perf_counter() - started
                chunks.append(chunk)
    except urllib.error.HTTPError as err:
        chunks, status = [err.read()], err.code
    last = time.perf_counter() - started
    return status, b"".join(chunks), first if first is not None else last, last


class Voiced:
    """A private data dir, one account/key/voice, and `voiced serve` started on demand."""

    def __init__(self, port: int = 18090):
        assert BIN.exists(), f"build first: cargo build --release --bin voiced ({BIN})"
        self.work = Path(tempfile.mkdtemp(prefix="voiced-bench."))
        os.chmod(self.work, 0o755)  # as root the embedded cluster runs as `postgres`
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.env = dict(
            os.environ,
            VOICED_DATA_DIR=str(self.work / "data"),
            VOICED_BIND=f"127.0.0.1:{port}",
            VOICED_PUBLIC_BASE_URL=f"http://127.0.0.1:{port}",
            VOICED_MODELS_DIR=str(MODELS),
            VOICED_RATE_LIMIT_READS_PER_MINUTE="100000000",
            VOICED_RATE_LIMIT_WRITES_PER_HOUR="100000000",
            VOICED_LOG_FORMAT="json",
            VOICED_LOG="info",
        )
        self.proc = None
        self.log_path = None
        self.key = None

    def admin(self, *args) -> dict:
        out = subprocess.run([str(BIN), "admin", "--json", *args], env=self.env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    def setup(self, voice: str = "bench", preset: str = "jf_alpha") -> None:
        account = self.admin("account", "create", "--email", "bench@example.com", "--plan", "pro")["id"]
        self.key = self.admin("key", "create", "--account", account,
                              "--scopes", "voice:read,voice:generate")["key"]
        self.admin("voice", "create", "--account", account, "--name", voice, "--engine", "kokoro",
                   "--preset", preset, "--language", "en")
        self.voice = voice

    def start(self, **settings) -> None:
        """`voiced serve` with VOICED_<NAME>=value for each setting; waits for /readyz."""
        env = dict(self.env, **{f"VOICED_{k.upper()}": str(v) for k, v in settings.items()})
        self.log_path = self.work / f"serve-{int(time.time() * 1000)}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([str(BIN), "serve"], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"voiced serve exited: {self.log_path.read_text()[-2000:]}")
            try:
                if http("GET", self.base + "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("voiced serve did not become ready")

    def peak_rss_mib(self) -> float:
        return rss_mib(self.proc.pid)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self) -> None:
        if self.proc and self.proc.poll() is not None:  # it died on its own: say why
            print(f"voiced serve exited with {self.proc.returncode}; log tail:\n"
                  + self.log_path.read_text()[-3000:], flush=True)
        self.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def headers(self) -> dict:
        return {"x-api-key": self.key}

    # --- asynchronous speech -------------------------------------------------------------------
    def submit(self, text: str, seed: int = 1, fmt: str = "wav") -> str:
        status, body, _ = http("POST", self.base + "/v1/speech",
                               {"text": text, "voice_name": self.voice, "seed": seed,
                                "response_format": fmt}, self.headers())
        assert status == 202, (status, body[:500])
        return json.loads(body)["id"]

    def wait(self, ids, poll: float = 0.1, timeout: float = 600) -> dict:
        """Polls until every generation is finished; → {id: generation}."""
        done, deadline = {}, time.time() + timeout
        while len(done) < len(ids):
            if time.time() > deadline:
                raise RuntimeError("generations did not finish in time")
            for gid in ids:
                if gid in done:
                    continue
                status, body, _ = http("GET", f"{self.base}/v1/generations/{gid}",
                                       headers=self.headers())
                generation = json.loads(body)
                if generation.get("status") in ("completed", "failed"):
                    assert generation["status"] == "completed", generation
                    done[gid] = generation
            if len(done) < len(ids):
                time.sleep(poll)
        return done

    def completions(self) -> dict:
        """`generation completed` log lines so far → {generation id: fields}."""
        found = {}
        self.log.flush()
        for line in self.log_path.read_text().splitlines():
            if "generation completed" not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            spans = event.get("spans", []) + [event.get("span", {})]
            gid = next((s["generation_id"] for s in spans if "generation_id" in s), None)
            if gid:
                found[gid] = event.get("fields", event)
        return found
