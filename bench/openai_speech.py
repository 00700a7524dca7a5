#!/usr/bin/env python3
"""Issues 4 and 14: POST /v1/audio/speech (OpenAI dialect, synchronous, wav) of `voiced serve`
against a Python peer's /v1/audio/speech on the same model file, in one run.

- Time to first byte and to last byte, one client, a one-sentence, a three-sentence and a
  five-sentence input; ROUNDS rounds, the order of the two servers flipping every request.
- Throughput at 1, 4 and 8 concurrent clients: each level sends a fixed number of sentence
  requests (REQUESTS) to one server, then the same to the other (order flipping per level and
  round); requests/s, audio s per wall s, median and p90 latency.

voiced runs with 2 workers x 1 intra-op thread. The peer (--peer):
  fastkokoro  PyPI fastkokoro 0.7.0 (venv ~/.cache/voiced/venv-fastkokoro) with
              FASTKOKORO_MODEL_PATH=kokoro-v1.0.int8.onnx and a copy of voices_ja.npz in which
              jf_alpha's style array is also stored under the English voice name af_heart
              (fastkokoro refuses English text for a voice named jf_*). Its own defaults
              otherwise: one session, ONNX Runtime's default threads (all cores).
  kokoro-onnx bench/peer_kokoro.py serve: PyPI kokoro-onnx behind the standard library's
              threading HTTP server, 2 sessions x 1 thread (voiced's design, in Python).
  auto        fastkokoro when it starts, otherwise kokoro-onnx (default).

Run: python3 bench/openai_speech.py [--peer auto] [--rounds 3] [--requests 12] [--port 18092]
[--peer-port 18881]

Per audio second: the two servers' voices differ in length (their phonemizers differ), so the
tables also give seconds of wall time per second of audio, and audio seconds per wall second.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (CACHE, KOKORO_MODEL, KOKORO_VOICES, VENV_PY, Voiced, http, http_stream,  # noqa: E402
                     median, pct, rss_mib)

SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank."
PARAGRAPH = (
    "The weather was cold and windy this morning, so we stayed inside and read the newspaper. "
    "In the afternoon the sun came out, and we walked to the market to buy bread, apples and "
    "fresh fish for dinner. On the way home we met an old friend, who told us about her trip "
    "to the mountains and the little village where she stayed for a week."
)
PARAGRAPH5 = PARAGRAPH + (
    " She showed us pictures of the lake, the old church and the narrow streets. We promised to "
    "visit the village together next summer."
)
INPUTS = (("sentence", SENTENCE), ("paragraph", PARAGRAPH), ("paragraph5", PARAGRAPH5))
PEER_PORT = 18881  # --peer-port
FASTKOKORO = CACHE / "venv-fastkokoro/bin/fastkokoro"
FASTKOKORO_PY = CACHE / "venv-fastkokoro/bin/python"


def wav_seconds(payload: bytes) -> float:
    """Length of a 16-bit PCM wav body (header size found by the data chunk)."""
    at = payload.find(b"data")
    rate = int.from_bytes(payload[24:28], "little")
    channels = int.from_bytes(payload[22:24], "little")
    return (len(payload) - at - 8) / (2 * channels * rate)


class Peer:
    def __init__(self, kind: str):
        self.kind = kind
        self.work = Path(tempfile.mkdtemp(prefix="peer-bench."))
        self.url = f"http://127.0.0.1:{PEER_PORT}/v1/audio/speech"
        self.log = open(self.work / "peer.log", "w")
        if kind == "fastkokoro":
            voices = self.work / "voices.npz"
            subprocess.run([str(FASTKOKORO_PY), "-c",
                            "import numpy as np,sys; v=dict(np.load(sys.argv[1])); "
                            "v['af_heart']=v['jf_alpha']; np.savez(sys.argv[2], **v)",
                            str(KOKORO_VOICES), str(voices)], check=True)
            env = dict(os.environ, FASTKOKORO_MODEL_PATH=str(KOKORO_MODEL),
                       FASTKOKORO_VOICES_PATH=str(voices), FASTKOKORO_HOST="127.0.0.1",
                       FASTKOKORO_PORT=str(PEER_PORT), FASTKOKORO_DEFAULT_VOICE="af_heart",
                       FASTKOKORO_DEFAULT_LANG="en-us", HF_HUB_OFFLINE="1")
            self.proc = subprocess.Popen([str(FASTKOKORO)], env=env, stdout=self.log,
                                         stderr=subprocess.STDOUT)
            self.body = lambda text: {"model": "kokoro", "input": text, "voice": "af_heart",
                                      "response_format": "wav", "lang": "en-us"}
        else:
            script = Path(__file__).resolve().parent / "peer_kokoro.py"
            self.proc = subprocess.Popen([str(VENV_PY), str(script), "serve", str(PEER_PORT),
                                          "2", "1"], stdout=self.log, stderr=subprocess.STDOUT)
            self.body = lambda text: {"model": "kokoro", "input": text, "voice": "jf_alpha",
                                      "response_format": "wav"}
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{kind} exited: {(self.work / 'peer.log').read_text()[-3000:]}")
            try:
                status, payload, _ = http("POST", self.url, self.body("Ready?"), timeout=60)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"{kind} did not answer in time")

    def speak(self, text: str):
        return self.speak_timed(text)[1:]

    def speak_timed(self, text: str):
        """→ (seconds to first byte, to last byte, audio seconds)."""
        status, payload, first, last = http_stream("POST", self.url, self.body(text))
        assert status == 200, (status, payload[:300])
        return first, last, wav_seconds(payload)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.work, ignore_errors=True)


class Ours:
    def __init__(self, v: Voiced):
        self.v = v
        self.url = v.base + "/v1/audio/speech"

    def speak(self, text: str):
        return self.speak_timed(text)[1:]

    def speak_timed(self, text: str):
        """→ (seconds to first byte, to last byte, audio seconds)."""
        status, payload, first, last = http_stream(
            "POST", self.url, {"model": "kokoro", "input": text, "voice": self.v.voice,
                               "response_format": "wav"},
            {"authorization": f"Bearer {self.v.key}"})
        assert status == 200, (status, payload[:300])
        return first, last, wav_seconds(payload)


def load(server, clients: int, requests: int) -> dict:
    latencies, audio, lock = [], [], threading.Lock()
    todo = list(range(requests))

    def client():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            took, secs = server.speak(SENTENCE)
            with lock:
                latencies.append(took)
                audio.append(secs)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {"rps": requests / wall, "audio_rate": sum(audio) / wall,
            "p50": median(latencies), "p90": pct(latencies, 90)}


def main() -> None:
    global PEER_PORT
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", default="auto", choices=["auto", "fastkokoro", "kokoro-onnx"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--levels", default="1,4,8")
    parser.add_argument("--port", type=int, default=18092, help="voiced's port")
    parser.add_argument("--peer-port", type=int, default=PEER_PORT)
    args = parser.parse_args()
    PEER_PORT = args.peer_port
    started = time.time()

    peer = None
    kinds = ["fastkokoro", "kokoro-onnx"] if args.peer == "auto" else [args.peer]
    for kind in kinds:
        if kind == "fastkokoro" and not FASTKOKORO.exists():
            print("fastkokoro is not installed; using kokoro-onnx", flush=True)
            continue
        try:
            peer = Peer(kind)
            break
        except Exception as err:  # noqa: BLE001 - report and fall back
            print(f"peer {kind} unusable: {str(err)[-800:]}", flush=True)
    assert peer, "no peer could be started"
    print(f"peer: {peer.kind}", flush=True)

    v = Voiced(port=args.port)
    try:
        v.setup()
        v.start(workers=2, engine_threads=1)
        ours = Ours(v)
        for _ in range(4):  # each worker loads its engine on its first job
            threads = [threading.Thread(target=ours.speak, args=("Warm up.",)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        peer.speak(SENTENCE)

        names = [name for name, _ in INPUTS]
        ttfb = {(name, who): [] for name in names for who in ("ours", "theirs")}
        ttlb = {(name, who): [] for name in names for who in ("ours", "theirs")}
        audio = {}
        per_audio = {(name, who): [] for name in names for who in ("ours", "theirs")}
        flip = False
        for _ in range(args.rounds):
            for name, text in INPUTS:
                order = [("theirs", peer), ("ours", ours)] if flip else [("ours", ours), ("theirs", peer)]
                flip = not flip
                for who, server in order:
                    first, last, secs = server.speak_timed(text)
                    ttfb[(name, who)].append(first)
                    ttlb[(name, who)].append(last)
                    audio[(name, who)] = secs
                    per_audio[(name, who)].append(last / secs)
        print(f"\nTime to first and last byte, one client, {args.rounds} rounds interleaved (median s)")
        print("| input | voiced first / last s | peer first / last s | voiced first / own last "
              "| voiced first / peer last | **voiced last / peer last** | audio s voiced / peer |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            of, ol = ttfb[(name, "ours")], ttlb[(name, "ours")]
            tf, tl = ttfb[(name, "theirs")], ttlb[(name, "theirs")]
            own = median([f / last for f, last in zip(of, ol)])
            vs_peer = median([f / last for f, last in zip(of, tl)])
            last_ratio = median([a / b for a, b in zip(ol, tl)])
            print(f"| {name} | {median(of):.2f} / {median(ol):.2f} | {median(tf):.2f} / {median(tl):.2f} "
                  f"| {own:.2f} | {vs_peer:.2f} | **{last_ratio:.2f}** "
                  f"| {audio[(name, 'ours')]:.1f} / {audio[(name, 'theirs')]:.1f} |", flush=True)
        print("(ratios are medians of the per-round ratios)")
        print("\nPer audio second: last byte s / audio s, one client (medians)")
        print("| input | voiced | peer | **ratio voiced / peer** |")
        print("|---|---|---|---|")
        for name in names:
            po, pt = per_audio[(name, "ours")], per_audio[(name, "theirs")]
            ratio = median([a / b for a, b in zip(po, pt)])
            print(f"| {name} | {median(po):.3f} | {median(pt):.3f} | **{ratio:.2f}** |", flush=True)

        levels = [int(x) for x in args.levels.split(",")]
        runs = {(c, who): [] for c in levels for who in ("ours", "theirs")}
        for _ in range(max(1, args.rounds - 1)):
            for clients in levels:
                order = [("theirs", peer), ("ours", ours)] if flip else [("ours", ours), ("theirs", peer)]
                flip = not flip
                for who, server in order:
                    runs[(clients, who)].append(load(server, clients, args.requests))
                o, t = runs[(clients, "ours")][-1], runs[(clients, "theirs")][-1]
                print(f"  {clients} clients: voiced {o['rps']:.2f} req/s, peer {t['rps']:.2f} req/s",
                      flush=True)
        print(f"\nThroughput, sentence requests ({args.requests} per level and server), "
              f"{max(1, args.rounds - 1)} interleaved rounds (medians)")
        print("| clients | voiced req/s | peer req/s | ratio req/s voiced/peer | voiced p50 / p90 s "
              "| peer p50 / p90 s | ratio p50 voiced/peer | audio s per s voiced / peer "
              "| ratio audio s per s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for clients in levels:
            o, t = runs[(clients, "ours")], runs[(clients, "theirs")]
            ratio = median([a["rps"] / b["rps"] for a, b in zip(o, t)])
            lat = median([a["p50"] / b["p50"] for a, b in zip(o, t)])
            print(f"| {clients} | {median([r['rps'] for r in o]):.2f} "
                  f"| {median([r['rps'] for r in t]):.2f} | {ratio:.2f} "
                  f"| {median([r['p50'] for r in o]):.2f} / {median([r['p90'] for r in o]):.2f} "
                  f"| {median([r['p50'] for r in t]):.2f} / {median([r['p90'] for r in t]):.2f} "
                  f"| {lat:.2f} | {median([r['audio_rate'] for r in o]):.2f} / "
                  f"{median([r['audio_rate'] for r in t]):.2f} "
                  f"| {median([a['audio_rate'] / b['audio_rate'] for a, b in zip(o, t)]):.2f} |",
                  flush=True)
        print(f"\npeak RSS MiB: voiced serve {v.peak_rss_mib():.0f}, peer {rss_mib(peer.proc.pid):.0f}")
        print(f"wall time of the whole run: {time.time() - started:.0f} s")
    finally:
        peer.stop()
        v.close()


if __name__ == "__main__":
    main()
