#!/usr/bin/env python3
"""Issue 3: speech generation through `voiced serve`, against the Python peer, in one run.

(a) overhead: the same short texts one at a time through POST /v1/speech; end-to-end time
    (generation created_at → finished_at, server clock) against the worker's `engine_ms`
    (time inside the engine, from its "generation completed" log line). wav and mp3.
(b) throughput: a fixed batch of texts submitted at once, audio seconds per wall second
    (first created_at → last finished_at), for workers × engine threads in {1,2} × {1,2}.
(c) the peer: PyPI kokoro-onnx on the same model file, the same texts, the same sessions ×
    threads (bench/peer_kokoro.py), run right before or after ours for each configuration
    (the order flips every time), ROUNDS rounds.
(d) peak RSS (VmHWM) of `voiced serve` after each configuration, and the peer's.

Every figure that matters is a ratio of runs made side by side; the machine is shared and noisy.

Setup (once): python3 -m venv ~/.cache/voiced/venv-bench
              ~/.cache/voiced/venv-bench/bin/pip install kokoro-onnx
              cargo build --release --bin voiced
Run:          python3 bench/speech.py [--rounds 2] [--configs 1x1,1x2,2x1,2x2]
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import VENV_PY, Voiced, median, ts  # noqa: E402

OVERHEAD_TEXTS = [
    "Hello there, thanks for calling.",
    "The meeting starts at ten tomorrow.",
    "Please leave a message after the tone.",
    "It is a bright and windy afternoon.",
    "Your order has been shipped today.",
    "We will be back in five minutes.",
]
BATCH_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "She sells sea shells by the sea shore.",
    "A journey of a thousand miles begins with a single step.",
    "Please remember to water the plants on Friday.",
    "The train to the airport leaves every twenty minutes.",
    "Coffee is ready in the kitchen, help yourself.",
    "Our office is closed on public holidays.",
    "Thank you for your patience while we check your account.",
]
PEER = Path(__file__).resolve().parent / "peer_kokoro.py"


def warm(v: Voiced, workers: int) -> None:
    """Every worker loads its engine on its first job: give each one a job first."""
    ids = [v.submit("Warm up.", seed=i) for i in range(2 * workers)]
    v.wait(ids, poll=0.05)


def overhead(v: Voiced, rounds: int) -> list:
    rows = []
    for fmt in ("wav", "mp3"):
        e2e, engine, audio = [], [], []
        for _ in range(rounds):
            for text in OVERHEAD_TEXTS:
                gid = v.submit(text, seed=7, fmt=fmt)
                g = v.wait([gid], poll=0.02)[gid]
                fields = v.completions()[gid]
                e2e.append((ts(g["finished_at"]) - ts(g["created_at"])) * 1000)
                engine.append(float(fields["engine_ms"]))
                audio.append(g["duration_ms"])
        rows.append({"format": fmt, "n": len(e2e), "audio_ms": sum(audio),
                     "engine_ms": sum(engine), "e2e_ms": sum(e2e),
                     "median_extra_ms": median([a - b for a, b in zip(e2e, engine)])})
    return rows


def ours_batch(v: Voiced) -> dict:
    ids = [v.submit(text, seed=11, fmt="wav") for text in BATCH_TEXTS]
    done = v.wait(ids, poll=0.2)
    first = min(ts(g["created_at"]) for g in done.values())
    last = max(ts(g["finished_at"]) for g in done.values())
    return {"audio_s": sum(g["duration_ms"] for g in done.values()) / 1000,
            "wall_s": last - first}


def theirs_batch(workers: int, threads: int) -> dict:
    out = subprocess.run([str(VENV_PY), str(PEER), "batch", str(workers), str(threads),
                          json.dumps(BATCH_TEXTS)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", default="1x1,1x2,2x1,2x2")
    args = parser.parse_args()
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    started = time.time()
    v = Voiced(port=18091)
    try:
        v.setup()
        # (a) overhead, one worker, one thread.
        v.start(workers=1, engine_threads=1)
        warm(v, 1)
        rows = overhead(v, 1)
        rss_a = v.peak_rss_mib()
        v.stop()
        print("\n(a) engine time vs end-to-end, one at a time, 1 worker x 1 thread")
        print("| format | generations | audio s | engine s | accepted→completed s "
              "| ratio e2e/engine | median extra ms |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['format']} | {r['n']} | {r['audio_ms'] / 1000:.1f} "
                  f"| {r['engine_ms'] / 1000:.2f} | {r['e2e_ms'] / 1000:.2f} "
                  f"| {r['e2e_ms'] / r['engine_ms']:.3f} | {r['median_extra_ms']:.0f} |",
                  flush=True)
        print(f"peak RSS of voiced serve after (a): {rss_a:.0f} MiB", flush=True)

        # (b)+(c)+(d): per configuration, ours and theirs side by side, order flipping.
        results = {c: {"ours": [], "theirs": [], "rss": [], "peer_rss": []} for c in configs}
        flip = False
        for _ in range(args.rounds):
            for workers, threads in configs:
                r = results[(workers, threads)]

                def run_ours():
                    v.start(workers=workers, engine_threads=threads)
                    warm(v, workers)
                    r["ours"].append(ours_batch(v))
                    r["rss"].append(v.peak_rss_mib())
                    v.stop()

                def run_theirs():
                    t = theirs_batch(workers, threads)
                    r["theirs"].append(t)
                    r["peer_rss"].append(t["peak_rss_mib"])

                for step in ((run_theirs, run_ours) if flip else (run_ours, run_theirs)):
                    step()
                flip = not flip
                o, t = r["ours"][-1], r["theirs"][-1]
                print(f"  round: {workers}x{threads} ours {o['audio_s'] / o['wall_s']:.2f} "
                      f"theirs {t['audio_s'] / t['wall_s']:.2f} audio s/s "
                      f"(walls {o['wall_s']:.1f} / {t['wall_s']:.1f} s)", flush=True)

        print(f"\n(b)(c)(d) batch of {len(BATCH_TEXTS)} texts, {args.rounds} interleaved rounds "
              "(medians of per-round values)")
        print("| workers x threads | ours audio s/s | kokoro-onnx audio s/s | ratio audio s/s "
              "| ratio texts/s (same batch) | audio s ours/theirs | peak RSS MiB ours/theirs |")
        print("|---|---|---|---|---|---|---|")
        for (workers, threads), r in results.items():
            ours = [o["audio_s"] / o["wall_s"] for o in r["ours"]]
            theirs = [t["audio_s"] / t["wall_s"] for t in r["theirs"]]
            ratio = median([a / b for a, b in zip(ours, theirs)])
            texts = median([t["wall_s"] / o["wall_s"] for o, t in zip(r["ours"], r["theirs"])])
            print(f"| {workers} x {threads} | {median(ours):.2f} | {median(theirs):.2f} "
                  f"| {ratio:.2f} | {texts:.2f} "
                  f"| {r['ours'][0]['audio_s']:.1f} / {r['theirs'][0]['audio_s']:.1f} "
                  f"| {max(r['rss']):.0f} / {max(r['peer_rss']):.0f} |", flush=True)
        print(f"\nwall time of the whole run: {time.time() - started:.0f} s")
    finally:
        v.close()


if __name__ == "__main__":
    main()
