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


# --- Transcription (issue 25): the clip is speech rendered by this server, then transcribed. ---

SPOKEN = "The quick brown fox jumps over the lazy dog. Then it runs into the forest."


@pytest.fixture(scope="module")
def spoken_wav(tmp_path_factory):
    path = tmp_path_factory.mktemp("asr") / "spoken.wav"
    audio = client.audio.speech.create(model="kokoro", voice=VOICE, input=SPOKEN, response_format="wav")
    path.write_bytes(audio.content)
    return path


@pytest.fixture(scope="module")
def german_wav(tmp_path_factory):
    path = tmp_path_factory.mktemp("asr") / "german.wav"
    subprocess.run(
        ["espeak-ng", "-v", "de", "-w", str(path),
         "Guten Morgen, heute ist das Wetter schön und wir gehen in den Park."],
        check=True,
    )
    return path


def words_of(text: str) -> list:
    return [w.strip(".,!?").lower() for w in text.split()]


def test_transcription_json_and_text(spoken_wav):
    with spoken_wav.open("rb") as f:
        result = client.audio.transcriptions.create(model="whisper-1", file=f)
    assert "quick brown fox" in result.text.lower()
    with spoken_wav.open("rb") as f:
        text = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="text")
    assert isinstance(text, str) and text.strip() == result.text


def test_transcription_srt_parses(spoken_wav):
    import srt

    with spoken_wav.open("rb") as f:
        body = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="srt")
    cues = list(srt.parse(body))
    assert cues and cues[0].start.total_seconds() < 1.0
    assert all(c.start <= c.end for c in cues)
    assert all(a.end <= b.start for a, b in zip(cues, cues[1:]))
    assert "fox" in " ".join(c.content for c in cues).lower()


def test_transcription_vtt_parses(spoken_wav):
    import webvtt

    with spoken_wav.open("rb") as f:
        body = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="vtt")
    captions = webvtt.from_buffer(io.StringIO(body))
    assert len(captions) >= 1
    assert all(c.start_in_seconds <= c.end_in_seconds for c in captions)
    assert "fox" in " ".join(c.text for c in captions).lower()


@pytest.mark.parametrize("granularities", [None, ["segment"], ["word"], ["word", "segment"]])
def test_transcription_verbose_json_granularities(spoken_wav, granularities):
    extra = {} if granularities is None else {"timestamp_granularities": granularities}
    with spoken_wav.open("rb") as f:
        result = client.audio.transcriptions.create(
            model="whisper-1", file=f, response_format="verbose_json", **extra
        )
    assert result.language == "en"
    assert 3 < result.duration < 10
    wants_segments = granularities is None or "segment" in granularities
    wants_words = granularities is not None and "word" in granularities
    assert bool(result.segments) == wants_segments
    assert bool(result.words) == wants_words
    if wants_segments:
        assert "".join(s.text for s in result.segments).strip() == result.text
        assert all(s.start <= s.end <= result.duration + 0.05 for s in result.segments)
    if wants_words:
        assert words_of(" ".join(w.word for w in result.words)) == words_of(result.text)
        starts = [w.start for w in result.words]
        assert starts == sorted(starts)
        assert all(w.start <= w.end for w in result.words)


def test_transcription_stream_iterates_delta_then_done_events(spoken_wav):
    with spoken_wav.open("rb") as f:
        stream = client.audio.transcriptions.create(model="whisper-1", file=f, stream=True)
        events = list(stream)
    assert events[-1].type == "transcript.text.done"
    deltas = [e for e in events[:-1] if e.type == "transcript.text.delta"]
    assert deltas and len(deltas) == len(events) - 1
    assert "".join(d.delta for d in deltas).strip() == events[-1].text
    assert "fox" in events[-1].text.lower()


def test_translation_into_english(german_wav):
    with german_wav.open("rb") as f:
        result = client.audio.translations.create(model="whisper-1", file=f)
    text = result.text.lower()
    assert any(w in text for w in ("morning", "weather", "park")), text
    with german_wav.open("rb") as f:
        srt_text = client.audio.translations.create(model="whisper-1", file=f, response_format="srt")
    import srt

    assert list(srt.parse(srt_text))


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"response_format": "diarized_json"}, "response_format"),
        ({"include": ["logprobs"]}, "include[]"),
        ({"chunking_strategy": "auto"}, "chunking_strategy"),
        ({"known_speaker_names": ["ann"]}, "known_speaker_names[]"),
        ({"timestamp_granularities": ["word"]}, "timestamp_granularities[]"),
        ({"model": "gpt-5"}, "model"),
        ({"language": "english"}, "language"),
        ({"temperature": 3}, "temperature"),
    ],
)
def test_transcription_refusals_name_the_field(spoken_wav, extra, param):
    args = {"model": "whisper-1", **extra}
    with spoken_wav.open("rb") as f, pytest.raises(openai.BadRequestError) as caught:
        client.audio.transcriptions.create(file=f, **args)
    assert caught.value.code == "invalid_request"
    assert caught.value.param == param


# --- Realtime transcription (issue 38): `client.realtime.connect` with intent=transcription. ---


def test_realtime_transcription_session_matches_the_batch_transcript(spoken_wav):
    import base64
    import difflib

    with spoken_wav.open("rb") as f:
        batch = client.audio.transcriptions.create(model="gpt-4o-transcribe", file=f).text
    with wave.open(str(spoken_wav)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        rate = w.getframerate()
        audio = w.readframes(w.getnframes()) + b"\0\0" * rate  # and a second of silence
    events = []
    with client.realtime.connect(
        model="gpt-4o-mini-transcribe", extra_query={"intent": "transcription"}
    ) as connection:
        connection.session.update(
            session={
                "type": "transcription",
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": rate},
                        "transcription": {"model": "gpt-4o-mini-transcribe", "language": "en"},
                        "turn_detection": {
                            "type": "server_vad",
                            "threshold": 0.5,
                            "prefix_padding_ms": 300,
                            "silence_duration_ms": 500,
                        },
                    }
                },
            }
        )
        step = rate // 10 * 2  # 100 ms of 16-bit samples
        for i in range(0, len(audio), step):
            connection.input_audio_buffer.append(audio=base64.b64encode(audio[i : i + step]).decode())
        # Two commits: the second has nothing open, and its error comes after every final.
        connection.input_audio_buffer.commit()
        connection.input_audio_buffer.commit()
        for event in connection:
            events.append(event)
            if event.type == "error":
                assert event.error.code == "input_audio_buffer_commit_empty", event
                break
    kinds = [e.type for e in events]
    assert kinds[0] == "session.created" and "session.updated" in kinds, kinds
    assert "input_audio_buffer.speech_started" in kinds, kinds
    completed = [e for e in events if e.type == "conversation.item.input_audio_transcription.completed"]
    assert completed, kinds
    committed = {e.item_id for e in events if e.type == "input_audio_buffer.committed"}
    for done in completed:
        assert done.item_id in committed
        sent = "".join(
            e.delta for e in events
            if e.type == "conversation.item.input_audio_transcription.delta" and e.item_id == done.item_id
        )
        # Deltas only append: they spell the start of the item's transcript.
        assert words_of(done.transcript)[: len(words_of(sent))] == words_of(sent), (sent, done.transcript)
    streamed = " ".join(e.transcript for e in completed)
    similarity = difflib.SequenceMatcher(None, words_of(batch), words_of(streamed)).ratio()
    assert similarity >= 0.8, (streamed, batch)
