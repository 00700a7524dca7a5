import io
import uuid

import httpx
import pytest
import soundfile
from conftest import VOICE, audio_kind, client, recording_client

from voiced import (
    APIConnectionError,
    GenerationFinished,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    SpeechAudio,
    TimestampsUnavailable,
)

PARAGRAPH = (
    "The morning was cold and windy. We stayed inside and read the paper. "
    "In the afternoon the sun came out. We walked to the market for bread. "
    "On the way home we met an old friend."
)


def seconds_of(data: bytes) -> float:
    info = soundfile.info(io.BytesIO(data))
    return info.frames / info.samplerate


def test_create_get_and_wait_follow_a_generation_to_completion():
    c, rec = recording_client()
    with c.capture() as captured:
        accepted = c.speech.create(text="Hi.", voice=VOICE, seed=7, format="opus")
    assert accepted["id"].startswith("gen_") and accepted["status"] == "generating"
    info = captured.response
    assert info.status == 202
    assert info.rate_limit is not None and info.rate_limit.policy == "writes"
    key = rec.log[0]["headers"]["idempotency-key"]
    assert len(key) == 36 and info.idempotency_key == key
    polled = c.generations.get(accepted["id"])
    assert (polled["seed"], polled["format"]) == (7, "opus")
    done = c.generations.wait(accepted["id"], poll_interval=0.1)
    assert done["status"] == "completed"
    assert "/v1/audio/gen_" in (done.get("audio_url") or "")
    audio = c.generations.download(done["id"])
    assert audio.content_type == "audio/ogg" and audio_kind(audio.data) == "ogg"
    # The downloaded file decodes (libsndfile) to the generation's duration.
    assert abs(seconds_of(audio.data) - (done.get("duration_ms") or 0) / 1000) < 0.05


def test_create_and_wait_answers_decodable_audio_of_the_generation():
    result = client().speech.create_and_wait(
        text="Hello from the Python SDK.", voice=VOICE, format="wav", poll_interval=0.1
    )
    assert result.generation["status"] == "completed"
    assert result.content_type == "audio/wav" and audio_kind(result.audio) == "wav"
    data, rate = soundfile.read(io.BytesIO(result.audio))
    assert rate == 24000 and data.ndim == 1
    assert abs(len(data) / rate - (result.generation.get("duration_ms") or 0) / 1000) < 0.01
    assert abs(data).max() > 0.05, "speech, not silence"


def test_transcribing_the_speech_gives_the_text_back():
    result = client().speech.create_and_wait(text="The quick brown fox jumps.", voice=VOICE, format="wav")
    heard = client().transcriptions.create(audio=result.audio)
    assert "fox" in heard["text"].lower(), heard["text"]


def test_audio_speech_create_answers_the_audio_and_its_generation():
    c = client()
    speech = c.audio.speech.create(model="kokoro", input="Hi there.", voice=VOICE, response_format="mp3")
    assert isinstance(speech, SpeechAudio)
    assert speech.content_type == "audio/mpeg" and audio_kind(speech.content) == "mp3"
    assert speech.engine == "kokoro"
    assert speech.generation_id and speech.generation_id.startswith("gen_")
    generation = c.generations.get(speech.generation_id)
    assert generation["status"] == "completed" and generation["format"] == "mp3"
    assert abs(seconds_of(speech.content) - (generation.get("duration_ms") or 0) / 1000) < 0.1


def test_audio_speech_stream_yields_bytes_before_the_generation_completes():
    c = client()
    with c.audio.speech.stream(model="kokoro", input=PARAGRAPH, voice=VOICE, response_format="opus") as stream:
        assert stream.generation_id
        chunks = iter(stream)
        first = next(chunks)
        status_at_first = c.generations.get(stream.generation_id)["status"]
        audio = first + b"".join(chunks)
    assert first and status_at_first == "generating"
    done = c.generations.get(stream.generation_id)
    assert done["status"] == "completed"
    assert abs(seconds_of(audio) - (done.get("duration_ms") or 0) / 1000) < 0.05


def test_audio_speech_errors_are_parsed_from_the_openai_envelope():
    with pytest.raises(InvalidRequest) as err:
        client().audio.speech.create(model="tts-1", input="Hi.", voice="alloy")
    assert err.value.status == 400
    assert err.value.type == "invalid_request_error"
    assert err.value.param == "voice"
    with pytest.raises(InvalidRequest) as seed:
        client().speech.create(text="Hi.", voice=VOICE, seed=-1)
    assert seed.value.param == "seed"


def test_a_lost_answer_is_retried_with_the_same_key_and_makes_one_generation():
    dropped: dict = {}
    real = httpx.HTTPTransport()

    def lose_first_answer(request: httpx.Request, attempt: int):
        if request.method == "POST" and not dropped:
            response = real.handle_request(request)
            response.read()
            dropped.update(response.json())
            raise httpx.RemoteProtocolError("connection reset after the server answered")
        return None

    c, rec = recording_client(fault=lose_first_answer)
    with c.capture() as captured:
        accepted = c.speech.create(text="Only once.", voice=VOICE)
    assert len(rec.log) == 2 and "error" in rec.log[0]
    assert rec.log[0]["headers"]["idempotency-key"] == rec.log[1]["headers"]["idempotency-key"]
    assert captured.response.retries == 1
    assert captured.response.idempotent_replayed
    assert accepted["id"] == dropped["id"]


def test_a_callers_idempotency_key_replays_and_another_body_is_refused():
    c = client()
    key = f"sdk-py-{uuid.uuid4()}"
    with c.capture() as captured:
        first = c.speech.create(text="Replay me.", voice=VOICE, seed=3, idempotency_key=key)
        again = c.speech.create(text="Replay me.", voice=VOICE, seed=3, idempotency_key=key)
    assert again["id"] == first["id"]
    assert [r.idempotent_replayed for r in captured.responses] == [False, True]
    with pytest.raises(IdempotencyKeyReused) as err:
        c.speech.create(text="Replay me.", voice=VOICE, seed=4, idempotency_key=key)
    assert err.value.status == 422
    assert c.speech.create(text="Replay me.", voice=VOICE, seed=3)["id"] != first["id"]


def test_generations_list_iterate_filter_and_cancel():
    c = client()
    done = c.speech.create_and_wait(text="Listed.", voice=VOICE, poll_interval=0.1)
    page = c.generations.list(limit=200, status="completed", voice=VOICE)
    assert any(g["id"] == done.generation["id"] for g in page["data"])
    assert all(g["status"] == "completed" for g in page["data"])
    ids = [g["id"] for g in c.generations.iterate(page_size=2, voice=VOICE)]
    assert done.generation["id"] in ids and len(ids) == len(set(ids))
    with pytest.raises(GenerationFinished) as finished:
        c.generations.cancel(done.generation["id"])
    assert finished.value.status == 409
    with pytest.raises(NotFound):
        c.generations.cancel("gen_missing")
    with pytest.raises(InvalidRequest) as bad:
        c.generations.list(status="done")  # type: ignore[arg-type]
    assert bad.value.param == "status"


def test_cancel_stops_a_generation_and_wait_raises_generation_failed():
    from voiced import GenerationFailed

    c = client()
    accepted = c.speech.create(text=PARAGRAPH * 8, voice=VOICE)
    cancelled = c.generations.cancel(accepted["id"])
    assert cancelled["status"] in ("failed", "generating")
    with pytest.raises(GenerationFailed) as err:
        c.generations.wait(accepted["id"], poll_interval=0.1)
    assert (err.value.detail or "").startswith("cancelled")
    assert err.value.generation is not None and err.value.generation["id"] == accepted["id"]


def test_word_timestamps_and_captions_of_a_generation():
    text = "Good morning, Ada."
    c = client()
    result = c.speech.create_and_wait(text=text, voice=VOICE, seed=7, format="wav", timestamps="word")
    words = result.generation.get("words") or []
    assert [w["text"] for w in words] == ["Good", "morning", "Ada"]
    for w in words:
        assert w["start"] < w["end"]
        assert text[w["source_start"] : w["source_end"]].strip(",.") == w["text"]
    assert c.generations.captions(result.generation["id"]).startswith("WEBVTT\n\n00:00:00.")
    assert "Good morning Ada" in c.generations.captions(result.generation["id"], format="srt")
    plain = c.speech.create_and_wait(text="No timings.", voice=VOICE)
    with pytest.raises(TimestampsUnavailable):
        c.generations.captions(plain.generation["id"])


def test_delete_audio_keeps_the_generation():
    c = client()
    result = c.speech.create_and_wait(text="Forget this.", voice=VOICE)
    c.generations.delete_audio(result.generation["id"])
    after = c.generations.get(result.generation["id"])
    assert after["status"] == "completed" and after["has_audio"] is False
    assert after.get("audio_url") is None
    c.generations.delete_audio(result.generation["id"])


def test_a_cut_stream_is_an_error_not_a_short_file():
    # A server that sends the headers and some of a chunked body, then hangs up.
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\nTransfer-Encoding: chunked\r\n"
            b"X-Service-Generation-Id: gen_cut\r\n\r\n4\r\nabcd\r\n"
        )
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    from voiced import Voiced

    c = Voiced(api_key="vk_x", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    with pytest.raises(APIConnectionError, match="gen_cut"):
        with c.audio.speech.stream(model="kokoro", input="Hi.", voice=VOICE) as stream:
            b"".join(stream)
    thread.join()
    listener.close()
