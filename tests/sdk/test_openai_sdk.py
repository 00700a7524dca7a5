"""The official OpenAI Python SDK against a running voiced: only base_url and api_key change.

Run by scripts/sdk-test.sh, which starts `voiced serve`, creates an account, key and voice, and
passes them in VOICED_BASE_URL, VOICED_KEY and VOICED_VOICE.
"""

import io
import json
import os
import subprocess
import urllib.request
import wave

import mutagen.mp3
import openai
import pytest
import soundfile
from openai import OpenAI

BASE = os.environ["VOICED_BASE_URL"]
KEY = os.environ["VOICED_KEY"]
VOICE = os.environ["VOICED_VOICE"]
client = OpenAI(base_url=f"{BASE}/v1", api_key=KEY, max_retries=0, timeout=600)


def wav_seconds(data: bytes) -> float:
    with wave.open(io.BytesIO(data)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return w.getnframes() / w.getframerate()


def decoded_seconds(data: bytes) -> float:
    """Decodes any format with ffmpeg (an independent decoder) to 16-bit 16 kHz mono PCM."""
    pcm = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", "16000", "pipe:1"],
        input=data, capture_output=True, check=True,
    ).stdout
    return len(pcm) / 2 / 16000


def generation(generation_id: str) -> dict:
    request = urllib.request.Request(f"{BASE}/v1/generations/{generation_id}", headers={"x-api-key": KEY})
    return json.load(urllib.request.urlopen(request))


PARAGRAPH = (
    "The morning was cold and windy. We stayed inside and read the paper. "
    "In the afternoon the sun came out. We walked to the market for bread. "
    "On the way home we met an old friend."
)


@pytest.mark.parametrize("response_format, slack", [("mp3", 0.15), ("opus", 0.05), ("wav", 0.05)])
def test_iter_bytes_gets_audio_before_the_generation_completes(response_format, slack):
    with client.audio.speech.with_streaming_response.create(
        model="kokoro", voice=VOICE, input=PARAGRAPH, response_format=response_format
    ) as response:
        generation_id = response.headers["x-service-generation-id"]
        chunks = response.iter_bytes()
        first = next(chunks)
        status_at_first_chunk = generation(generation_id)["status"]
        audio = first + b"".join(chunks)
    assert first
    assert status_at_first_chunk == "generating"
    done = generation(generation_id)
    assert done["status"] == "completed"
    # The whole stream decodes to the generation's full duration (mp3: plus LAME's delay).
    seconds = decoded_seconds(audio)
    expected = done["duration_ms"] / 1000
    assert expected - 0.05 <= seconds <= expected + slack, (seconds, expected)


def test_stream_to_file_of_several_sentences_decodes_to_the_full_duration(tmp_path):
    target = tmp_path / "speech.wav"
    with client.audio.speech.with_streaming_response.create(
        model="kokoro", voice=VOICE, input=PARAGRAPH, response_format="wav"
    ) as response:
        generation_id = response.headers["x-service-generation-id"]
        response.stream_to_file(target)
    data = target.read_bytes()
    # OpenAI's streaming wav header: the sizes are unknown when it is sent.
    assert data[4:8] == b"\xff\xff\xff\xff" and data[40:44] == b"\xff\xff\xff\xff"
    expected = generation(generation_id)["duration_ms"] / 1000
    assert abs(decoded_seconds(data) - expected) < 0.05


def stored_file(generation_id: str) -> bytes:
    """The generation's stored audio, from its signed link (`GET /v1/audio/{id}`)."""
    return urllib.request.urlopen(generation(generation_id)["audio_url"]).read()


@pytest.mark.parametrize("response_format", ["wav", "mp3", "opus"])
@pytest.mark.parametrize("text", ["One sentence only.", PARAGRAPH], ids=["one-piece", "several-pieces"])
def test_the_stored_file_is_finished_for_strict_readers(response_format, text):
    """Issue 26 item 4: whatever was streamed, the stored file declares its exact length: Python's
    `wave` and libsndfile (soundfile) trust the wav header; mutagen reads the mp3's LAME/Info tag
    (frames less encoder delay and padding); libsndfile reads the Ogg Opus end granule."""
    raw = client.audio.speech.with_raw_response.create(
        model="kokoro", voice=VOICE, input=text, response_format=response_format
    )
    raw.parse()
    generation_id = raw.headers["x-service-generation-id"]
    expected = generation(generation_id)["duration_ms"] / 1000
    data = stored_file(generation_id)
    # Within a millisecond (duration_ms is rounded down); mp3 and opus count whole samples.
    if response_format == "wav":
        with wave.open(io.BytesIO(data)) as w:
            assert abs(w.getnframes() / w.getframerate() - expected) < 0.001
    if response_format == "mp3":
        info = mutagen.mp3.MP3(io.BytesIO(data)).info
        assert abs(info.length - expected) < 0.001, (info.length, expected)
    sf = soundfile.info(io.BytesIO(data))
    assert abs(sf.frames / sf.samplerate - expected) < 0.001, (sf.frames, sf.samplerate, expected)


def test_an_idempotent_replay_serves_the_finished_file():
    headers = {"Idempotency-Key": "finished-file-replay"}
    first = client.audio.speech.with_raw_response.create(
        model="kokoro", voice=VOICE, input=PARAGRAPH, response_format="wav", extra_headers=headers
    )
    streamed = first.parse().content
    assert streamed[4:8] == b"\xff\xff\xff\xff", "streamed with the placeholder"
    replay = client.audio.speech.with_raw_response.create(
        model="kokoro", voice=VOICE, input=PARAGRAPH, response_format="wav", extra_headers=headers
    )
    assert replay.headers["idempotent-replayed"] == "true"
    replayed = replay.parse().content
    assert replayed == stored_file(first.headers["x-service-generation-id"])
    assert replayed[44:] == streamed[44:]
    with wave.open(io.BytesIO(replayed)) as w:
        assert w.getnframes() == (len(replayed) - 44) // 2


def test_create_wav_decodes_and_the_generation_is_readable():
    raw = client.audio.speech.with_raw_response.create(
        model="kokoro", voice=VOICE, input="Hello from the OpenAI SDK.", response_format="wav"
    )
    assert raw.headers["content-type"] == "audio/wav"
    assert raw.headers["x-service-engine"] == "kokoro"
    audio = raw.parse().content
    assert 0.8 < wav_seconds(audio) < 6
    found = generation(raw.headers["x-service-generation-id"])
    assert found["status"] == "completed"
    assert found["has_audio"] is True


def test_streaming_response_writes_a_file_that_decodes(tmp_path):
    target = tmp_path / "speech.wav"
    with client.audio.speech.with_streaming_response.create(
        model="kokoro", voice=VOICE, input="Streaming to a file.", response_format="wav"
    ) as response:
        response.stream_to_file(target)
    assert 0.6 < wav_seconds(target.read_bytes()) < 6


def test_tts_1_uses_the_voice_default_engine_and_mp3_by_default():
    raw = client.audio.speech.with_raw_response.create(model="tts-1", voice=VOICE, input="Default format.")
    assert raw.headers["content-type"] == "audio/mpeg"
    assert raw.headers["x-service-engine"] == "tts-1"
    assert 0.5 < decoded_seconds(raw.parse().content) < 6


def test_opus_decodes():
    audio = client.audio.speech.create(model="kokoro", voice=VOICE, input="Opus in Ogg.", response_format="opus")
    assert audio.content[:4] == b"OggS"
    assert 0.5 < decoded_seconds(audio.content) < 6


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"speed": 1.25}, "speed"),
        ({"instructions": "Speak cheerfully."}, "instructions"),
        ({"response_format": "flac"}, "response_format"),
        ({"stream_format": "sse"}, "stream_format"),
        ({"extra_body": {"foo": 1}}, "foo"),
    ],
)
def test_unsupported_parameters_raise_bad_request_naming_the_field(extra, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(model="kokoro", voice=VOICE, input="Refused.", **extra)
    assert caught.value.code == "invalid_request"
    assert caught.value.param == param


def test_builtin_openai_voices_are_refused():
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(model="tts-1", voice="alloy", input="Refused.")
    assert caught.value.param == "voice"
    assert "voice profile" in caught.value.message


def test_a_bad_key_raises_authentication_error():
    bad = OpenAI(base_url=f"{BASE}/v1", api_key="vk_not_a_real_key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        bad.audio.speech.create(model="kokoro", voice=VOICE, input="Refused.")
    assert caught.value.code == "invalid_api_key"
