# Transcription (`POST /v1/transcriptions`), captures (`GET /v1/captures`: a page or every page,
# one capture, its captions, delete), voices (`GET|POST /v1/voices`, presets) and pronunciation
# rules (`GET|POST /v1/pronunciations`, `DELETE /v1/pronunciations/{id}`).
from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Literal, cast
from urllib.parse import quote

from .._files import AudioInput, read_audio, to_base64
from .._transport import AsyncTransport, Request, SyncTransport
from ..types import (
    Capture,
    CaptureDetail,
    CaptureList,
    CreatePronunciationRequest,
    CreateVoiceRequest,
    Pronunciation,
    PronunciationList,
    TranscriptionRequest,
    TranscriptionResult,
    Voice,
    VoiceList,
    VoicePresetList,
)
from .speech import CaptionFormat, _captions_request

Timestamps = Literal["segment", "word"]


def _cap_path(capture_id: str, tail: str = "") -> str:
    return f"/v1/captures/{quote(capture_id, safe='')}{tail}"


def _transcription_request(
    audio: AudioInput, timestamps: Timestamps | None, idempotency_key: str | None
) -> Request:
    _, data = read_audio(audio)
    body: TranscriptionRequest = {"audio": to_base64(data)}
    if timestamps is not None:
        body["timestamps"] = timestamps
    return Request("POST", "/v1/transcriptions", json=body, idempotency_key=idempotency_key)


def _voice_request(
    name: str,
    engine: str,
    preset: str,
    language: str | None,
    description: str | None,
    idempotency_key: str | None,
) -> Request:
    body: CreateVoiceRequest = {"name": name, "engine": engine, "preset": preset}
    if language is not None:
        body["language"] = language
    if description is not None:
        body["description"] = description
    return Request("POST", "/v1/voices", json=body, idempotency_key=idempotency_key)


def _pronunciation_request(
    text: str,
    alias: str | None,
    phonemes: str | None,
    language: str | None,
    case_sensitive: bool | None,
    idempotency_key: str | None,
) -> Request:
    if (alias is None) == (phonemes is None):
        raise TypeError("give exactly one of alias and phonemes")
    body: CreatePronunciationRequest = {"text": text}
    if alias is not None:
        body["alias"] = alias
    if phonemes is not None:
        body["phonemes"] = phonemes
    if language is not None:
        body["language"] = language
    if case_sensitive is not None:
        body["case_sensitive"] = case_sensitive
    return Request("POST", "/v1/pronunciations", json=body, idempotency_key=idempotency_key)


class Transcriptions:
    """`POST /v1/transcriptions`: audio in, a stored capture and its text out."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def create(
        self,
        *,
        audio: AudioInput,
        timestamps: Timestamps | None = None,
        idempotency_key: str | None = None,
    ) -> TranscriptionResult:
        """Transcribes `audio` (bytes, a path or a binary file object: wav, mp3, flac, ogg,
        webm/opus; up to 25 MiB and 15 minutes). `timestamps="segment"` adds `segments`,
        `"word"` also `words`. The answer's `id` is the stored capture."""
        req = _transcription_request(audio, timestamps, idempotency_key)
        return cast(TranscriptionResult, self._t.json(req))


class Captures:
    """`/v1/captures`: stored transcriptions."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def list(self, *, limit: int | None = None, offset: int | None = None) -> CaptureList:
        """One page, newest first, with the `total`."""
        req = Request("GET", "/v1/captures", query={"limit": limit, "offset": offset})
        return cast(CaptureList, self._t.json(req))

    def iterate(self, *, page_size: int = 100) -> Iterator[Capture]:
        """Every capture, newest first, fetching the next page only when the loop asks for it.
        One made while iterating shifts the pages; one that would come twice is skipped."""
        seen: set[str] = set()
        offset = 0
        while True:
            page = self.list(limit=page_size, offset=offset)
            for item in page["data"]:
                if item["id"] not in seen:
                    seen.add(item["id"])
                    yield item
            offset += len(page["data"])
            if not page["data"] or offset >= page["total"]:
                return

    def retrieve(self, capture_id: str) -> CaptureDetail:
        """One capture, with `segments` and `words` when they were asked for."""
        return cast(CaptureDetail, self._t.json(Request("GET", _cap_path(capture_id))))

    def delete(self, capture_id: str) -> None:
        """Deletes the transcript and timings (and the stored answer of the request that made it)."""
        self._t.send(Request("DELETE", _cap_path(capture_id)))

    def captions(self, capture_id: str, *, format: CaptionFormat = "vtt") -> str:
        """WebVTT (default) or SubRip; a capture made without timestamps raises
        `TimestampsUnavailable`."""
        resp, _ = self._t.send(_captions_request(_cap_path(capture_id, "/captions"), format))
        return resp.text


class Voices:
    """`/v1/voices`: the account's voice profiles, and the presets to add as one."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def list(self) -> VoiceList:
        """The account's voice profiles, oldest first."""
        return cast(VoiceList, self._t.json(Request("GET", "/v1/voices")))

    def create(
        self,
        *,
        name: str,
        engine: str,
        preset: str,
        language: str | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> Voice:
        """Adds one of an installed engine's presets as a voice profile. A taken name raises
        `Conflict`. Voices are cloned in the console or by the operator, never through the API."""
        req = _voice_request(name, engine, preset, language, description, idempotency_key)
        return cast(Voice, self._t.json(req))

    def presets(self) -> VoicePresetList:
        """The presets of the engines installed on the server."""
        return cast(VoicePresetList, self._t.json(Request("GET", "/v1/voices/presets")))


class Pronunciations:
    """`/v1/pronunciations`: how every later generation of the account reads a word."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def list(self) -> PronunciationList:
        """The account's rules, newest first."""
        return cast(PronunciationList, self._t.json(Request("GET", "/v1/pronunciations")))

    def create(
        self,
        *,
        text: str,
        alias: str | None = None,
        phonemes: str | None = None,
        language: str | None = None,
        case_sensitive: bool | None = None,
        idempotency_key: str | None = None,
    ) -> Pronunciation:
        """Adds a rule: `text` read as `alias` (other words) or as `phonemes` (IPA), exactly one."""
        req = _pronunciation_request(text, alias, phonemes, language, case_sensitive, idempotency_key)
        return cast(Pronunciation, self._t.json(req))

    def delete(self, pronunciation_id: str) -> None:
        """Deletes a rule; an id the account does not have raises `NotFound`."""
        path = f"/v1/pronunciations/{quote(pronunciation_id, safe='')}"
        self._t.send(Request("DELETE", path))


class AsyncTranscriptions:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def create(
        self,
        *,
        audio: AudioInput,
        timestamps: Timestamps | None = None,
        idempotency_key: str | None = None,
    ) -> TranscriptionResult:
        req = _transcription_request(audio, timestamps, idempotency_key)
        return cast(TranscriptionResult, await self._t.json(req))


class AsyncCaptures:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def list(self, *, limit: int | None = None, offset: int | None = None) -> CaptureList:
        req = Request("GET", "/v1/captures", query={"limit": limit, "offset": offset})
        return cast(CaptureList, await self._t.json(req))

    async def iterate(self, *, page_size: int = 100) -> AsyncIterator[Capture]:
        seen: set[str] = set()
        offset = 0
        while True:
            page = await self.list(limit=page_size, offset=offset)
            for item in page["data"]:
                if item["id"] not in seen:
                    seen.add(item["id"])
                    yield item
            offset += len(page["data"])
            if not page["data"] or offset >= page["total"]:
                return

    async def retrieve(self, capture_id: str) -> CaptureDetail:
        return cast(CaptureDetail, await self._t.json(Request("GET", _cap_path(capture_id))))

    async def delete(self, capture_id: str) -> None:
        await self._t.send(Request("DELETE", _cap_path(capture_id)))

    async def captions(self, capture_id: str, *, format: CaptionFormat = "vtt") -> str:
        req = _captions_request(_cap_path(capture_id, "/captions"), format)
        resp, _ = await self._t.send(req)
        return resp.text


class AsyncVoices:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def list(self) -> VoiceList:
        return cast(VoiceList, await self._t.json(Request("GET", "/v1/voices")))

    async def create(
        self,
        *,
        name: str,
        engine: str,
        preset: str,
        language: str | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> Voice:
        req = _voice_request(name, engine, preset, language, description, idempotency_key)
        return cast(Voice, await self._t.json(req))

    async def presets(self) -> VoicePresetList:
        return cast(VoicePresetList, await self._t.json(Request("GET", "/v1/voices/presets")))


class AsyncPronunciations:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def list(self) -> PronunciationList:
        return cast(PronunciationList, await self._t.json(Request("GET", "/v1/pronunciations")))

    async def create(
        self,
        *,
        text: str,
        alias: str | None = None,
        phonemes: str | None = None,
        language: str | None = None,
        case_sensitive: bool | None = None,
        idempotency_key: str | None = None,
    ) -> Pronunciation:
        req = _pronunciation_request(text, alias, phonemes, language, case_sensitive, idempotency_key)
        return cast(Pronunciation, await self._t.json(req))

    async def delete(self, pronunciation_id: str) -> None:
        path = f"/v1/pronunciations/{quote(pronunciation_id, safe='')}"
        await self._t.send(Request("DELETE", path))
