#!/usr/bin/env python3
"""Issue 28 item 4: one lone 30 s transcription (Whisper base) through `voiced serve`
(POST /v1/transcriptions) against faster-whisper on the same clip with its default CPU threads,
side by side, rounds interleaved (the order flips every round).

voiced runs with its default recogniser (1 recogniser thread, int8; no generation worker); a
transcription that is alone in
the process runs on its wide replica (every core). faster-whisper 1.2.1 on CTranslate2 4.8.4 (the
venv of bench/whisper_rtf.py) loads the same model directory once in a child process,
`cpu_threads=0` (its default), int8, beam 5, no VAD, no conditioning on previous text (voiced's
decoding), and is timed per call around `transcribe` with its segments consumed. voiced's time is
the HTTP request's wall time (upload, decode, recognise, answer), so it carries the server's
overhead as well. Also prints both transcripts' words once, to show they agree.

Clip: espeak-ng (en-us) reading a long paragraph twice, resampled to 16 kHz and cut to 30.0 s.

Run: ~/.cache/voiced/venv-bench/bin/python bench/lone_transcription.py [--rounds 5] [--port 18094]
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Voiced, http, median  # noqa: E402

MODELS_DIR = Path(os.environ.get("VOICED_MODELS_DIR", Path.home() / ".cache/voiced/models"))
TEXT = (
    "The weather was cold and windy this morning, so we stayed inside and read the newspaper. "
    "In the afternoon the sun came out, and we walked to the market to buy bread, apples and "
    "fresh fish for dinner. On the way home we met an old friend, who told us about her trip "
    "to the mountains and the little village where she stayed for a week. She showed us "
    "pictures of the lake, the old church and the narrow streets. We promised to visit the "
    "village together next summer, and to bring our bicycles, a tent and a good map. Then we "
    "cooked the fish with lemon and herbs, and talked until late in the evening."
)

PEER = r"""
import json, sys, time, wave
import numpy as np
from faster_whisper import WhisperModel
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8")  # cpu_threads=0: default
with wave.open(sys.argv[2]) as w:
    audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
options = dict(beam_size=5, condition_on_previous_text=False, vad_filter=False)
list(model.transcribe(audio, **options)[0])  # the first call is slower: warm up
print(json.dumps({"ready": True}), flush=True)
for _ in sys.stdin:
    started = time.perf_counter()
    segments, info = model.transcribe(audio, **options)
    text = " ".join(s.text.strip() for s in segments)
    print(json.dumps({"s": time.perf_counter() - started, "text": text}), flush=True)
"""


def make_clip(workdir: Path) -> Path:
    raw, clip = workdir / "long-22k.wav", workdir / "clip30.wav"
    # Read twice: one reading is shorter than 30 s.
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), TEXT + " " + TEXT], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(clip),
                    "trim", "0", "30"], check=True)
    return clip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=18094)
    parser.add_argument("--model", default="whisper-base")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lone-asr."))
    clip = make_clip(workdir)
    clip_bytes = clip.read_bytes()
    seconds = (len(clip_bytes) - 44) / 32000
    model_dir = MODELS_DIR / args.model
    peer = subprocess.Popen([sys.executable, "-c", PEER, str(model_dir), str(clip)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert json.loads(peer.stdout.readline())["ready"]

    v = Voiced(port=args.port)
    try:
        v.setup()
        v.start(workers=0, whisper_model=args.model, asr_threads=1)
        body = {"audio": base64.b64encode(clip_bytes).decode()}
        headers = {"authorization": f"Bearer {v.key}"}

        def ours():
            started = time.perf_counter()
            status, payload = http("POST", v.base + "/v1/transcriptions", body, headers)[:2]
            took = time.perf_counter() - started
            assert status == 200, (status, payload[:300])
            return took, json.loads(payload)["text"]

        def theirs():
            peer.stdin.write("go\n")
            peer.stdin.flush()
            answer = json.loads(peer.stdout.readline())
            return answer["s"], answer["text"]

        ours(), ours()  # the first loads the models
        times = {"voiced": [], "faster-whisper": []}
        texts = {}
        for round_ in range(args.rounds):
            order = [("voiced", ours), ("faster-whisper", theirs)]
            if round_ % 2:
                order.reverse()
            for name, run in order:
                took, text = run()
                times[name].append(took)
                texts[name] = text
            print(f"  round {round_}: voiced {times['voiced'][-1]:.2f} s, "
                  f"faster-whisper {times['faster-whisper'][-1]:.2f} s", flush=True)
        ratios = [a / b for a, b in zip(times["voiced"], times["faster-whisper"])]
        print(f"\nLone transcription of a {seconds:.1f} s clip ({args.model}), "
              f"{args.rounds} interleaved rounds, medians")
        print("| voiced s (HTTP) | faster-whisper s (in-process) | **voiced / faster-whisper** "
              "| per-round ratios | voiced RTF | faster-whisper RTF |")
        print("|---|---|---|---|---|---|")
        o, t = median(times["voiced"]), median(times["faster-whisper"])
        print(f"| {o:.2f} | {t:.2f} | **{median(ratios):.2f}** "
              f"| {min(ratios):.2f}–{max(ratios):.2f} | {seconds / o:.1f}× | {seconds / t:.1f}× |")
        for name, text in texts.items():
            print(f"{name}: {text}")
    finally:
        v.stop()
        peer.stdin.close()
        peer.wait()


if __name__ == "__main__":
    main()
