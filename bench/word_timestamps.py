#!/usr/bin/env python3
"""Word timestamps: ours against faster-whisper's `word_timestamps=True` (issue 25 item 3).

Same model directory, same clips, int8, beam 5, no VAD, no conditioning on previous text. The
two transcripts are aligned word by word (difflib on the normalised words); for each word both
recognised, |Δstart| and |Δend| are collected, and the median and 95th percentile printed.
Also prints each side's time with and without word timestamps (one warm run each; the alignment
pass's cost), interleaved.

Clips: Samuel Beckett read by a person (beckett.wav), espeak-ng paragraphs in three voices, and
Kokoro (kokoro-onnx, the same model files voiced ships) reading a paragraph: over 100 words.

Setup (once):
    python3 -m venv ~/.cache/voiced/venv-bench
    ~/.cache/voiced/venv-bench/bin/pip install kokoro-onnx faster-whisper==1.2.1 ctranslate2==4.8.4
    cargo build --release --example transcribe
Run:
    ~/.cache/voiced/venv-bench/bin/python bench/word_timestamps.py [--model whisper-base] [--threads 2]
"""

import argparse
import difflib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import wave
import zipfile
from pathlib import Path

MODELS_DIR = Path(os.environ.get("VOICED_MODELS_DIR", Path.home() / ".cache/voiced/models"))
TARGET_DIR = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/voiced/target"))
TEXTS = [
    ("en-us", "The weather was cold and windy this morning, so we stayed inside and read the "
              "newspaper. In the afternoon the sun came out, and we walked to the market to buy "
              "bread, apples and fresh fish for dinner."),
    ("en-gb", "Please send the quarterly report to the finance team before Friday, and remember "
              "to include the figures for the new office in Berlin."),
    ("en-us+f3", "After dinner we listened to music on the radio and talked about our plans for "
                 "the summer holidays by the sea. The children wanted to go camping in the "
                 "mountains, but their grandmother preferred a quiet hotel near the beach."),
]
KOKORO_TEXT = (
    "Every morning the baker opens his shop at six. He sells warm bread, sweet rolls and small "
    "cakes to the people who walk past on their way to work. On Sundays the queue reaches the "
    "corner of the street."
)


def clips(workdir: Path) -> list:
    out = []
    wheel = MODELS_DIR / ".pip" / "useful_moonshine_onnx-20251121-py3-none-any.whl"
    if wheel.exists():
        beckett = workdir / "beckett.wav"
        beckett.write_bytes(zipfile.ZipFile(wheel).read("moonshine_onnx/assets/beckett.wav"))
        out.append(("beckett (human)", str(beckett)))
    for i, (voice, text) in enumerate(TEXTS):
        raw, clip = workdir / f"espeak{i}-22k.wav", workdir / f"espeak{i}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(raw), text], check=True)
        subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(clip)], check=True)
        out.append((f"espeak {voice}", str(clip)))
    try:
        from kokoro_onnx import Kokoro
        import numpy as np

        kokoro_dir = MODELS_DIR / "kokoro"
        engine = Kokoro(str(kokoro_dir / "kokoro-v1.0.int8.onnx"), str(kokoro_dir / "voices_ja.npz"))
        samples, rate = engine.create(KOKORO_TEXT, voice="jf_alpha", lang="en-us")
        raw, clip = workdir / "kokoro-24k.wav", workdir / "kokoro.wav"
        with wave.open(str(raw), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
            w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
        subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(clip)], check=True)
        out.append(("kokoro jf_alpha", str(clip)))
    except Exception as e:  # noqa: BLE001 - the bench runs without Kokoro, saying so
        print(f"(no Kokoro clip: {e})", file=sys.stderr)
    return out


def ours(model_dir: Path, threads: int, paths: list, timestamps: str) -> list:
    binary = TARGET_DIR / "release/examples/transcribe"
    if not binary.exists():
        binary = TARGET_DIR / "debug/examples/transcribe"
        print(f"(release example missing: using {binary})", file=sys.stderr)
    env = dict(os.environ, VOICED_TIMESTAMPS=timestamps)
    lines = subprocess.run(
        [str(binary), str(model_dir), str(threads), *paths],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.splitlines()
    return [json.loads(l) for l in lines if '"event":"clip"' in l]


def theirs(model, paths: list, words: bool) -> list:
    out = []
    for path in paths:
        started = time.perf_counter()
        segments, info = model.transcribe(
            path, beam_size=5, word_timestamps=words, condition_on_previous_text=False,
            vad_filter=False,
        )
        segments = list(segments)
        elapsed = time.perf_counter() - started
        out.append({
            "elapsed_s": elapsed,
            "text": "".join(s.text for s in segments).strip(),
            "words": [{"word": w.word, "start": w.start, "end": w.end}
                      for s in segments for w in (s.words or [])],
        })
    return out


def norm(word: str) -> str:
    return "".join(c for c in word.lower() if c.isalnum())


def percentile(values: list, q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="whisper-base")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from faster_whisper import WhisperModel

    model_dir = MODELS_DIR / args.model
    with tempfile.TemporaryDirectory() as tmp:
        named = clips(Path(tmp))
        paths = [p for _, p in named]
        fw = WhisperModel(str(model_dir), device="cpu", compute_type="int8", cpu_threads=args.threads)
        theirs(fw, paths[:1], False)  # warm up
        # Interleaved: ours, theirs with words; theirs, ours without.
        ours_words = ours(model_dir, args.threads, paths, "word")
        theirs_words = theirs(fw, paths, True)
        theirs_plain = theirs(fw, paths, False)
        ours_plain = ours(model_dir, args.threads, paths, "none")

    starts, ends, matched, total = [], [], 0, 0
    print(f"model {args.model}, {args.threads} threads")
    print(f"{'clip':18} {'words':>5} {'matched':>7} {'med|Δs|':>8} {'med|Δe|':>8}")
    for (name, _), a, b in zip(named, ours_words, theirs_words):
        ours_w = [w for w in a["words"]]
        their_w = b["words"]
        sm = difflib.SequenceMatcher(a=[norm(w["word"]) for w in ours_w],
                                     b=[norm(w["word"]) for w in their_w], autojunk=False)
        ds, de = [], []
        for block in sm.get_matching_blocks():
            for k in range(block.size):
                x, y = ours_w[block.a + k], their_w[block.b + k]
                ds.append(abs(x["start"] - y["start"]))
                de.append(abs(x["end"] - y["end"]))
        total += len(their_w)
        matched += len(ds)
        starts += ds
        ends += de
        med = lambda v: statistics.median(v) * 1000 if v else float("nan")
        print(f"{name:18} {len(their_w):5} {len(ds):7} {med(ds):7.0f}ms {med(de):7.0f}ms")
    print(f"all: {matched} of {total} words matched")
    print(f"|Δstart| median {statistics.median(starts) * 1000:.0f} ms, p95 {percentile(starts, 0.95) * 1000:.0f} ms")
    print(f"|Δend|   median {statistics.median(ends) * 1000:.0f} ms, p95 {percentile(ends, 0.95) * 1000:.0f} ms")
    t = lambda runs: sum(r["elapsed_s"] for r in runs)
    print(f"time, words/plain: ours {t(ours_words):.2f}/{t(ours_plain):.2f} s = {t(ours_words) / t(ours_plain):.2f}, "
          f"faster-whisper {t(theirs_words):.2f}/{t(theirs_plain):.2f} s = {t(theirs_words) / t(theirs_plain):.2f}; "
          f"ours/faster-whisper with words {t(ours_words) / t(theirs_words):.2f}")


if __name__ == "__main__":
    main()
