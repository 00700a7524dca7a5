#!/usr/bin/env python3
"""Real-time factor of our Whisper recogniser against Python faster-whisper.

Same model directories, same clips, same CTranslate2 release (4.8.4, the library we link),
int8, beam 5, no VAD, no conditioning on previous text; runs interleaved (ours, theirs, then
theirs, ours for the next configuration) because the machine is noisy. One process per run,
so peak RSS is per model.

Setup (once):
    python3 -m venv ~/.cache/voiced/venv-bench
    ~/.cache/voiced/venv-bench/bin/pip install faster-whisper==1.2.1 ctranslate2==4.8.4
    cargo build --release --example transcribe
Run:
    ~/.cache/voiced/venv-bench/bin/python bench/whisper_rtf.py [--threads 1,2] [--models ...]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import wave
import zipfile
from pathlib import Path

MODELS_DIR = Path(os.environ.get("VOICED_MODELS_DIR", Path.home() / ".cache/voiced/models"))
TARGET_DIR = Path(
    os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/voiced/target")
)
PARAGRAPH = (
    "The weather was cold and windy this morning, so we stayed inside and read the newspaper. "
    "In the afternoon the sun came out, and we walked to the market to buy bread, apples and "
    "fresh fish for dinner."
)


def clips(workdir: Path) -> list:
    """beckett.wav (human, 10 s) and an espeak-ng paragraph (about 13 s), both 16 kHz."""
    wheel = MODELS_DIR / ".pip" / "useful_moonshine_onnx-20251121-py3-none-any.whl"
    if not wheel.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q",
             "useful-moonshine-onnx==20251121", "-d", str(wheel.parent)],
            check=True,
        )
    beckett = workdir / "beckett.wav"
    beckett.write_bytes(zipfile.ZipFile(wheel).read("moonshine_onnx/assets/beckett.wav"))
    raw, paragraph = workdir / "paragraph-22k.wav", workdir / "paragraph.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), PARAGRAPH], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(paragraph)], check=True)
    return [str(beckett), str(paragraph)]


def read_wav(path: str):
    import numpy as np

    with wave.open(path) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768.0


def worker(model_dir: str, threads: int, paths: list) -> None:
    """faster-whisper in this process; prints the same JSON lines as examples/transcribe.rs."""
    import numpy as np
    from faster_whisper import WhisperModel

    started = time.perf_counter()
    model = WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=threads)
    load_s = time.perf_counter() - started
    options = dict(beam_size=5, condition_on_previous_text=False, vad_filter=False)
    started = time.perf_counter()
    list(model.transcribe(np.zeros(16000, np.float32), **options)[0])
    print(json.dumps({"event": "load", "load_s": load_s,
                      "warm_up_s": time.perf_counter() - started}))
    for path in paths:
        audio = read_wav(path)
        started = time.perf_counter()
        segments, info = model.transcribe(audio, **options)
        text = "".join(s.text for s in segments).strip()
        print(json.dumps({"event": "clip", "clip": path, "audio_s": len(audio) / 16000,
                          "elapsed_s": time.perf_counter() - started,
                          "language": info.language, "text": text}), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"event": "done", "peak_rss_mib": peak}))


def run(cmd: list) -> dict:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    runs = [e for e in events if e["event"] == "clip"]
    return {
        "load_s": events[0]["load_s"],
        "audio_s": sum(e["audio_s"] for e in runs),
        "elapsed_s": sum(e["elapsed_s"] for e in runs),
        "peak_rss_mib": events[-1]["peak_rss_mib"],
        "texts": [e["text"] for e in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--models", default="whisper-base,whisper-tiny.en")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.worker[2:])
        return

    ours_bin = TARGET_DIR / "release/examples/transcribe"
    assert ours_bin.exists(), f"build first: cargo build --release --example transcribe ({ours_bin})"
    with tempfile.TemporaryDirectory() as tmp:
        paths = clips(Path(tmp))
        print("| model | threads | RTF ours | RTF faster-whisper | ratio ours/theirs "
              "| load s ours/theirs | peak RSS MiB ours/theirs |")
        print("|---|---|---|---|---|---|---|")
        flip = False
        for name in args.models.split(","):
            model_dir = str(MODELS_DIR / name)
            for threads in [int(t) for t in args.threads.split(",")]:
                ours_cmd = [str(ours_bin), model_dir, str(threads), *paths]
                theirs_cmd = [sys.executable, __file__, "--worker", model_dir, str(threads), *paths]
                if flip:
                    theirs, ours = run(theirs_cmd), run(ours_cmd)
                else:
                    ours, theirs = run(ours_cmd), run(theirs_cmd)
                flip = not flip
                rtf_ours = ours["elapsed_s"] / ours["audio_s"]
                rtf_theirs = theirs["elapsed_s"] / theirs["audio_s"]
                print(f"| {name} | {threads} | {rtf_ours:.3f} | {rtf_theirs:.3f} "
                      f"| {rtf_ours / rtf_theirs:.2f} "
                      f"| {ours['load_s']:.2f} / {theirs['load_s']:.2f} "
                      f"| {ours['peak_rss_mib']:.0f} / {theirs['peak_rss_mib']:.0f} |", flush=True)
                for a, b in zip(ours["texts"], theirs["texts"]):
                    if a != b:
                        print(f"  text differs:\n    ours:   {a}\n    theirs: {b}", flush=True)


if __name__ == "__main__":
    main()
