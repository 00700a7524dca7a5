#!/usr/bin/env python3
"""The Python peer for the speech benchmarks: PyPI `kokoro-onnx` on the same model file.

Run with the bench venv (`~/.cache/voiced/venv-bench/bin/python`, with `pip install kokoro-onnx`).

    peer_kokoro.py batch WORKERS THREADS TEXTS_JSON
        WORKERS sessions of THREADS intra-op threads each, one Python thread per session pulling
        texts from a shared queue (ONNX Runtime releases the GIL while it runs). Each session is
        warmed once first. Prints one JSON line: audio_s, wall_s, load_s, peak_rss_mib.
    peer_kokoro.py serve PORT WORKERS THREADS
        A minimal OpenAI-style `POST /v1/audio/speech` server ({input, voice, response_format:
        wav}) on the standard library's threading HTTP server, WORKERS sessions handed out from a
        pool (the same serving design as voiced: sessions × threads). Used only when `fastkokoro`
        cannot be run offline.

Model: ~/.cache/voiced/models/kokoro/kokoro-v1.0.int8.onnx and voices_ja.npz, espeak-ng English
phonemes (lang en-us), voice jf_alpha, speed 1.
"""

import io
import json
import os
import queue
import resource
import sys
import threading
import time
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import onnxruntime as rt
from kokoro_onnx import Kokoro

MODELS = Path(os.environ.get("VOICED_MODELS_DIR", Path.home() / ".cache/voiced/models"))
MODEL = str(MODELS / "kokoro/kokoro-v1.0.int8.onnx")
VOICES = str(MODELS / "kokoro/voices_ja.npz")
VOICE = "jf_alpha"
WARM = "Warming up the session."


def load(threads: int) -> Kokoro:
    options = rt.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = rt.InferenceSession(MODEL, options, providers=["CPUExecutionProvider"])
    kokoro = Kokoro.from_session(session, VOICES)
    kokoro.create(WARM, voice=VOICE, speed=1.0, lang="en-us")
    return kokoro


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def batch(workers: int, threads: int, texts: list) -> None:
    started = time.perf_counter()
    engines = [load(threads) for _ in range(workers)]
    load_s = time.perf_counter() - started
    todo = queue.Queue()
    for text in texts:
        todo.put(text)
    audio = []

    def run(kokoro: Kokoro) -> None:
        while True:
            try:
                text = todo.get_nowait()
            except queue.Empty:
                return
            samples, rate = kokoro.create(text, voice=VOICE, speed=1.0, lang="en-us")
            audio.append(len(samples) / rate)

    started = time.perf_counter()
    pool = [threading.Thread(target=run, args=(e,)) for e in engines]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - started
    print(json.dumps({"audio_s": sum(audio), "wall_s": wall, "texts": len(audio),
                      "load_s": load_s, "peak_rss_mib": peak_rss_mib()}), flush=True)


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def serve(port: int, workers: int, threads: int) -> None:
    pool = queue.Queue()
    for _ in range(workers):
        pool.put(load(threads))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, json.dumps({"peak_rss_mib": peak_rss_mib()}).encode(),
                           "application/json")
            else:
                self.reply(404, b"{}", "application/json")

        def do_POST(self):
            if self.path != "/v1/audio/speech":
                return self.reply(404, b"{}", "application/json")
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            kokoro = pool.get()
            try:
                samples, rate = kokoro.create(body["input"], voice=VOICE, speed=1.0, lang="en-us")
            finally:
                pool.put(kokoro)
            self.reply(200, wav_bytes(samples, rate), "audio/wav")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(json.dumps({"event": "ready", "port": port}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "batch":
        batch(int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]))
    elif mode == "serve":
        serve(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
