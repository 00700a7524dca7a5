"""Transcribe a file with word timings, then print its captions.

    python transcribe.py meeting.wav
"""

import sys

from voiced import Voiced

client = Voiced()
result = client.transcriptions.create(audio=sys.argv[1], timestamps="word")
print(result["text"])
for word in result.get("words") or []:
    print(f"{word['start']:6.2f} {word['end']:6.2f} {word['word']}")
print(client.captures.captions(result["id"], format="srt"))
