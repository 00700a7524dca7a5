"""Live transcription: stream a wav file's PCM to /v1/listen in 100 ms frames, as a microphone
would, and print interim and final transcripts as they come.

    python live_listen.py speech.wav   (16-bit mono PCM wav)
"""

import sys
import threading
import wave

from voiced import Voiced
from voiced.live import ListenSession, Metadata, SpeechStarted, Transcript, UtteranceEnd


def send(session: ListenSession, path: str) -> None:
    with wave.open(path) as w:
        frames = w.getframerate() // 10
        while chunk := w.readframes(frames):
            session.send_audio(chunk)
    session.close_stream()


def main(path: str) -> None:
    with wave.open(path) as w:
        rate = w.getframerate()
    client = Voiced()
    with client.live.listen(sample_rate=rate, interim_results=True, vad_events=True) as session:
        # Send from one thread, read in this one: the server paces a sender faster than real time.
        sender = threading.Thread(target=send, args=(session, path))
        sender.start()
        for event in session:
            match event:
                case Transcript(is_final=True, transcript=text, words=words):
                    print(f"final: {text} ({len(words)} words)")
                case Transcript(transcript=text):
                    print(f"interim: {text}")
                case SpeechStarted(timestamp=t):
                    print(f"speech started at {t:.2f} s")
                case UtteranceEnd(last_word_end=t):
                    print(f"utterance ended at {t:.2f} s")
                case Metadata(capture_id=capture_id):
                    print(f"stored as capture {capture_id}")
        sender.join()


if __name__ == "__main__":
    main(sys.argv[1])
