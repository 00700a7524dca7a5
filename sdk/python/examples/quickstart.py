"""Speak a sentence, wait for it, save the audio. Reads VOICED_API_KEY and VOICED_BASE_URL.

    python quickstart.py
"""

import os

from voiced import Voiced

client = Voiced()
voice = os.environ.get("VOICED_VOICE", "Narrator")
result = client.speech.create_and_wait(text="Hello from voiced.", voice=voice, format="wav")
with open("hello.wav", "wb") as f:
    f.write(result.audio)
print(result.generation["id"], result.generation.get("duration_ms"), "ms", len(result.audio), "bytes")
os.remove("hello.wav")
