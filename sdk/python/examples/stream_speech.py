"""Stream OpenAI-dialect speech as it is rendered, writing each chunk as it arrives."""

import os
import sys
import tempfile

from voiced import Voiced, VoicedError


def main() -> int:
    client = Voiced()
    voice = os.environ.get("VOICED_VOICE", "Narrator")
    text = "The first sentence plays while the second is still being rendered. This is the second."
    try:
        with tempfile.NamedTemporaryFile(suffix=".mp3") as out:
            with client.audio.speech.stream(model="kokoro", input=text, voice=voice) as stream:
                for n, chunk in enumerate(stream):
                    out.write(chunk)
            print(f"generation {stream.generation_id}: {n + 1} chunks, {out.tell()} bytes")
    except VoicedError as err:
        print(f"{err.code}: {err.detail} (request {err.request_id})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
