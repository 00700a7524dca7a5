#!/usr/bin/env python3
"""Issue 5, request overhead: POST /v1/transcriptions through `voiced serve` against the
recogniser alone (examples/transcribe) on the same clips, side by side.

Both use the same Recognizer (whisper-base by default, int8, 1 thread: `voiced serve` gives each
recogniser thread one CTranslate2 thread), warmed up before timing. Per round: every clip once
through the server (client-side time to the JSON answer: base64 decode, audio decode, recogniser
queue, recogniser, refine, capture insert, response), and one examples/transcribe process over the
same clips (its in-process elapsed_s per clip, model already loaded and warmed, second of two
passes); the order flips
every round. Ratio = server time / recogniser time, per clip and round; medians reported.

Setup: cargo build --release --bin voiced --example transcribe; the clips come from
bench/whisper_rtf.py's clips() (beckett.wav from the useful-moonshine-onnx wheel, an espeak-ng
paragraph). Run: python3 bench/transcription_overhead.py [--rounds 3] [--model whisper-base]
"""

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import MODELS, TARGET, Voiced, http, median  # noqa: E402
from whisper_rtf import clips  # noqa: E402


def recogniser(model: str, paths: list) -> dict:
    """One examples/transcribe process over the clips twice; the second pass is kept (a fresh
    process is slower on its first real clip even after its warm-up)."""
    out = subprocess.run([str(TARGET / "release/examples/transcribe"), str(MODELS / model), "1",
                          *paths, *paths], check=True, capture_output=True, text=True).stdout
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {e["clip"]: e for e in events if e["event"] == "clip"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default="whisper-base")
    args = parser.parse_args()
    started = time.time()
    v = Voiced(port=18093)
    with tempfile.TemporaryDirectory() as tmp:
        paths = clips(Path(tmp))
        bodies = {p: {"audio": base64.b64encode(Path(p).read_bytes()).decode()} for p in paths}
        try:
            v.setup()
            v.start(workers=0, whisper_model=args.model, asr_threads=1)  # warms before binding
            serve = {p: [] for p in paths}
            alone = {p: [] for p in paths}
            texts = {}
            for r in range(args.rounds):
                def via_server():
                    for p in paths:
                        status, body, took = http("POST", v.base + "/v1/transcriptions",
                                                  bodies[p], v.headers())
                        assert status == 200, (status, body[:300])
                        serve[p].append(took)
                        texts[(p, "serve")] = json.loads(body)["text"]

                def by_itself():
                    for p, e in recogniser(args.model, paths).items():
                        alone[p].append(e["elapsed_s"])
                        texts[(p, "alone")] = e["text"]

                for step in ((by_itself, via_server) if r % 2 else (via_server, by_itself)):
                    step()
            print(f"\n{args.model}, 1 thread, {args.rounds} rounds interleaved (medians)")
            print("| clip | audio s | serve request s | recogniser alone s | ratio serve/alone "
                  "| extra ms |")
            print("|---|---|---|---|---|---|")
            for p in paths:
                ratio = median([a / b for a, b in zip(serve[p], alone[p])])
                extra = median([(a - b) * 1000 for a, b in zip(serve[p], alone[p])])
                audio = recogniser_audio_s(p)
                print(f"| {Path(p).name} | {audio:.1f} | {median(serve[p]):.2f} "
                      f"| {median(alone[p]):.2f} | {ratio:.3f} | {extra:.0f} |", flush=True)
                if texts[(p, "serve")] != texts[(p, "alone")]:
                    print(f"  text differs: serve {texts[(p, 'serve')]!r} "
                          f"alone {texts[(p, 'alone')]!r}")
            print(f"peak RSS of voiced serve: {v.peak_rss_mib():.0f} MiB")
            print(f"wall time of the whole run: {time.time() - started:.0f} s")
        finally:
            v.close()


def recogniser_audio_s(path: str) -> float:
    import wave

    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


if __name__ == "__main__":
    main()
