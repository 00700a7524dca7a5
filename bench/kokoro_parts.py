#!/usr/bin/env python3
"""Issue 3 diagnostic: where a Kokoro generation's time goes, outside voiced.

Runs with the bench venv (kokoro-onnx, onnxruntime 1.31.1), 1 intra-op thread, interleaved rounds:
- the shipped graph (kokoro-v1.0.int8.onnx, what kokoro-onnx runs) against the seeded graph
  voiced runs (kokoro-v1.0.int8.seeded.onnx: the same graph plus the `sine_noise` [1, 48000, 9]
  and `sine_phase` inputs), on the same token sequences;
- phonemizing one text by spawning `espeak-ng -q --ipa -v en-us` (as voiced does, once per
  generation) against kokoro-onnx's in-process phonemizer.

Run: ~/.cache/voiced/venv-bench/bin/python bench/kokoro_parts.py [--rounds 3]
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as rt
from kokoro_onnx import Kokoro

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speech import BATCH_TEXTS  # noqa: E402

MODELS = Path.home() / ".cache/voiced/models/kokoro"


def session(path: Path) -> rt.InferenceSession:
    options = rt.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return rt.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    plain, seeded = session(MODELS / "kokoro-v1.0.int8.onnx"), session(MODELS / "kokoro-v1.0.int8.seeded.onnx")
    kokoro = Kokoro.from_session(plain, str(MODELS / "voices_ja.npz"))
    voice = kokoro.get_voice_style("jf_alpha")
    feeds = []
    for text in BATCH_TEXTS:
        tokens = kokoro.tokenizer.tokenize(kokoro.tokenizer.phonemize(text, "en-us"))
        feeds.append({"tokens": np.array([[0, *tokens, 0]], np.int64),
                      "style": voice[len(tokens) - 1], "speed": np.ones(1, np.float32)})
    rng = np.random.default_rng(1)
    noise = {"sine_noise": rng.standard_normal((1, 48000, 9)).astype(np.float32) * 0.003,
             "sine_phase": np.zeros((1, 1, 9), np.float32)}
    untrimmed = sum(len(plain.run(None, feed)[0].reshape(-1)) for feed in feeds) / 24000
    trimmed = sum(len(kokoro.create(t, voice="jf_alpha", lang="en-us")[0]) for t in BATCH_TEXTS) / 24000
    print(f"audio of the {len(feeds)} texts: {untrimmed:.1f} s as the model outputs it, "
          f"{trimmed:.1f} s after kokoro-onnx's default silence trim")
    for feed in feeds[:2]:  # warm both
        plain.run(None, feed)
        seeded.run(None, {**feed, **noise})
    times = {"plain": [], "seeded": [], "espeak-ng process": [], "phonemizer in-process": []}
    for r in range(args.rounds):
        order = ["plain", "seeded"] if r % 2 == 0 else ["seeded", "plain"]
        for name in order:
            started = time.perf_counter()
            for feed in feeds:
                if name == "plain":
                    plain.run(None, feed)
                else:
                    seeded.run(None, {**feed, **noise})
            times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        for text in BATCH_TEXTS:
            subprocess.run(["espeak-ng", "-q", "--ipa", "-v", "en-us"], input=text.encode(),
                           capture_output=True, check=True)
        times["espeak-ng process"].append(time.perf_counter() - started)
        started = time.perf_counter()
        for text in BATCH_TEXTS:
            kokoro.tokenizer.phonemize(text, "en-us")
        times["phonemizer in-process"].append(time.perf_counter() - started)
    n = len(BATCH_TEXTS)
    print(f"| part ({n} texts, 1 thread, {args.rounds} interleaved rounds) | median s for all {n} "
          f"| per text ms |")
    print("|---|---|---|")
    for name, values in times.items():
        m = float(np.median(values))
        print(f"| {name} | {m:.3f} | {m / n * 1000:.1f} |")
    ratio = np.median([s / p for s, p in zip(times["seeded"], times["plain"])])
    print(f"seeded / plain graph, same tokens: {ratio:.3f}")


if __name__ == "__main__":
    main()
