"""Deepgram's official Python SDK (deepgram-sdk 7.16.0, pinned in scripts/deepgram-sdk-test.sh)
against a running voiced: the live client (`client.listen.v1.connect`) streams a real speech
clip and must receive final results with the clip's words, and the pre-recorded client
(`client.listen.v1.media.transcribe_file`) must parse voiced's answer as Deepgram's response.

Driven by tests/api/listen.rs, which starts the server, makes a key and writes the clip:
VOICED_BASE_URL (http://host:port), VOICED_KEY, VOICED_CLIP (a 16-bit mono wav),
VOICED_EXPECTED (words the transcript must contain, space-separated).
Exits non-zero with the reason when anything is not so.
"""

import os
import re
import sys
import threading
import time
import wave

from deepgram import DeepgramClient
from deepgram.environment import DeepgramClientEnvironment
from deepgram.listen.v1.types import ListenV1Results
from deepgram.types.listen_v1response import ListenV1Response


def words_of(text):
    return re.findall(r"[a-z']+", text.lower())


def client():
    base = os.environ["VOICED_BASE_URL"].rstrip("/")
    environment = DeepgramClientEnvironment(
        base=base,
        production=base.replace("http", "ws", 1),
        agent=base.replace("http", "ws", 1),
        agent_rest=base,
    )
    return DeepgramClient(api_key=os.environ["VOICED_KEY"], environment=environment)


def check_words(what, transcript):
    expected = os.environ["VOICED_EXPECTED"].lower().split()
    heard = set(words_of(transcript))
    missing = [w for w in expected if w not in heard]
    if missing:
        sys.exit(f"{what}: {missing} missing from {transcript!r}")


def live(dg, clip):
    with wave.open(clip, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, "a 16-bit mono wav"
        rate = w.getframerate()
        pcm = w.readframes(w.getnframes())
    # One second of silence after the speech ends its utterance.
    pcm += b"\0\0" * rate
    finals = []
    with dg.listen.v1.connect(
        model="nova-3",
        encoding="linear16",
        sample_rate=str(rate),
        channels="1",
        interim_results="true",
        punctuate="true",
        language="en-US",
    ) as socket:

        def send():
            frame = rate // 10 * 2  # 100 ms
            for at in range(0, len(pcm), frame):
                socket.send_media(pcm[at : at + frame])
                time.sleep(0.05)
            socket.send_close_stream()

        sender = threading.Thread(target=send)
        sender.start()
        for message in socket:
            if isinstance(message, ListenV1Results) and message.is_final:
                finals.append(message.channel.alternatives[0].transcript)
        sender.join()
    transcript = " ".join(t for t in finals if t)
    if not finals:
        sys.exit("live: no final result")
    check_words("live", transcript)
    print(f"live: {len(finals)} finals: {transcript}")


def prerecorded(dg, clip):
    with open(clip, "rb") as f:
        audio = f.read()
    response = dg.listen.v1.media.transcribe_file(
        request=audio, model="nova-3", smart_format=True, language="en"
    )
    if not isinstance(response, ListenV1Response):
        sys.exit(f"pre-recorded: not Deepgram's response: {response!r}")
    alternative = response.results.channels[0].alternatives[0]
    check_words("pre-recorded", alternative.transcript)
    words = alternative.words or []
    if not words or any(w.end < w.start for w in words):
        sys.exit(f"pre-recorded: words without timings: {words!r}")
    if not 0.0 < response.metadata.duration < 60.0:
        sys.exit(f"pre-recorded: duration {response.metadata.duration}")
    print(f"pre-recorded: {alternative.transcript}")


if __name__ == "__main__":
    dg = client()
    clip = os.environ["VOICED_CLIP"]
    live(dg, clip)
    prerecorded(dg, clip)
