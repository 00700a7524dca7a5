"""Cartesia's official Python SDK (cartesia[websockets] 4.2.0, pinned in
scripts/cartesia-sdk-test.sh) against a running voiced: `client.tts.websocket_connect()` with
the server as websocket_base_url, a context with word timestamps whose audio (raw 16-bit PCM at
22.05 kHz) is sent back to voiced's `POST /v1/transcriptions` and must contain the text's
words, with timestamps that are the text's words in order within the audio; a second context on
the same socket in float PCM with a flush that must answer `flush_done`; an unknown voice must
come back as the SDK's `error` event with voiced's `code`, and a bad key as a refused upgrade.

Driven by tests/api/cartesia.rs, which starts the server, makes a key and a voice:
VOICED_BASE_URL (http://host:port), VOICED_KEY, VOICED_VOICE (a voice profile's name).
Exits non-zero with the reason when anything is not so.
"""

import base64
import io
import json
import os
import re
import struct
import sys
import urllib.request
import wave

from cartesia import Cartesia
from websockets.exceptions import InvalidStatus

TEXT = ["The weather is lovely today, ", "so we are going for a walk in the park."]
EXPECTED = ["weather", "lovely", "walk", "park"]
BASE = os.environ["VOICED_BASE_URL"].rstrip("/")
VOICE = {"mode": "id", "id": os.environ["VOICED_VOICE"]}


def client(key: str) -> Cartesia:
    # The socket's URL is websocket_base_url (base_url alone would give wss://).
    return Cartesia(api_key=key, base_url=BASE, websocket_base_url=BASE.replace("http", "ws", 1))


def heard(samples: list, rate: int) -> str:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", max(-32768, min(32767, int(s * 32767)))) for s in samples))
    request = urllib.request.Request(
        BASE + "/v1/transcriptions",
        data=json.dumps({"audio": base64.b64encode(buffer.getvalue()).decode()}).encode(),
        headers={"content-type": "application/json", "x-api-key": os.environ["VOICED_KEY"]},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)["text"].lower()


def plain(words):
    return [w for w in (re.sub(r"[^a-z0-9]", "", w.lower()) for w in words) if w]


def main() -> None:
    with client(os.environ["VOICED_KEY"]).tts.websocket_connect() as connection:
        # A context with word timestamps, its text in two pieces.
        ctx = connection.context(
            model_id="sonic-3",
            voice=VOICE,
            output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": 22050},
            language="en",
            add_timestamps=True,
        )
        for piece in TEXT:
            ctx.push(piece)
        ctx.no_more_inputs()
        pcm, words, starts, ends = b"", [], [], []
        for event in ctx.receive():
            if event.type == "chunk":
                pcm += event.audio or b""
            elif event.type == "timestamps" and event.word_timestamps:
                words += event.word_timestamps.words
                starts += event.word_timestamps.start
                ends += event.word_timestamps.end
            elif event.type == "error":
                sys.exit(f"websocket: error {event!r}")
        samples = [s / 32768 for (s,) in struct.iter_unpack("<h", pcm)]
        text = heard(samples, 22050)
        missing = [w for w in EXPECTED if w not in re.findall(r"[a-z']+", text)]
        if missing:
            sys.exit(f"websocket: {missing} not heard in {text!r}")
        if plain(words) != plain(" ".join(TEXT).split()):
            sys.exit(f"websocket: timestamps' words {words!r}")
        seconds = len(samples) / 22050
        if starts != sorted(starts) or any(s > e or e > seconds + 0.05 for s, e in zip(starts, ends)):
            sys.exit(f"websocket: times {list(zip(words, starts, ends))!r} within {seconds} s")
        print(f"websocket: {len(pcm)} bytes, heard {text!r}, {len(words)} words timed")

        # A second context on the same socket: float PCM, a flush mid-way.
        ctx = connection.context(
            model_id="sonic-3",
            voice=VOICE,
            output_format={"container": "raw", "encoding": "pcm_f32le", "sample_rate": 16000},
        )
        ctx.push(TEXT[0], flush=True)
        ctx.push(TEXT[1])
        ctx.no_more_inputs()
        floats, flushed = b"", []
        for event in ctx.receive():
            if event.type == "chunk":
                floats += event.audio or b""
            elif event.type == "flush_done":
                flushed.append(event.flush_id)
            elif event.type == "error":
                sys.exit(f"flush: error {event!r}")
        if flushed != [1]:
            sys.exit(f"flush: flush_done {flushed!r}")
        samples = [s for (s,) in struct.iter_unpack("<f", floats)]
        text = heard(samples, 16000)
        if "weather" not in text or "park" not in text:
            sys.exit(f"flush: heard {text!r}")
        print(f"flush: flush_done {flushed}, float audio heard {text!r}")

    # An unknown voice: the SDK's error event with voiced's code, naming the field.
    with client(os.environ["VOICED_KEY"]).tts.websocket_connect() as connection:
        ctx = connection.context(
            model_id="sonic-3",
            voice={"mode": "id", "id": "nobody"},
            output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        )
        ctx.push("Hello there.")
        ctx.no_more_inputs()
        # The error event names the context, so the SDK hands it to this context's receive,
        # which ends with it (the server closes the socket after it).
        events = []
        for event in ctx.receive():
            events.append(event)
        error = events[-1] if events else None
        if error is None or error.type != "error" or error.status_code != 400:
            sys.exit(f"unknown voice: {events!r}")
        extra = error.model_extra or {}
        if error.error_code != "invalid_request" or extra.get("param") != "voice.id":
            sys.exit(f"unknown voice: {error!r}")
    try:
        with client("sk_not_a_key").tts.websocket_connect() as connection:
            sys.exit("a bad key was accepted")
    except InvalidStatus as refused:
        if refused.response.status_code != 401:
            sys.exit(f"bad key: {refused.response.status_code}")
    print(f"refused: unknown voice {error.error_code} ({error.message}); bad key 401")


if __name__ == "__main__":
    main()
