#!/usr/bin/env python3
"""Issue 14 item 2: how a lone Kokoro generation can use both cores, three designs side by side.

Runs `examples/kokoro_sharing` (release build) once per design per round, the order rotating
every round, and prints medians:
- serial: 2 sessions x 1 own thread, a lone paragraph on one session (before sentence sharing);
- pieces: the same sessions, the paragraph's sentences shared between both (worker::pieces);
- pool:   2 sessions sharing one ONNX Runtime pool of 2 threads, the paragraph on one session;
- pool-spin: the same with the pool's idle threads spinning (ONNX Runtime's default).
For each: time to the first sentence's audio and to the last, and sentences/s with both sessions
busy on their own sentences (throughput under load).

Run: python3 bench/kokoro_sharing.py [--rounds 5] [--modes serial,pieces,pool,pool-spin] [BIN]
(BIN defaults to $CARGO_TARGET_DIR/release/examples/kokoro_sharing.)
"""

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

MODES = ["serial", "pieces", "pool", "pool-spin"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("bin", nargs="?")
    args = parser.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    binary = args.bin or str(target / "release/examples/kokoro_sharing")
    modes = args.modes.split(",")
    assert "serial" in modes, "serial is the baseline of the ratios"
    runs = {mode: [] for mode in modes}
    for round_ in range(args.rounds):
        order = modes[round_ % len(modes):] + modes[:round_ % len(modes)]
        for mode in order:
            out = subprocess.run([binary, mode], capture_output=True, text=True, check=True).stdout
            result = json.loads(out.strip().splitlines()[-1])
            runs[mode].append(result)
            print(f"round {round_ + 1} {mode}: {result}", flush=True)

    def med(mode, key):
        return statistics.median(r[key] for r in runs[mode])

    base_last = [r["last_s"] for r in runs["serial"]]
    base_busy = [r["busy_sentences_per_s"] for r in runs["serial"]]
    print(f"\n{args.rounds} rounds, medians; ratios are per round against serial of the same round")
    print("| design | first s | last s | first/last | last / serial's last | busy sentences/s "
          "| busy / serial's busy |")
    print("|---|---|---|---|---|---|---|")
    for mode in modes:
        last_ratio = statistics.median(r["last_s"] / b for r, b in zip(runs[mode], base_last))
        busy_ratio = statistics.median(r["busy_sentences_per_s"] / b
                                       for r, b in zip(runs[mode], base_busy))
        first_last = statistics.median(r["first_s"] / r["last_s"] for r in runs[mode])
        print(f"| {mode} | {med(mode, 'first_s'):.2f} | {med(mode, 'last_s'):.2f} "
              f"| {first_last:.2f} | {last_ratio:.2f} | {med(mode, 'busy_sentences_per_s'):.2f} "
              f"| {busy_ratio:.2f} |")
    print(f"\nparagraph: {runs['serial'][0]['sentences']} sentences, "
          f"{runs['serial'][0]['audio_s']:.1f} s of audio")


if __name__ == "__main__":
    main()
