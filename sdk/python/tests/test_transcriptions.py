import pytest
from conftest import WAV, client, recording_client

from voiced import InvalidRequest, NotFound, TimestampsUnavailable


# The `captures` key's account is used by this test alone: it holds exactly the captures made here.
def test_transcription_from_a_path_bytes_and_a_file_object_then_every_page_of_captures():
    c = client("captures")
    from_path = c.transcriptions.create(audio=WAV)
    assert from_path["id"].startswith("cap_")
    assert from_path["language"] == "en"
    assert "test" in from_path["text"].lower()
    assert from_path["duration_ms"] > 1000
    with open(WAV, "rb") as f:
        data = f.read()
    from_bytes = c.transcriptions.create(audio=data)
    with open(WAV, "rb") as f:
        from_file = c.transcriptions.create(audio=f)
    assert from_bytes["text"] == from_path["text"] == from_file["text"]

    paging, rec = recording_client("captures")
    seen = list(paging.captures.iterate(page_size=2))
    assert sorted(x["id"] for x in seen) == sorted([from_path["id"], from_bytes["id"], from_file["id"]])
    assert all(x["source"] == "api" and x["transcript_raw"] == from_path["text"] for x in seen)
    # Three captures at two a page take two requests.
    assert [(e["path"], e["status"]) for e in rec.log] == [("/v1/captures", 200)] * 2


def test_bytes_that_are_not_audio_are_refused_naming_audio():
    with pytest.raises(InvalidRequest) as err:
        client().transcriptions.create(audio=b"certainly not a wav file")
    assert err.value.param == "audio"


def test_timestamps_the_capture_read_back_and_its_captions():
    c = client()
    timed = c.transcriptions.create(audio=WAV, timestamps="word")
    words = timed.get("words") or []
    assert len(timed.get("segments") or []) >= 1 and len(words) >= 3
    assert "".join(w["word"] for w in words).strip() == timed["text"]
    capture = c.captures.retrieve(timed["id"])
    assert capture["timestamps"] == "word" and capture["task"] == "transcribe"
    assert capture.get("words") == words
    assert c.captures.captions(timed["id"]).startswith("WEBVTT\n\n00:00:0")
    assert c.captures.captions(timed["id"], format="srt").startswith("1\n00:00:0")
    plain = c.transcriptions.create(audio=WAV)
    assert plain.get("segments") is None
    with pytest.raises(TimestampsUnavailable) as err:
        c.captures.captions(plain["id"])
    assert err.value.status == 409
    c.captures.delete(plain["id"])
    with pytest.raises(NotFound):
        c.captures.retrieve(plain["id"])


def test_openai_dialect_json_verbose_text_and_srt():
    c = client()
    plain = c.audio.transcriptions.create(file=WAV)
    assert "test" in plain["text"].lower()
    assert plain["usage"]["type"] == "duration" and plain["usage"]["seconds"] >= 1
    verbose = c.audio.transcriptions.create(
        file=WAV, response_format="verbose_json", timestamp_granularities=["word", "segment"]
    )
    assert verbose["task"] == "transcribe" and verbose["language"] == "en"
    assert len(verbose.get("words") or []) >= 3 and len(verbose.get("segments") or []) >= 1
    text = c.audio.transcriptions.create(file=WAV, response_format="text")
    assert text.strip() == plain["text"]
    srt = c.audio.transcriptions.create(file=WAV, response_format="srt", language="en")
    assert srt.startswith("1\n00:00:0")
    with pytest.raises(InvalidRequest) as err:
        c.audio.transcriptions.create(file=WAV, model="nova-2")
    assert err.value.param == "model" and err.value.type == "invalid_request_error"


def test_openai_dialect_stream_gives_deltas_then_the_whole_text():
    events = list(client().audio.transcriptions.stream(file=WAV))
    assert events[-1]["type"] == "transcript.text.done"
    deltas = [e["delta"] for e in events if e["type"] == "transcript.text.delta"]
    assert deltas and "".join(deltas).strip() == events[-1]["text"].strip()


def test_openai_dialect_translation_answers_english():
    out = client().audio.translations.create(file=WAV, response_format="verbose_json")
    assert isinstance(out, dict) and "test" in out["text"].lower()
