#!/usr/bin/env python3
"""Issue 36 item 2: peak memory of `voiced serve` under parallel console uploads of 25 MiB from
one account without a plan (the app's free use), half of them with a wrong CSRF token.

Starts `voiced serve` (embedded PostgreSQL, bench/harness.py), signs a free account in through
the console's own forms, reads the server's RSS, sends CLIENTS concurrent 25 MiB
`POST /console/playground/transcribe` uploads (random bytes: the one admitted is refused as
undecodable), and reads the server's peak RSS (VmHWM). Admission comes before the upload is
read (the free account's one recogniser place), so all but one are answered without their
bodies being read. PLAN=pro runs the same from a paid account (max_transcriptions_per_account
places). Prints the statuses and the growth; asserts nothing about speed or size.

Usage: VOICED_BIN=~/.cache/voiced/target/debug/voiced python3 bench/console_uploads.py
Environment: CLIENTS (30), PLAN (none).
"""
import http.client
import os
import random
import re
import subprocess
import sys
import threading
from collections import Counter

sys.path.insert(0, os.path.dirname(__file__))
from harness import BIN, Voiced, rss_mib  # noqa: E402

CLIENTS = int(os.environ.get("CLIENTS", "30"))
PLAN = os.environ.get("PLAN", "none")
MIB = 1024 * 1024
PASSWORD = "a long bench passphrase"


def request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    except (ConnectionError, http.client.HTTPException) as err:
        return f"connection closed ({type(err).__name__})", [], b""
    finally:
        conn.close()


def cookies_of(headers, jar):
    for name, value in headers:
        if name.lower() == "set-cookie":
            pair = value.split(";")[0]
            k, v = pair.split("=", 1)
            jar[k] = v
    return "; ".join(f"{k}={v}" for k, v in jar.items())


def csrf(html):
    return re.search(rb'name="csrf_token" value="([^"]+)"', html).group(1).decode()


def main():
    v = Voiced(port=18097)
    try:
        email = "free-uploads@example.com"
        subprocess.run([str(BIN), "admin", "account", "create", "--email", email, "--plan", PLAN,
                        "--password-stdin"], input=PASSWORD, text=True, env=v.env, check=True,
                       capture_output=True)
        v.start()
        jar = {}
        _, headers, page = request(v.port, "GET", "/console/sign-in")
        cookie = cookies_of(headers, jar)
        form = f"email={email}&password={PASSWORD.replace(' ', '+')}&csrf_token={csrf(page)}"
        status, headers, _ = request(v.port, "POST", "/console/sign-in", form, {
            "cookie": cookie, "content-type": "application/x-www-form-urlencoded"})
        assert status == 303, status
        cookie = cookies_of(headers, jar)
        _, _, page = request(v.port, "GET", "/console/playground", headers={"cookie": cookie})
        token = csrf(page)
        boundary = "----voiced-bench"
        payload = random.randbytes(25 * MIB)

        def body(tok):
            return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n{tok}\r\n"
                    f"--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"x.wav\"\r\n"
                    "Content-Type: audio/wav\r\n\r\n").encode() + payload + f"\r\n--{boundary}--\r\n".encode()

        bodies = [body(token), body("wrong" + token[5:])]
        idle = rss_mib(v.proc.pid, "VmRSS")
        statuses = Counter()
        lock = threading.Lock()

        def upload(n):
            status, _, _ = request(v.port, "POST", "/console/playground/transcribe", bodies[n % 2], {
                "cookie": cookie, "content-type": f"multipart/form-data; boundary={boundary}"})
            with lock:
                statuses[status] += 1

        threads = [threading.Thread(target=upload, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = v.peak_rss_mib()
        print(f"plan {PLAN}, {CLIENTS} parallel 25 MiB console uploads (half with a wrong token): "
              f"statuses {dict(statuses)}; RSS idle {idle:.0f} MiB, peak {peak:.0f} MiB, "
              f"growth {peak - idle:.0f} MiB")
    finally:
        v.close()


if __name__ == "__main__":
    main()
