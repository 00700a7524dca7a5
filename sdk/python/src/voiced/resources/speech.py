# Speech: the asynchronous `POST /v1/speech` (plus waiting for the generation and fetching its
# audio), and the generations: `GET /v1/generations` (the history, a page or every page),
# `GET /v1/generations/{id}`, its captions, its audio, cancel and delete.
from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Literal, cast
from urllib.parse import quote

from .._errors import APITimeoutError, GenerationFailed, parse_retry_after
from .._transport import AsyncTransport, Request, ResponseInfo, SyncTransport
from ..types import (
    Generation,
    GenerationList,
    GenerationStatusFilter,
    SpeechAccepted,
    SpeechRequest,
    SpeechTimestamps,
)

AudioFormat = Literal["mp3", "opus", "wav"]
"""Audio formats both speech endpoints produce: MP3, Ogg Opus, 16-bit PCM WAV."""
CaptionFormat = Literal["vtt", "srt"]


@dataclass(frozen=True)
class Audio:
    """Audio bytes and their type."""

    data: bytes
    content_type: str
    """`audio/mpeg`, `audio/ogg` or `audio/wav`."""


@dataclass(frozen=True)
class SpeechResult:
    generation: Generation
    """The completed generation."""
    audio: bytes
    """The audio, fetched from the generation's signed `audio_url`."""
    content_type: str


@dataclass(frozen=True)
class WaitOptions:
    poll_interval: float = 0.25
    """First pause between polls in seconds; it grows 1.5× per poll up to `max_poll_interval`."""
    max_poll_interval: float = 2.0
    wait_timeout: float = 900.0
    """How long to wait for the generation to finish, in seconds (default 15 minutes)."""


def _gen_path(generation_id: str, tail: str = "") -> str:
    return f"/v1/generations/{quote(generation_id, safe='')}{tail}"


def _speech_request(
    text: str,
    voice: str,
    seed: int | None,
    temperature: float | None,
    format: AudioFormat | None,
    timestamps: SpeechTimestamps | None,
) -> SpeechRequest:
    body: SpeechRequest = {"text": text, "voice_name": voice}
    if seed is not None:
        body["seed"] = seed
    if temperature is not None:
        body["temperature"] = temperature
    if format is not None:
        body["response_format"] = format
    if timestamps is not None:
        body["timestamps"] = timestamps
    return body


def _list_request(
    limit: int | None, offset: int | None, status: GenerationStatusFilter | None, voice: str | None
) -> Request:
    query = {"limit": limit, "offset": offset, "status": status, "voice": voice}
    return Request("GET", "/v1/generations", query=query)


def _captions_request(path: str, format: CaptionFormat) -> Request:
    accept = "application/x-subrip" if format == "srt" else "text/vtt"
    return Request("GET", path, query={"format": format}, accept=accept)


def _audio_request(generation: Generation) -> Request:
    url = generation.get("audio_url")
    if not url:
        raise GenerationFailed(
            f"generation {generation['id']} has no audio"
            + (" (deleted)" if not generation.get("has_audio") else ""),
            generation=generation,
        )
    return Request("GET", url=url, accept="audio/*, application/json")


class _Waiter:
    """The polling schedule of `wait`: pauses grow 1.5× up to a cap; a Retry-After overrides."""

    def __init__(self, generation_id: str, options: WaitOptions) -> None:
        self.id = generation_id
        self.interval = options.poll_interval
        self.max = options.max_poll_interval
        self.deadline = time.monotonic() + options.wait_timeout

    def next_pause(self, generation: Generation, info: ResponseInfo) -> float | None:
        """`None` when the generation completed; raises when it failed or time ran out."""
        status = generation["status"]
        if status == "completed":
            return None
        if status == "failed":
            reason = generation.get("error")
            raise GenerationFailed(
                f"generation {self.id} failed: {reason or 'no reason given'}",
                detail=reason,
                request_id=info.request_id,
                generation=generation,
            )
        retry_after = parse_retry_after(info.headers.get("retry-after"))
        pause = float(retry_after) if retry_after is not None else self.interval
        if time.monotonic() + pause > self.deadline:
            raise APITimeoutError(
                f"generation {self.id} still {status} when the wait ran out", generation=generation
            )
        self.interval = min(self.interval * 1.5, self.max)
        return pause


class Generations:
    """`/v1/generations`: the account's speech generations."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def get(self, generation_id: str) -> Generation:
        """`GET /v1/generations/{id}`: status, and a fresh signed `audio_url` once completed."""
        return cast(Generation, self._t.json(Request("GET", _gen_path(generation_id))))

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        status: GenerationStatusFilter | None = None,
        voice: str | None = None,
    ) -> GenerationList:
        """One page of the account's generations, newest first, with the `total`."""
        return cast(GenerationList, self._t.json(_list_request(limit, offset, status, voice)))

    def iterate(
        self,
        *,
        page_size: int = 100,
        status: GenerationStatusFilter | None = None,
        voice: str | None = None,
    ) -> Iterator[Generation]:
        """Every generation, newest first, fetching the next page only when the loop asks for it.
        One made while iterating shifts the pages; one that would come twice is skipped."""
        seen: set[str] = set()
        offset = 0
        while True:
            page = self.list(limit=page_size, offset=offset, status=status, voice=voice)
            for item in page["data"]:
                if item["id"] not in seen:
                    seen.add(item["id"])
                    yield item
            offset += len(page["data"])
            if not page["data"] or offset >= page["total"]:
                return

    def wait(
        self,
        generation_id: str,
        *,
        poll_interval: float = 0.25,
        max_poll_interval: float = 2.0,
        wait_timeout: float = 900.0,
    ) -> Generation:
        """Polls until the generation completes and answers it. A generation that ends `failed`
        raises `GenerationFailed`; a wait that runs out raises `APITimeoutError`."""
        waiter = _Waiter(generation_id, WaitOptions(poll_interval, max_poll_interval, wait_timeout))
        while True:
            resp, info = self._t.send(Request("GET", _gen_path(generation_id)))
            generation = cast(Generation, resp.json())
            pause = waiter.next_pause(generation, info)
            if pause is None:
                return generation
            self._t.sleep(pause)

    def download(self, generation: str | Generation) -> Audio:
        """The audio of a completed generation (by id, or the generation as read), fetched from a
        fresh signed link (sent without the credential)."""
        if isinstance(generation, str) or not generation.get("audio_url"):
            generation = self.get(generation if isinstance(generation, str) else generation["id"])
        resp, _ = self._t.send(_audio_request(generation))
        return Audio(resp.content, resp.headers.get("content-type", "application/octet-stream"))

    def captions(self, generation_id: str, *, format: CaptionFormat = "vtt") -> str:
        """WebVTT (default) or SubRip text from the words of a generation made with
        `timestamps="word"`; otherwise raises `TimestampsUnavailable`."""
        resp, _ = self._t.send(_captions_request(_gen_path(generation_id, "/captions"), format))
        return resp.text

    def delete_audio(self, generation_id: str) -> None:
        """`DELETE /v1/generations/{id}/audio`: the generation stays with `has_audio: false`."""
        self._t.send(Request("DELETE", _gen_path(generation_id, "/audio")))

    def cancel(self, generation_id: str) -> Generation:
        """`POST /v1/generations/{id}/cancel`: a queued generation never runs, a running one stops;
        it ends `failed` and nothing is charged. Raises `GenerationFinished` when it had already
        ended."""
        return cast(Generation, self._t.json(Request("POST", _gen_path(generation_id, "/cancel"))))


class Speech:
    """`POST /v1/speech`: asynchronous speech, and waiting for its audio."""

    def __init__(self, transport: SyncTransport, generations: Generations) -> None:
        self._t = transport
        self._generations = generations

    def create(
        self,
        *,
        text: str,
        voice: str,
        seed: int | None = None,
        temperature: float | None = None,
        format: AudioFormat | None = None,
        timestamps: SpeechTimestamps | None = None,
        idempotency_key: str | None = None,
    ) -> SpeechAccepted:
        """Admits a generation and answers at once (`status: "generating"`). `voice` is a voice
        profile's name; `timestamps="word"` makes the completed generation carry `words`."""
        body = _speech_request(text, voice, seed, temperature, format, timestamps)
        req = Request("POST", "/v1/speech", json=body, idempotency_key=idempotency_key)
        return cast(SpeechAccepted, self._t.json(req))

    def create_and_wait(
        self,
        *,
        text: str,
        voice: str,
        seed: int | None = None,
        temperature: float | None = None,
        format: AudioFormat | None = None,
        timestamps: SpeechTimestamps | None = None,
        idempotency_key: str | None = None,
        poll_interval: float = 0.25,
        max_poll_interval: float = 2.0,
        wait_timeout: float = 900.0,
    ) -> SpeechResult:
        """`create`, then polls until the generation completes and downloads its audio. The
        Idempotency-Key (given or made) covers the create, so retries never generate twice."""
        accepted = self.create(
            text=text,
            voice=voice,
            seed=seed,
            temperature=temperature,
            format=format,
            timestamps=timestamps,
            idempotency_key=idempotency_key,
        )
        generation = self._generations.wait(
            accepted["id"],
            poll_interval=poll_interval,
            max_poll_interval=max_poll_interval,
            wait_timeout=wait_timeout,
        )
        audio = self._generations.download(generation)
        return SpeechResult(generation, audio.data, audio.content_type)


class AsyncGenerations:
    """`/v1/generations`, asynchronously (see `Generations`)."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def get(self, generation_id: str) -> Generation:
        return cast(Generation, await self._t.json(Request("GET", _gen_path(generation_id))))

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        status: GenerationStatusFilter | None = None,
        voice: str | None = None,
    ) -> GenerationList:
        return cast(GenerationList, await self._t.json(_list_request(limit, offset, status, voice)))

    async def iterate(
        self,
        *,
        page_size: int = 100,
        status: GenerationStatusFilter | None = None,
        voice: str | None = None,
    ) -> AsyncIterator[Generation]:
        seen: set[str] = set()
        offset = 0
        while True:
            page = await self.list(limit=page_size, offset=offset, status=status, voice=voice)
            for item in page["data"]:
                if item["id"] not in seen:
                    seen.add(item["id"])
                    yield item
            offset += len(page["data"])
            if not page["data"] or offset >= page["total"]:
                return

    async def wait(
        self,
        generation_id: str,
        *,
        poll_interval: float = 0.25,
        max_poll_interval: float = 2.0,
        wait_timeout: float = 900.0,
    ) -> Generation:
        waiter = _Waiter(generation_id, WaitOptions(poll_interval, max_poll_interval, wait_timeout))
        while True:
            resp, info = await self._t.send(Request("GET", _gen_path(generation_id)))
            generation = cast(Generation, resp.json())
            pause = waiter.next_pause(generation, info)
            if pause is None:
                return generation
            await self._t.sleep(pause)

    async def download(self, generation: str | Generation) -> Audio:
        if isinstance(generation, str) or not generation.get("audio_url"):
            generation = await self.get(generation if isinstance(generation, str) else generation["id"])
        resp, _ = await self._t.send(_audio_request(generation))
        return Audio(resp.content, resp.headers.get("content-type", "application/octet-stream"))

    async def captions(self, generation_id: str, *, format: CaptionFormat = "vtt") -> str:
        req = _captions_request(_gen_path(generation_id, "/captions"), format)
        resp, _ = await self._t.send(req)
        return resp.text

    async def delete_audio(self, generation_id: str) -> None:
        await self._t.send(Request("DELETE", _gen_path(generation_id, "/audio")))

    async def cancel(self, generation_id: str) -> Generation:
        req = Request("POST", _gen_path(generation_id, "/cancel"))
        return cast(Generation, await self._t.json(req))


class AsyncSpeech:
    """`POST /v1/speech`, asynchronously (see `Speech`)."""

    def __init__(self, transport: AsyncTransport, generations: AsyncGenerations) -> None:
        self._t = transport
        self._generations = generations

    async def create(
        self,
        *,
        text: str,
        voice: str,
        seed: int | None = None,
        temperature: float | None = None,
        format: AudioFormat | None = None,
        timestamps: SpeechTimestamps | None = None,
        idempotency_key: str | None = None,
    ) -> SpeechAccepted:
        body = _speech_request(text, voice, seed, temperature, format, timestamps)
        req = Request("POST", "/v1/speech", json=body, idempotency_key=idempotency_key)
        return cast(SpeechAccepted, await self._t.json(req))

    async def create_and_wait(
        self,
        *,
        text: str,
        voice: str,
        seed: int | None = None,
        temperature: float | None = None,
        format: AudioFormat | None = None,
        timestamps: SpeechTimestamps | None = None,
        idempotency_key: str | None = None,
        poll_interval: float = 0.25,
        max_poll_interval: float = 2.0,
        wait_timeout: float = 900.0,
    ) -> SpeechResult:
        accepted = await self.create(
            text=text,
            voice=voice,
            seed=seed,
            temperature=temperature,
            format=format,
            timestamps=timestamps,
            idempotency_key=idempotency_key,
        )
        generation = await self._generations.wait(
            accepted["id"],
            poll_interval=poll_interval,
            max_poll_interval=max_poll_interval,
            wait_timeout=wait_timeout,
        )
        audio = await self._generations.download(generation)
        return SpeechResult(generation, audio.data, audio.content_type)
