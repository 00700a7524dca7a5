#!/usr/bin/env python3
"""Issue 25 item 6: the OpenAI transcription dialect's cost, side by side, on one `voiced serve`.

1. Request overhead: POST /v1/audio/transcriptions (multipart, response_format json) against
   POST /v1/transcriptions (base64 JSON) on the same clips; ratio openai/native per clip and
   round, interleaved (the order flips every round).
2. Word timestamps: POST /v1/transcriptions with `timestamps: "word"` against none; ratio.
3. Streaming: POST /v1/audio/transcriptions with stream=true on a clip of about 60 s (the
   clips of bench/word_timestamps.py joined); seconds to the first `transcript.text.delta`
   against seconds to the end of the stream.

Same recogniser everywhere (whisper-base by default, int8, 1 recogniser thread), warmed before
timing. Setup: cargo build --release --bin voiced, the venv of bench/word_timestamps.py (for the
Kokoro clip; it is skipped without). Run:
    ~/.cache/voiced/venv-bench/bin/python bench/openai_transcription.py [--rounds 3]
"""

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Voiced, http, median  # noqa: E402
from word_timestamps import clips  # noqa: E402

BOUNDARY = "voiced-bench-boundary-5e1f"


def multipart(fields: list, audio: bytes) -> bytes:
    out = b""
    for name, value in fields:
        out += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                f"{value}\r\n").encode()
    out += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"clip.wav\"\r\nContent-Type: audio/wav\r\n\r\n").encode()
    return out + audio + f"\r\n--{BOUNDARY}--\r\n".encode()


def post_form(url: str, body: bytes, headers: dict, stream: bool = False):
    """→ (status, payload, seconds to the first body byte, seconds to the last byte)."""
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("content-type", f"multipart/form-data; boundary={BOUNDARY}")
    for name, value in headers.items():
        request.add_header(name, value)
    started = time.perf_counter()
    first, chunks = None, []
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            status = response.status
            while True:
                chunk = response.read1(1 << 16) if stream else response.read()
                if not chunk:
                    break
                if first is None:
                    first = time.perf_counter() - started
                chunks.append(chunk)
    except urllib.error.HTTPError as err:
        chunks, status = [err.read()], err.code
    last = time.perf_counter() - started
    return status, b"".join(chunks), first or last, last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default="whisper-base")
    args = parser.parse_args()
    v = Voiced(port=18095)
    with tempfile.TemporaryDirectory() as tmp:
        named = clips(Path(tmp))
        paths = [p for _, p in named]
        long_clip = Path(tmp) / "long.wav"
        subprocess.run(["sox", *paths, str(long_clip)], check=True)
        audio = {p: Path(p).read_bytes() for p in paths}
        try:
            v.setup()
            v.start(workers=0, whisper_model=args.model, asr_threads=1)
            native = {p: [] for p in paths}
            openai = {p: [] for p in paths}
            plain = {p: [] for p in paths}
            words = {p: [] for p in paths}
            for r in range(args.rounds):
                def via_native():
                    for p in paths:
                        body = {"audio": base64.b64encode(audio[p]).decode()}
                        status, payload, took = http("POST", v.base + "/v1/transcriptions", body, v.headers())
                        assert status == 200, payload[:300]
                        native[p].append(took)

                def via_openai():
                    for p in paths:
                        form = multipart([("model", "whisper-1")], audio[p])
                        status, payload, _, took = post_form(v.base + "/v1/audio/transcriptions", form, v.headers())
                        assert status == 200, payload[:300]
                        openai[p].append(took)

                def without_words():
                    for p in paths:
                        body = {"audio": base64.b64encode(audio[p]).decode(), "timestamps": "segment"}
                        status, payload, took = http("POST", v.base + "/v1/transcriptions", body, v.headers())
                        assert status == 200, payload[:300]
                        plain[p].append(took)

                def with_words():
                    for p in paths:
                        body = {"audio": base64.b64encode(audio[p]).decode(), "timestamps": "word"}
                        status, payload, took = http("POST", v.base + "/v1/transcriptions", body, v.headers())
                        assert status == 200, payload[:300]
                        words[p].append(took)

                steps = [via_native, via_openai, without_words, with_words]
                for step in (steps if r % 2 == 0 else steps[::-1]):
                    step()
            print(f"\n{args.model}, 1 recogniser thread, {args.rounds} rounds interleaved (medians)")
            print("| clip | native s | openai s | openai/native | segments s | words s | words/segments |")
            print("|---|---|---|---|---|---|---|")
            all_overhead, all_words = [], []
            for (name, p) in named:
                o = [a / b for a, b in zip(openai[p], native[p])]
                w = [a / b for a, b in zip(words[p], plain[p])]
                all_overhead += o
                all_words += w
                print(f"| {name} | {median(native[p]):.2f} | {median(openai[p]):.2f} | {median(o):.3f} "
                      f"| {median(plain[p]):.2f} | {median(words[p]):.2f} | {median(w):.3f} |")
            print(f"all clips: openai/native {median(all_overhead):.3f}, words/segments {median(all_words):.3f}")

            firsts, lasts = [], []
            for _ in range(args.rounds):
                form = multipart([("model", "whisper-1"), ("stream", "true")], long_clip.read_bytes())
                status, payload, first, last = post_form(v.base + "/v1/audio/transcriptions", form,
                                                         v.headers(), stream=True)
                assert status == 200, payload[:300]
                events = [json.loads(l[5:]) for l in payload.decode().splitlines() if l.startswith("data:")]
                assert events[-1]["type"] == "transcript.text.done", events[-1]
                firsts.append(first)
                lasts.append(last)
            seconds = subprocess.run(["soxi", "-D", str(long_clip)], capture_output=True, text=True).stdout.strip()
            print(f"stream of a {float(seconds):.0f} s clip: first delta {median(firsts):.2f} s, "
                  f"done {median(lasts):.2f} s, ratio {median([f / l for f, l in zip(firsts, lasts)]):.3f}")
        finally:
            v.close()


if __name__ == "__main__":
    main()
