#!/usr/bin/env python3
"""Issue 36 item 4: server CPU spent on a refused pronunciation-alias bomb.

Starts `voiced serve` (bench/harness.py) with a paid account whose one pronunciation rule makes
"a" a 197-character alias, then sends REQUESTS `POST /v1/speech` with 4 990 × "a" (about a
million characters once the rule is written in) one after another, and reads the server
process's CPU time (user + system, /proc/PID/stat) before and after: CPU per refused request.
Every answer must be 400 naming `text`. Asserts nothing about speed.

Usage: VOICED_BIN=~/.cache/voiced/target/release/voiced python3 bench/alias_bomb.py
Environment: REQUESTS (20).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Voiced, http  # noqa: E402

REQUESTS = int(os.environ.get("REQUESTS", "20"))


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def main():
    v = Voiced(port=18098)
    try:
        v.setup()
        v.start()
        status, body, _ = http("POST", v.base + "/v1/pronunciations",
                               {"text": "a", "alias": " ".join(["alpha"] * 33)}, v.headers())
        assert status == 201, body
        bomb = {"text": "a " * 4990, "voice_name": v.voice}
        # One first, untimed: whatever is loaded on first use is not the bomb's cost.
        http("POST", v.base + "/v1/speech", bomb, v.headers())
        before = cpu_seconds(v.proc.pid)
        for _ in range(REQUESTS):
            status, body, _ = http("POST", v.base + "/v1/speech", bomb, v.headers())
            assert status == 400 and json.loads(body)["param"] == "text", (status, body[:300])
        spent = cpu_seconds(v.proc.pid) - before
        print(f"{REQUESTS} refused alias bombs: {spent * 1000 / REQUESTS:.1f} ms of server CPU each")
    finally:
        v.close()


if __name__ == "__main__":
    main()
