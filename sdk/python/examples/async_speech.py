"""The async client: several generations at once on one client, then their audio."""

import asyncio
import os

from voiced import AsyncVoiced


async def main() -> None:
    voice = os.environ.get("VOICED_VOICE", "Narrator")
    async with AsyncVoiced() as client:
        lines = ["One.", "Two.", "Three."]
        results = await asyncio.gather(
            *(client.speech.create_and_wait(text=line, voice=voice, format="opus") for line in lines)
        )
        for line, result in zip(lines, results):
            print(line, result.generation["id"], len(result.audio), "bytes", result.content_type)


asyncio.run(main())
