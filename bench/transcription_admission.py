#!/usr/bin/env python3
"""Peak memory of `voiced serve` under a burst of large transcription uploads (issue 8, item 2).

Starts `voiced serve` (embedded PostgreSQL in a temporary data dir), warms the recogniser with
one small clip, reads the server's RSS, then sends CLIENTS concurrent uploads of 25 MiB each
(base64 in JSON, 34 MiB on the wire) and reads the server's peak RSS (VmHWM) afterwards. With
admission before work, most uploads are refused with 503 before they are buffered or decoded;
the admitted ones (recogniser threads + queue places) are decoded. The target: peak < idle + 1 GiB.

Usage: python3 bench/transcription_admission.py [BINARY] (default: the release build).
Environment: CLIENTS (20), PAYLOAD=random|wav (random: 25 MiB of random bytes, refused as
undecodable by the admitted requests; wav: a 25 MiB 8 kHz WAV of noise, decoded for real).
"""
import base64
import http.client
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/voiced/target/release/voiced")
CLIENTS = int(os.environ.get("CLIENTS", "20"))
PAYLOAD = os.environ.get("PAYLOAD", "random")
MIB = 1024 * 1024


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def wav(samples_per_second, seconds, amplitude):
    n = samples_per_second * seconds
    frames = struct.pack("<%dh" % n, *(int(random.uniform(-amplitude, amplitude)) for _ in range(n)))
    header = b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, samples_per_second, samples_per_second * 2, 2, 16
    ) + b"data" + struct.pack("<I", len(frames))
    return header + frames


def post(port, key, body, results, i):
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request("POST", "/v1/transcriptions", body=body,
                     headers={"x-api-key": key, "content-type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read() or b"{}")
        results[i] = (response.status, answer.get("code", "ok"), time.monotonic() - started)
    except Exception as e:  # a reset before the answer is a result too
        results[i] = ("error", type(e).__name__, time.monotonic() - started)


def main():
    work = tempfile.mkdtemp(prefix="voiced-bench-")
    os.chmod(work, 0o755)
    port = free_port()
    env = dict(os.environ, VOICED_DATA_DIR=f"{work}/data", VOICED_BIND=f"127.0.0.1:{port}",
               VOICED_PUBLIC_BASE_URL=f"http://127.0.0.1:{port}", VOICED_LOG="error", VOICED_WORKERS="0",
               VOICED_RATE_LIMIT_WRITES_PER_HOUR="100000")
    env.pop("VOICED_DATABASE_URL", None)
    env.pop("DATABASE_URL", None)

    def admin(*args):
        out = subprocess.run([BIN, "admin", "--json", *args], env=env, check=True, capture_output=True)
        return json.loads(out.stdout)

    account = admin("account", "create", "--email", "bench@example.com", "--plan", "pro")["id"]
    key = admin("key", "create", "--account", account, "--scopes", "voice:read,voice:generate")["key"]
    server = subprocess.Popen([BIN, "serve"], env=env)
    try:
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        small = json.dumps({"audio": base64.b64encode(wav(16000, 2, 3000)).decode()})
        warm = [None]
        post(port, key, small, warm, 0)
        idle_rss = status_kib(server.pid, "VmRSS")
        idle_hwm = status_kib(server.pid, "VmHWM")

        if PAYLOAD == "wav":
            audio = wav(8000, (25 * MIB - 44) // 16000, 2000)
        else:
            audio = os.urandom(25 * MIB)
        body = json.dumps({"audio": base64.b64encode(audio).decode()}).encode()
        results = [None] * CLIENTS
        threads = [threading.Thread(target=post, args=(port, key, body, results, i)) for i in range(CLIENTS)]
        peak_sampled = idle_rss
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak_sampled = max(peak_sampled, status_kib(server.pid, "VmRSS"))
            time.sleep(0.02)
        peak_hwm = status_kib(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)

    counts = {}
    for status, code, _ in results:
        counts[(status, code)] = counts.get((status, code), 0) + 1
    print(f"payload: {PAYLOAD}, {CLIENTS} concurrent uploads of {len(audio) / MIB:.1f} MiB "
          f"({len(body) / MIB:.1f} MiB of JSON each)")
    for (status, code), n in sorted(counts.items(), key=str):
        print(f"  {n:3d} × {status} {code}")
    slowest = max(r[2] for r in results)
    print(f"idle RSS {idle_rss / 1024:.0f} MiB (HWM {idle_hwm / 1024:.0f} MiB); peak during the burst: "
          f"sampled RSS {peak_sampled / 1024:.0f} MiB, VmHWM {peak_hwm / 1024:.0f} MiB; "
          f"growth {(peak_hwm - idle_rss) / 1024:.0f} MiB (target < 1024 MiB); slowest answer {slowest:.1f} s")


if __name__ == "__main__":
    main()
