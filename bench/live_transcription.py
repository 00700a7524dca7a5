#!/usr/bin/env python3
"""Issue 38 item 7: live transcription through voiced's Deepgram route (`GET /v1/listen`, a
WebSocket) against a reference loop made of faster-whisper and the Silero VAD package in Python,
side by side in one run, same clips, same model, same endpointing.

What is measured, per model (whisper-tiny.en, whisper-base) and per number of concurrent streams:
- **Time from the end of speech to the final**, p50 and p95. The end of speech is ground truth:
  the clips are built here from single utterances whose speech ends are found by energy before
  they are joined. voiced's final is the `Results` with `is_final: true` whose utterance
  (`start` + `duration`) holds that speech end; the reference's is the moment its
  `transcribe` of the ended utterance returns.
- **Real-time streams**: the lag of each final (arrival − end of speech) against the time of the
  speech end; a point holds real time when that lag does not grow (least-squares slope, the
  rounds pooled, < 0.01 s per s, i.e. < 0.6 s per minute) and every stream's last final came
  within 5 s of the end of its audio.
- **CPU per stream-second**: utime + stime of the server process (`/proc/PID/stat`) over a run,
  divided by streams × seconds of audio per stream; the same for the reference's process.
- **Word error** of the streamed finals (one stream's finals joined) against voiced's own batch
  transcript of exactly the audio that stream played (`POST /v1/transcriptions`) and against the
  known text.

The clips: the Beckett clip (a person reading, with pauses; `beckett.wav` from the
`useful-moonshine-onnx==20251121` wheel) and six espeak-ng (en-us) sentences, each a unit at
16 kHz, joined with 1 s of silence between units, 0.5 s before the first. Stream i plays the
units rotated by i (so that the streams' utterances do not all end at the same moment), looped
until `--seconds` of audio, then 1.5 s of silence and `CloseStream`. Each stream sends 50 ms
frames (800 samples of 16-bit PCM) at real time: frame k leaves when it has been "captured",
at t0 + (k + 1) × 50 ms.

voiced: `voiced serve` (bench/harness.py) with `whisper_model` set to the model,
`asr_threads=2` (two recogniser threads of one CTranslate2 thread each; a session that opens
alone runs on the wide replica with both cores), `max_live_sessions` and
`max_transcriptions_per_account` raised to the stream count, no generation worker. The query is
LiveKit's with endpointing 300 ms: `model=nova-3&encoding=linear16&sample_rate=16000&
interim_results=true&endpointing=300&vad_events=true&language=en`, `Authorization: Token <key>`.
voiced also computes its interims (one recogniser pass per second of open utterance, when the
recogniser is free): they are part of its CPU here; the reference computes none.

The reference, one Python process per model (so that its CPU is its own): per stream a thread
that paces the same frames at the same schedule and runs Silero VAD 6.2.3 as the package's
ONNX wrapper does (`silero_vad.utils_vad.OnnxWrapper`: 512-sample frames behind a 64-sample
context, the recurrent state carried; onnxruntime, one thread; the package itself imports torch,
which this machine cannot install, so its arithmetic is reproduced on numpy as
tests/vad/reference.py does, on the `.onnx` the installed wheel ships); the endpointing of
`service::live::utterances` (speech from a frame ≥ 0.5, silence below 0.35, 300 ms of silence
ends the utterance, 256 ms kept before the first speech frame, < 160 ms of speech dropped, 30 s
at most); and per stream a thread that transcribes each ended utterance in order with
faster-whisper 1.2.1 on CTranslate2 4.8.4, the model directory loaded directly, decoding as
voiced does (int8, beam 5, temperature fallback, no conditioning on previous text, the previous
final as `initial_prompt`, word timestamps, language `en`, no VAD filter). Threads: one stream
gets `cpu_threads=2, num_workers=1` (voiced's wide replica), more get `cpu_threads=1,
num_workers=2` (voiced's two recogniser threads).

Rounds: for each point, voiced then the reference, then the reference then voiced (the order
flips every round). The machine is shared: the 1-minute load average is printed with each table.
Nothing here is a test.

Setup (once): ~/.cache/voiced/venv-bench/bin/pip install faster-whisper==1.2.1 ctranslate2==4.8.4
websockets==17.4 && ~/.cache/voiced/venv-bench/bin/pip install --no-deps silero-vad==6.2.3
(the Hugging Face hub is not used: the model directories under ~/.cache/voiced/models are loaded
directly; `voiced models fetch vad` has put silero-vad/silero_vad.onnx there for voiced).
Run (after `source scripts/env.sh`; docs/benchmarks.md has a debug and a release run):
    VOICED_BIN=$CARGO_TARGET_DIR/release/voiced ~/.cache/voiced/venv-bench/bin/python \
        bench/live_transcription.py --seconds 45 --rounds 2 \
        [--points 'whisper-tiny.en:1,2,4,6;whisper-base:1,2,3,4'] [--port 18095]
"""

import argparse
import asyncio
import base64
import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import wave
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

RATE = 16000
FRAME_MS = 50
FRAME_SAMPLES = RATE * FRAME_MS // 1000
GAP_S = 1.0
LEAD_S = 0.5
TAIL_S = 1.5
ENDPOINTING_MS = 300
QUERY = ("model=nova-3&encoding=linear16&sample_rate=16000&interim_results=true"
         f"&endpointing={ENDPOINTING_MS}&vad_events=true&language=en")
MODELS_DIR = Path(os.environ.get("VOICED_MODELS_DIR", Path.home() / ".cache/voiced/models"))
BECKETT = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better."
SENTENCES = [
    "The weather was cold and windy this morning, so we stayed inside and read the newspaper.",
    "In the afternoon the sun came out, and we walked to the market to buy bread and apples.",
    "On the way home we met an old friend, who told us about her trip to the mountains.",
    "She showed us pictures of the lake, the old church and the narrow streets.",
    "We promised to visit the village together next summer.",
    "Then we cooked the fish with lemon and herbs, and talked until late in the evening.",
]


# --- clips ---------------------------------------------------------------------------------------

def read_wav(path):
    import numpy as np

    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0


def speech_spans(audio, min_gap_s=0.15):
    """(start, end) seconds of speech by energy: 10 ms frames whose RMS is within 35 dB of the
    loudest frame (and above -55 dBFS), joined across gaps shorter than `min_gap_s`."""
    import numpy as np

    hop = RATE // 100
    n = len(audio) // hop
    rms = np.sqrt(np.mean(audio[: n * hop].reshape(n, hop) ** 2, axis=1) + 1e-12)
    db = 20 * np.log10(rms)
    loud = db > max(db.max() - 35.0, -55.0)
    spans, start, last = [], None, None
    for i, on in enumerate(loud):
        if not on:
            continue
        if start is None:
            start = i
        elif (i - last - 1) * hop / RATE >= min_gap_s:
            spans.append((start * hop / RATE, (last + 1) * hop / RATE))
            start = i
        last = i
    if start is not None:
        spans.append((start * hop / RATE, (last + 1) * hop / RATE))
    return spans


def build_units(workdir: Path):
    """[(samples, text, [speech end seconds within the unit])]: Beckett, then the sentences,
    each trimmed to its speech (by energy) with 100 ms either side."""
    import numpy as np

    wheel = MODELS_DIR / ".pip" / "useful_moonshine_onnx-20251121-py3-none-any.whl"
    if not wheel.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        "useful-moonshine-onnx==20251121", "-d", str(wheel.parent)], check=True)
    beckett = workdir / "beckett.wav"
    beckett.write_bytes(zipfile.ZipFile(wheel).read("moonshine_onnx/assets/beckett.wav"))
    raw = [(read_wav(beckett), BECKETT)]
    for i, text in enumerate(SENTENCES):
        wav22, wav16 = workdir / f"s{i}-22k.wav", workdir / f"s{i}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(wav22), text], check=True)
        subprocess.run(["sox", str(wav22), "-r", str(RATE), "-c", "1", "-b", "16", str(wav16)],
                       check=True)
        raw.append((read_wav(wav16), text))
    units = []
    for audio, text in raw:
        spans = speech_spans(audio)
        pad = int(0.1 * RATE)
        a = max(0, int(spans[0][0] * RATE) - pad)
        b = min(len(audio), int(spans[-1][1] * RATE) + pad)
        cut = audio[a:b].astype(np.float32)
        units.append((cut, text, [e - a / RATE for _, e in spans]))
    return units


def stream_audio(units, rotation: int, seconds: float):
    """The audio of one stream: lead silence, units rotated by `rotation` with gaps, looped
    until `seconds`, then the tail → (samples, text, [speech end seconds on the stream clock])."""
    import numpy as np

    order = [units[(rotation + i) % len(units)] for i in range(len(units))]
    parts = [np.zeros(int(LEAD_S * RATE), np.float32)]
    clock, texts, ends, i = LEAD_S, [], [], 0
    while clock < seconds:
        audio, text, unit_ends = order[i % len(order)]
        parts.append(audio)
        ends.extend(clock + e for e in unit_ends)
        texts.append(text)
        clock += len(audio) / RATE
        parts.append(np.zeros(int(GAP_S * RATE), np.float32))
        clock += GAP_S
        i += 1
    parts.append(np.zeros(int(TAIL_S * RATE), np.float32))
    return np.concatenate(parts), " ".join(texts), ends


def pcm16(samples) -> bytes:
    import numpy as np

    return (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


# --- measures ------------------------------------------------------------------------------------

def words(text: str):
    out = []
    for w in text.lower().split():
        w = "".join(c for c in w if c.isalnum() or c == "'")
        if w:
            out.append(w)
    return out


def wer(reference: str, hypothesis: str) -> float:
    r, h = words(reference), words(hypothesis)
    prev = list(range(len(h) + 1))
    for i, rw in enumerate(r):
        cur = [i + 1] * (len(h) + 1)
        for j, hw in enumerate(h):
            cur[j + 1] = min(prev[j] + (rw != hw), prev[j + 1] + 1, cur[j] + 1)
        prev = cur
    return prev[len(h)] / max(1, len(r))


def latencies(finals, ends, t0, sent):
    """finals: [(arrival, start, duration)] on the stream clock → [(speech end s, latency s)].
    A final's speech end is the last known end inside its utterance; the end's wall time is the
    moment the frame holding it was sent (t0 + end, or later if the sender was late)."""
    out, used = [], set()
    for arrival, start, duration in finals:
        inside = [e for e in ends if start - 1e-3 <= e <= start + duration + 1e-3]
        if not inside:
            continue
        end = max(inside)
        if end in used:
            continue
        used.add(end)
        k = min(len(sent) - 1, math.ceil(end * RATE / FRAME_SAMPLES) - 1)
        spoken = max(t0 + end, sent[k])
        out.append((end, arrival - spoken))
    return out


def slope(points):
    """Least-squares slope of lag (s) over time (s)."""
    if len(points) < 3:
        return float("nan")
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else float("nan")


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# --- the reference process -----------------------------------------------------------------------

def silero_onnx() -> str:
    """The `.onnx` the installed silero-vad wheel ships (found without importing the package,
    whose `__init__` imports torch)."""
    import importlib.util

    spec = importlib.util.find_spec("silero_vad")
    path = Path(spec.submodule_search_locations[0]) / "data" / "silero_vad.onnx"
    assert path.is_file(), path
    return str(path)


class SileroVad:
    """silero_vad.utils_vad.OnnxWrapper (6.2.3) at 16 kHz, on numpy."""

    FRAME, CONTEXT = 512, 64

    def __init__(self, model: str):
        import numpy as np
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(model, sess_options=opts,
                                                    providers=["CPUExecutionProvider"])
        self.state = np.zeros((2, 1, 128), np.float32)
        self.context = np.zeros((1, self.CONTEXT), np.float32)
        self.sr = np.array(RATE, dtype="int64")

    def __call__(self, frame) -> float:
        import numpy as np

        x = np.concatenate([self.context, frame[None, :]], axis=1)
        out, self.state = self.session.run(None, {"input": x, "state": self.state, "sr": self.sr})
        self.context = x[..., -self.CONTEXT:]
        return float(out.reshape(-1)[0])


class Endpointer:
    """service::live::utterances, line for line."""

    THRESHOLD, HYSTERESIS = 0.5, 0.15
    PRE_ROLL = int(0.256 * RATE)
    MIN_SPEECH = int(0.160 * RATE)
    MAX_UTTERANCE = 30 * RATE

    def __init__(self, endpointing_ms: int):
        self.endpoint_frames = max(1, math.ceil(endpointing_ms * RATE / 1000 / SileroVad.FRAME))
        self.clock = 0
        self.pre_roll = []
        self.open = None

    def frame(self, frame, p):
        """→ an ended utterance (start sample, samples) or None."""
        import numpy as np

        start = self.clock
        self.clock += len(frame)
        if self.open is None:
            if p >= self.THRESHOLD:
                kept = self.pre_roll[-self.PRE_ROLL:] if self.pre_roll else []
                self.open = {"start": start - len(kept), "parts": [np.array(kept, np.float32), frame],
                             "len": len(kept) + len(frame), "speech": 1, "silence": 0}
                self.pre_roll = []
            else:
                self.pre_roll.extend(frame.tolist())
                del self.pre_roll[:-self.PRE_ROLL]
            return None
        o = self.open
        o["parts"].append(frame)
        o["len"] += len(frame)
        if p >= self.THRESHOLD - self.HYSTERESIS:
            o["speech"] += 1
            o["silence"] = 0
        else:
            o["silence"] += 1
        if o["silence"] >= self.endpoint_frames:
            self.open = None
            if o["speech"] * SileroVad.FRAME < self.MIN_SPEECH:
                return None
            return o["start"], np.concatenate(o["parts"])
        if o["len"] + SileroVad.FRAME > self.MAX_UTTERANCE:
            self.open = None
            return o["start"], np.concatenate(o["parts"])
        return None

    def close(self):
        import numpy as np

        o, self.open = self.open, None
        return (o["start"], np.concatenate(o["parts"])) if o else None


def reference_worker(model_dir: str) -> None:
    """The reference loop's process: reads one JSON command a line ({"streams": [paths of npy
    audio], "t0": monotonic start}), answers one JSON line per command."""
    import numpy as np
    from faster_whisper import WhisperModel

    vad_model = silero_onnx()
    models = {}

    def model_for(n_streams):
        key = (2, 1) if n_streams == 1 else (1, 2)
        if key not in models:
            models[key] = WhisperModel(model_dir, device="cpu", compute_type="int8",
                                       cpu_threads=key[0], num_workers=key[1])
            warm = np.zeros(RATE, np.float32)
            list(models[key].transcribe(warm, language="en", beam_size=5)[0])
        return models[key]

    options = dict(language="en", beam_size=5, condition_on_previous_text=False,
                   word_timestamps=True, vad_filter=False)
    for n in (1, 2):
        model_for(n)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        model = model_for(len(command["streams"]))
        results = [None] * len(command["streams"])

        def run_stream(index, path):
            audio = np.load(path)
            vad = SileroVad(vad_model)
            endpointer = Endpointer(ENDPOINTING_MS)
            jobs = queue.Queue()
            finals, sent = [], []

            def transcriber():
                prompt = None
                while True:
                    job = jobs.get()
                    if job is None:
                        return
                    start, samples = job
                    segments, _ = model.transcribe(samples, initial_prompt=prompt, **options)
                    text = "".join(s.text for s in segments).strip()
                    finals.append({"arrival": time.monotonic(), "start": start / RATE,
                                   "duration": len(samples) / RATE, "text": text})
                    if text:
                        prompt = text

            worker = threading.Thread(target=transcriber)
            worker.start()
            t0 = command["t0"]
            pending = np.zeros(0, np.float32)
            for k in range(len(audio) // FRAME_SAMPLES):
                delay = t0 + (k + 1) * FRAME_MS / 1000 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sent.append(time.monotonic())
                pending = np.concatenate([pending, audio[k * FRAME_SAMPLES:(k + 1) * FRAME_SAMPLES]])
                whole = len(pending) // SileroVad.FRAME * SileroVad.FRAME
                for i in range(0, whole, SileroVad.FRAME):
                    frame = pending[i:i + SileroVad.FRAME]
                    ended = endpointer.frame(frame, vad(frame))
                    if ended is not None:
                        jobs.put(ended)
                pending = pending[whole:]
            tail = endpointer.close()
            if tail is not None:
                jobs.put(tail)
            jobs.put(None)
            worker.join()
            results[index] = {"finals": finals, "sent": sent, "closed": time.monotonic()}

        threads = [threading.Thread(target=run_stream, args=(i, p))
                   for i, p in enumerate(command["streams"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps({"streams": results}), flush=True)


class Reference:
    def __init__(self, model: str):
        self.proc = subprocess.Popen([sys.executable, __file__, "--reference-worker",
                                      str(MODELS_DIR / model)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert json.loads(self.proc.stdout.readline())["ready"]

    def run(self, paths, t0):
        self.proc.stdin.write(json.dumps({"streams": paths, "t0": t0}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["streams"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# --- voiced's side -------------------------------------------------------------------------------

async def voiced_stream(url, key, audio, t0):
    import websockets

    finals, sent = [], []
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {key}"},
                                  max_size=None, ping_interval=None) as ws:
        async def sender():
            data = pcm16(audio)
            step = FRAME_SAMPLES * 2
            for k in range(len(audio) // FRAME_SAMPLES):
                delay = t0 + (k + 1) * FRAME_MS / 1000 - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await ws.send(data[k * step:(k + 1) * step])
                sent.append(time.monotonic())
            await ws.send(json.dumps({"type": "CloseStream"}))

        task = asyncio.create_task(sender())
        async for message in ws:
            if isinstance(message, bytes):
                continue
            event = json.loads(message)
            if event.get("type") == "Results" and event.get("is_final"):
                finals.append({"arrival": time.monotonic(), "start": event["start"],
                               "duration": event["duration"],
                               "text": event["channel"]["alternatives"][0]["transcript"]})
            elif event.get("type") == "Metadata":
                break
        await task
    return {"finals": finals, "sent": sent, "closed": time.monotonic()}


def run_voiced(base, key, audios, t0):
    url = base.replace("http", "ws", 1) + "/v1/listen?" + QUERY

    async def all_streams():
        return await asyncio.gather(*(voiced_stream(url, key, a, t0) for a in audios))

    return asyncio.run(all_streams())


# --- the run -------------------------------------------------------------------------------------

def summarise(result, ends_per_stream, t0, audio_s):
    """One system's run → dict of measures."""
    lat, trend, late = [], [], 0.0
    for stream, ends in zip(result, ends_per_stream):
        finals = [(f["arrival"], f["start"], f["duration"]) for f in stream["finals"]]
        pairs = latencies(finals, ends, t0, stream["sent"])
        lat.extend(p[1] for p in pairs)
        trend.extend(pairs)
        last_arrival = max((f["arrival"] for f in stream["finals"]), default=t0)
        late = max(late, last_arrival - (t0 + audio_s))
    return {"lat": lat, "slope": slope(trend), "trend": trend, "late": late,
            "matched": len(lat), "expected": sum(len(e) for e in ends_per_stream)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--points", default="whisper-tiny.en:1,2,4,6;whisper-base:1,2,3,4")
    parser.add_argument("--port", type=int, default=18095)
    parser.add_argument("--reference-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference_worker:
        reference_worker(args.reference_worker)
        return

    import numpy as np
    from harness import BIN, Voiced, http

    print(f"binary: {BIN}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="live-bench."))
    units = build_units(workdir)
    for audio, text, ends in units:
        print(f"  unit {len(audio) / RATE:5.2f} s, speech ends {[round(e, 2) for e in ends]}: "
              f"{text}", flush=True)
    plan = []
    for part in args.points.split(";"):
        model, counts = part.split(":")
        plan.append((model, [int(c) for c in counts.split(",")]))

    rows = []
    for model, counts in plan:
        streams_max = max(counts)
        audios = [stream_audio(units, r, args.seconds) for r in range(streams_max)]
        paths = []
        for r, (audio, _, _) in enumerate(audios):
            paths.append(str(workdir / f"{model}-stream{r}.npy"))
            np.save(paths[-1], audio)
        audio_s = len(audios[0][0]) / RATE
        v = Voiced(port=args.port)
        reference = None
        try:
            v.setup()
            v.start(workers=0, whisper_model=model, asr_threads=2, asr_queue=8,
                    max_live_sessions=max(2, streams_max),
                    max_transcriptions_per_account=streams_max + 2)
            headers = {"authorization": f"Bearer {v.key}"}
            batch = []
            for audio, _, _ in audios:  # voiced's own batch transcript of each stream's audio
                wav = workdir / "batch.wav"
                with wave.open(str(wav), "wb") as w:
                    w.setnchannels(1), w.setsampwidth(2), w.setframerate(RATE)
                    w.writeframes(pcm16(audio))
                status, body, _ = http("POST", v.base + "/v1/transcriptions",
                                       {"audio": base64.b64encode(wav.read_bytes()).decode()},
                                       headers)
                assert status == 200, (status, body[:300])
                batch.append(json.loads(body)["text"])
            reference = Reference(model)
            # Warm both (their VAD sessions, every recogniser replica) with one and two streams
            # (one, when the points ask for one stream only).
            for n in sorted({1, min(2, len(audios))}):
                warm = [a[0][: 8 * RATE] for a in audios[:n]]
                run_voiced(v.base, v.key, warm, time.monotonic() + 0.2)
                for i, w in enumerate(warm):
                    np.save(workdir / f"warm{i}.npy", w)
                reference.run([str(workdir / f"warm{i}.npy") for i in range(n)],
                              time.monotonic() + 0.2)
            server_pid = v.proc.pid
            for n in counts:
                for round_ in range(args.rounds):
                    order = ["voiced", "reference"]
                    if round_ % 2:
                        order.reverse()
                    for system in order:
                        t0 = time.monotonic() + 0.5
                        load_before = load1()
                        if system == "voiced":
                            cpu0 = cpu_seconds(server_pid)
                            result = run_voiced(v.base, v.key, [a[0] for a in audios[:n]], t0)
                            cpu = cpu_seconds(server_pid) - cpu0
                        else:
                            cpu0 = cpu_seconds(reference.proc.pid)
                            result = reference.run(paths[:n], t0)
                            cpu = cpu_seconds(reference.proc.pid) - cpu0
                        s = summarise(result, [a[2] for a in audios[:n]], t0, audio_s)
                        texts = [" ".join(f["text"] for f in r["finals"]) for r in result]
                        s.update(model=model, streams=n, round=round_, system=system,
                                 cpu_per_stream_s=cpu / (n * audio_s),
                                 wer_known=[wer(audios[i][1], t) for i, t in enumerate(texts)],
                                 wer_batch=[wer(batch[i], t) for i, t in enumerate(texts)],
                                 batch_wer_known=[wer(audios[i][1], batch[i]) for i in range(n)],
                                 load=(load_before + load1()) / 2)
                        rows.append(s)
                        print(f"  {model} {n} streams round {round_} {system:9}: "
                              f"p50 {pct(s['lat'], 50):.2f} s p95 {pct(s['lat'], 95):.2f} s "
                              f"({s['matched']}/{s['expected']} ends), slope {s['slope']:+.4f}, "
                              f"last final {s['late']:+.2f} s after the audio, "
                              f"CPU/stream-s {s['cpu_per_stream_s']:.3f}, "
                              f"WER known {np.mean(s['wer_known']):.3f} "
                              f"batch {np.mean(s['wer_batch']):.3f}, load {s['load']:.1f}",
                              flush=True)
                        if round_ == 0 and n == counts[0]:
                            print(f"    {system} stream 0: {texts[0]}\n    batch: {batch[0]}",
                                  flush=True)
        finally:
            if reference:
                reference.close()
            v.close()
    report(rows, args)


def report(rows, args):
    import numpy as np

    def pick(model, n, system):
        return [r for r in rows if r["model"] == model and r["streams"] == n
                and r["system"] == system]

    print(f"\n{args.seconds:.0f} s of audio per stream per run, {args.rounds} interleaved rounds "
          "per point; latency = final − end of speech")
    print("| model | streams | voiced p50 s | voiced p95 s | reference p50 s | reference p95 s "
          "| **p50 voiced / reference** | lag slope voiced / reference (s/s) "
          "| last final after audio voiced / reference (s) | CPU s per stream-s voiced / reference "
          "| load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    seen = []
    for r in rows:
        key = (r["model"], r["streams"])
        if key in seen:
            continue
        seen.append(key)
        ours, theirs = pick(*key, "voiced"), pick(*key, "reference")
        lo = [x for r in ours for x in r["lat"]]
        lt = [x for r in theirs for x in r["lat"]]
        print(f"| {key[0]} | {key[1]} | {pct(lo, 50):.2f} | {pct(lo, 95):.2f} | {pct(lt, 50):.2f} "
              f"| {pct(lt, 95):.2f} | **{pct(lo, 50) / pct(lt, 50):.2f}** "
              f"| {slope([p for r in ours for p in r['trend']]):+.4f} / "
              f"{slope([p for r in theirs for p in r['trend']]):+.4f} "
              f"| {max(r['late'] for r in ours):.2f} / {max(r['late'] for r in theirs):.2f} "
              f"| {np.mean([r['cpu_per_stream_s'] for r in ours]):.3f} / "
              f"{np.mean([r['cpu_per_stream_s'] for r in theirs]):.3f} "
              f"| {min(r['load'] for r in ours + theirs):.1f}–"
              f"{max(r['load'] for r in ours + theirs):.1f} |")
    print("\nReal time: lag slope (the rounds pooled) < 0.01 s/s and every stream's last final "
          "within "
          "5 s of the end of its audio")
    print("| model | streams | voiced | reference |")
    print("|---|---|---|---|")
    for key in seen:
        cells = []
        for system in ("voiced", "reference"):
            runs = pick(*key, system)
            ok = slope([p for r in runs for p in r["trend"]]) < 0.01 and all(
                r["late"] < 5.0 for r in runs)
            cells.append("holds" if ok else "falls behind")
        print(f"| {key[0]} | {key[1]} | {cells[0]} | {cells[1]} |")
    print("\nWord error, mean over streams and rounds")
    print("| model | streams | voiced batch vs known | voiced streamed vs known "
          "| voiced streamed vs batch | reference vs known | reference vs voiced's batch |")
    print("|---|---|---|---|---|---|---|")
    for key in seen:
        ours, theirs = pick(*key, "voiced"), pick(*key, "reference")
        m = lambda runs, field: np.mean([x for r in runs for x in r[field]])  # noqa: E731
        print(f"| {key[0]} | {key[1]} | {m(ours, 'batch_wer_known'):.3f} "
              f"| {m(ours, 'wer_known'):.3f} | {m(ours, 'wer_batch'):.3f} "
              f"| {m(theirs, 'wer_known'):.3f} | {m(theirs, 'wer_batch'):.3f} |")


if __name__ == "__main__":
    main()
