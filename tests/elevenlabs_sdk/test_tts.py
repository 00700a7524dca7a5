"""ElevenLabs' official Python SDK (elevenlabs 2.78.0, pinned in scripts/elevenlabs-sdk-test.sh)
against a running voiced: `client.text_to_speech.convert(...)` and `.stream(...)` with
base_url pointed at the server must return audio (mp3 and raw PCM), which is sent back to
voiced's `POST /v1/transcriptions` and must contain the text's words; a refusal must surface
as the SDK's ApiError with ElevenLabs' `detail` and voiced's `code`.

Driven by tests/api/elevenlabs.rs, which starts the server, makes a key and a voice:
VOICED_BASE_URL (http://host:port), VOICED_KEY, VOICED_VOICE (a voice profile's name).
Exits non-zero with the reason when anything is not so.
"""

import base64
import io
import json
import os
import re
import sys
import urllib.request
import wave

from elevenlabs.client import ElevenLabs
from elevenlabs.core.api_error import ApiError

TEXT = "The weather is lovely today, so we are going for a walk in the park."
EXPECTED = ["weather", "lovely", "walk", "park"]


def heard(audio: bytes) -> str:
    request = urllib.request.Request(
        os.environ["VOICED_BASE_URL"].rstrip("/") + "/v1/transcriptions",
        data=json.dumps({"audio": base64.b64encode(audio).decode()}).encode(),
        headers={"content-type": "application/json", "x-api-key": os.environ["VOICED_KEY"]},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)["text"].lower()


def check(name: str, audio: bytes) -> None:
    text = heard(audio)
    words = re.findall(r"[a-z']+", text)
    missing = [w for w in EXPECTED if w not in words]
    if missing:
        sys.exit(f"{name}: {missing} not heard in {text!r}")
    print(f"{name}: {len(audio)} bytes, heard {text!r}")


def main() -> None:
    client = ElevenLabs(api_key=os.environ["VOICED_KEY"], base_url=os.environ["VOICED_BASE_URL"])
    voice = os.environ["VOICED_VOICE"]

    mp3 = b"".join(
        client.text_to_speech.convert(
            voice,
            text=TEXT,
            model_id="eleven_multilingual_v2",
            output_format="mp3_44100_128",
        )
    )
    if mp3[:2] != b"\xff\xfb" and mp3[:3] != b"ID3" and mp3[0] != 0xFF:
        sys.exit(f"convert: not mp3 ({mp3[:8]!r})")
    check("convert", mp3)

    pcm = b"".join(
        client.text_to_speech.stream(
            voice, text=TEXT, model_id="eleven_flash_v2_5", output_format="pcm_16000"
        )
    )
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(pcm)
    check("stream", buffer.getvalue())

    try:
        # The SDK's call is lazy: the request goes when the audio is read.
        b"".join(
            client.text_to_speech.convert(voice, text=TEXT, output_format="opus_48000_64")
        )
        sys.exit("a bad output_format was accepted")
    except ApiError as error:
        body = error.body if isinstance(error.body, dict) else {}
        if error.status_code != 400 or body.get("code") != "invalid_request":
            sys.exit(f"refusal: {error.status_code} {error.body!r}")
        if body.get("detail", {}).get("param") != "output_format":
            sys.exit(f"refusal names {body!r}")
        print(f"refused: {error.status_code} {body['detail']['status']}")


if __name__ == "__main__":
    main()
