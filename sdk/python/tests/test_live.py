import asyncio
import io

import numpy as np
import pytest
import soundfile
from conftest import WAV, async_client, client

from voiced import InsufficientScope, ProPlanRequired
from voiced.live import Metadata, SpeechStarted, Transcript


def pcm16k() -> bytes:
    """The espeak-ng clip as 16-bit PCM at 16 kHz (what a microphone pipeline sends), with a
    second of silence after it so that endpointing and UtteranceEnd have their pause."""
    data, rate = soundfile.read(WAV, dtype="float32")
    n = int(len(data) * 16000 / rate)
    resampled = np.interp(np.linspace(0, len(data) - 1, n), np.arange(len(data)), data)
    padded = np.concatenate([np.zeros(4000), resampled, np.zeros(16000)])
    return (np.clip(padded, -1, 1) * 32767).astype("<i2").tobytes()


def test_listen_streams_audio_and_gets_finals_with_words_and_the_stored_capture():
    audio = pcm16k()
    c = client()
    events = []
    with c.live.listen(
        sample_rate=16000, interim_results=True, vad_events=True, utterance_end_ms=1000, language="en"
    ) as session:
        for i in range(0, len(audio), 3200):  # 100 ms frames
            session.send_audio(audio[i : i + 3200])
        session.close_stream()
        events = list(session)
    finals = [e for e in events if isinstance(e, Transcript) and e.is_final]
    text = " ".join(f.transcript for f in finals).lower()
    assert "test" in text and "transcription" in text, text
    words = [w for f in finals for w in f.words]
    assert len(words) >= 5
    assert all(w.start <= w.end for w in words)
    assert any(w.punctuated_word.lower().startswith("hello") for w in words)
    assert any(isinstance(e, SpeechStarted) for e in events)
    assert isinstance(events[-1], Metadata)
    capture_id = events[-1].capture_id
    assert capture_id
    stored = c.captures.retrieve(capture_id)
    assert "test" in stored["transcript_raw"].lower()
    assert stored["timestamps"] == "word"


def test_finalize_ends_the_utterance_now():
    audio = pcm16k()
    with client().live.listen(sample_rate=16000, endpointing=False) as session:
        session.send_audio(audio[: len(audio) - 16000 * 2])
        session.finalize()
        event = session.recv(timeout=120)
        while not (isinstance(event, Transcript) and event.is_final):
            event = session.recv(timeout=120)
        assert event.from_finalize
        assert "test" in event.transcript.lower()
        session.close_stream()
        assert isinstance(list(session)[-1], Metadata)


def test_refusals_at_the_upgrade_are_the_rest_exceptions():
    with pytest.raises(InsufficientScope) as err:
        with client("read_only").live.listen():
            pass
    assert err.value.status == 403 and err.value.required_scope == "voice:generate"
    with pytest.raises(ProPlanRequired):
        with client("unpaid").live.listen():
            pass


def test_async_listen():
    audio = pcm16k()

    async def run():
        async with async_client() as c:
            async with c.live.listen(sample_rate=16000, utterance_end_ms=1000, interim_results=True) as session:
                for i in range(0, len(audio), 3200):
                    await session.send_audio(audio[i : i + 3200])
                await session.close_stream()
                return [e async for e in session]

    events = asyncio.run(run())
    finals = [e for e in events if isinstance(e, Transcript) and e.is_final]
    assert "test" in " ".join(f.transcript for f in finals).lower()
    assert isinstance(events[-1], Metadata)
