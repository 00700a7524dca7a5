"""Live speech as a voice agent uses it: a turn's text goes in piece by piece as a language
model writes it, its audio comes back phrase by phrase with when each word is said; a second
turn is interrupted (a barge-in) and cut off without closing the socket. Each turn's audio is
written to a wav file.

    VOICED_VOICE=Narrator python live_speak.py
"""

import os
import sys
import wave

from voiced import Voiced, VoicedError
from voiced.live import AudioChunk, ContextFinal

RATE = 24000  # output_format="pcm_24000": 16-bit mono PCM at 24 kHz
TOKENS = ["Good ", "morning! ", "Your ", "train ", "leaves ", "at ", "nine ", "fifteen ",
          "from ", "platform ", "four."]  # fmt: skip
INTERRUPTED = ("Here is a long answer about the weather this week. Monday will be sunny and "
               "warm. Tuesday brings rain in the afternoon. Wednesday")  # fmt: skip


def main() -> int:
    client = Voiced()  # VOICED_API_KEY, VOICED_BASE_URL
    voice = os.environ.get("VOICED_VOICE", "Narrator")
    audio: dict[str, bytearray] = {}
    try:
        with client.live.speak(voice=voice, output_format="pcm_24000") as socket:
            turn = socket.context("turn")
            for token in TOKENS:
                turn.send_text(token)  # a phrase is rendered at each sentence end
            turn.close()  # flush the rest; everything sent is spoken, then ContextFinal
            other = socket.context("interrupted")
            other.send_text(INTERRUPTED)
            done: set[str] = set()
            for event in socket:
                if isinstance(event, AudioChunk):
                    audio.setdefault(event.context_id, bytearray()).extend(event.audio)
                    for w in event.words:  # seconds on the context's clock
                        print(f"{event.context_id}: {w.start:5.2f}-{w.end:5.2f} s {w.word}")
                    if event.context_id == "interrupted" and not other.closed:
                        other.cancel()  # the user spoke: stop this turn now
                elif isinstance(event, ContextFinal):
                    seconds = len(audio.get(event.context_id, b"")) / 2 / RATE
                    print(f"{event.context_id}: final after {seconds:.2f} s of audio")
                    done.add(event.context_id)
                    if done == {"turn", "interrupted"}:
                        socket.close_socket()  # the server closes; the loop ends
    except VoicedError as err:
        print(f"{err.code}: {err.detail}", file=sys.stderr)
        return 1
    for context_id, pcm in audio.items():
        with wave.open(f"{context_id}.wav", "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE)
            out.writeframes(bytes(pcm))
        print(f"wrote {context_id}.wav")
    return 0


if __name__ == "__main__":
    sys.exit(main())
