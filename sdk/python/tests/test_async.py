import asyncio
import io

import pytest
import soundfile
from conftest import VOICE, WAV, async_client

from voiced import InsufficientScope


def test_async_client_speaks_streams_transcribes_and_pages():
    async def run():
        async with async_client() as c:
            voices = await c.voices.list()
            assert any(v["name"] == VOICE for v in voices["data"])
            result = await c.speech.create_and_wait(text="Hello from asyncio.", voice=VOICE, format="wav")
            info = soundfile.info(io.BytesIO(result.audio))
            assert abs(info.frames / info.samplerate - (result.generation.get("duration_ms") or 0) / 1000) < 0.01
            async with c.audio.speech.stream(model="kokoro", input="Streamed.", voice=VOICE, response_format="wav") as s:
                chunks = [chunk async for chunk in s]
            assert chunks and b"".join(chunks)[:4] == b"RIFF"
            heard = await c.transcriptions.create(audio=result.audio)
            assert "asyncio" in heard["text"].lower() or "hello" in heard["text"].lower()
            ids = [g["id"] async for g in c.generations.iterate(page_size=3)]
            assert result.generation["id"] in ids
            captures = [x["id"] async for x in c.captures.iterate(page_size=5)]
            assert heard["id"] in captures
            deltas = [e async for e in c.audio.transcriptions.stream(file=WAV)]
            assert deltas[-1]["type"] == "transcript.text.done"
            # Concurrent calls on one client.
            pages = await asyncio.gather(*(c.voices.list() for _ in range(5)))
            assert len({p["total"] for p in pages}) == 1

    asyncio.run(run())


def test_async_errors_are_the_same_exceptions():
    async def run():
        async with async_client("read_only") as c:
            with pytest.raises(InsufficientScope):
                await c.speech.create(text="Hi.", voice=VOICE)

    asyncio.run(run())
