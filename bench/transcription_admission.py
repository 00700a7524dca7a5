#!/usr/bin/env python3
"""Peak memory of `voiced serve` under a burst of large transcription uploads (issue 8, item 2).

Starts `voiced serve` (embedded PostgreSQL in a temporary data dir), warms the recogniser with
one small clip, reads the server's RSS, then sends CLIENTS concurrent uploads of 25 MiB each
(base64 in JSON, 34 MiB on the wire) and reads the server's peak RSS (VmHWM) afterwards. With
admission before work, most uploads are refused with 503 before they are buffered or decoded;
the admitted ones (recogniser threads + queue places) are decoded. The target: peak < idle + 1 GiB.

MODE=hostile (issue 23, item 3) adds the agent interface: CLIENTS concurrent 32 MiB `/mcp`
messages (a `list_voices` call whose arguments hold a 32 MiB JSON array) from an account with no
plan and a read-only key, beside CLIENTS concurrent 25 MiB transcriptions of the paid account
(half through `POST /v1/transcriptions`, half through the agent's `transcribe`); then, as a
second burst, CLIENTS concurrent 32 MiB `list_voices` messages from the paid account (413 after
at most 1 MiB each). The peak is read after each burst.

Usage: python3 bench/transcription_admission.py [BINARY] (default: the release build).
Environment: CLIENTS (20), MODE=rest|hostile (rest), PAYLOAD=random|wav (random: 25 MiB of
random bytes, refused as undecodable by the admitted requests; wav: a 25 MiB 8 kHz WAV of noise,
decoded for real).
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
MODE = os.environ.get("MODE", "rest")
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


def post(port, key, body, results, i, path="/v1/transcriptions"):
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request("POST", path, body=body,
                     headers={"x-api-key": key, "content-type": "application/json",
                              "accept": "application/json, text/event-stream",
                              "mcp-protocol-version": "2025-11-25"})
        response = conn.getresponse()
        answer = json.loads(response.read() or b"{}")
        code = answer.get("code", "ok")
        if answer.get("result", {}).get("isError"):  # an MCP tool error: its text is the problem
            code = "tool:" + json.loads(answer["result"]["content"][0]["text"]).get("code", "?")
        results[i] = (response.status, code, time.monotonic() - started)
    except Exception as e:  # a reset before the answer is a result too
        results[i] = ("error", type(e).__name__, time.monotonic() - started)


def burst(server, port, jobs):
    """Runs (key, path, body) jobs concurrently; returns their results and the sampled peak RSS."""
    results = [None] * len(jobs)
    threads = [threading.Thread(target=post, args=(port, key, body, results, i, path))
               for i, (key, path, body) in enumerate(jobs)]
    peak_sampled = 0
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak_sampled = max(peak_sampled, status_kib(server.pid, "VmRSS"))
        time.sleep(0.02)
    return results, peak_sampled


def tally(results):
    counts = {}
    for status, code, _ in results:
        counts[(status, code)] = counts.get((status, code), 0) + 1
    return "; ".join(f"{n} × {status} {code}" for (status, code), n in sorted(counts.items(), key=str))


def junk_call(tool, size):
    """A tools/call of `tool`, name before arguments (as the SDKs write it), with a JSON array of
    about `size` bytes in its arguments."""
    junk = ",".join(["1"] * (size // 2))
    return ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s",'
            '"arguments":{"junk":[%s]}}}' % (tool, junk)).encode()


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
    free_account = admin("account", "create", "--email", "free@example.com", "--plan", "none")["id"]
    free_key = admin("key", "create", "--account", free_account, "--scopes", "voice:read")["key"]
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
        b64 = base64.b64encode(audio).decode()
        body = json.dumps({"audio": b64}).encode()
        if MODE == "hostile":
            mcp_body = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transcribe",'
                        '"arguments":{"audio_base64":"%s"}}}' % b64).encode()
            free_call = junk_call("list_voices", 32 * MIB)
            jobs = [(free_key, "/mcp", free_call) for _ in range(CLIENTS)]
            jobs += [(key, "/v1/transcriptions", body) if i % 2 == 0 else (key, "/mcp", mcp_body)
                     for i in range(CLIENTS)]
            results, peak_sampled = burst(server, port, jobs)
            hwm_mixed = status_kib(server.pid, "VmHWM")
            paid_results, paid_sampled = burst(server, port, [(key, "/mcp", free_call)] * CLIENTS)
            peak_sampled = max(peak_sampled, paid_sampled)
        else:
            results, peak_sampled = burst(server, port, [(key, "/v1/transcriptions", body)] * CLIENTS)
        peak_hwm = status_kib(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)

    peak_sampled = max(peak_sampled, idle_rss)
    print(f"payload: {PAYLOAD}, {CLIENTS} concurrent uploads of {len(audio) / MIB:.1f} MiB "
          f"({len(body) / MIB:.1f} MiB of JSON each)")
    if MODE == "hostile":
        print(f"  free account, {CLIENTS} × 32 MiB /mcp list_voices: {tally(results[:CLIENTS])}")
        print(f"  paid account, {CLIENTS} × 25 MiB transcriptions (REST and /mcp alternately): "
              f"{tally(results[CLIENTS:])}")
        print(f"  peak after this burst (VmHWM): {hwm_mixed / 1024:.0f} MiB")
        print(f"  paid account, {CLIENTS} × 32 MiB /mcp list_voices: {tally(paid_results)}")
    else:
        print(f"  {tally(results)}")
    slowest = max(r[2] for r in results)
    print(f"idle RSS {idle_rss / 1024:.0f} MiB (HWM {idle_hwm / 1024:.0f} MiB); peak during the burst: "
          f"sampled RSS {peak_sampled / 1024:.0f} MiB, VmHWM {peak_hwm / 1024:.0f} MiB; "
          f"growth {(peak_hwm - idle_rss) / 1024:.0f} MiB (target < 1024 MiB); slowest answer {slowest:.1f} s")


if __name__ == "__main__":
    main()
