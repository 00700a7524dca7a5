# OpenAI's dialect: `POST /v1/audio/speech` (synchronous speech, whole or streamed as it is
# rendered), `POST /v1/audio/transcriptions` and `POST /v1/audio/translations` (multipart form).
from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any, Literal, TypedDict, cast, overload

import httpx

from .._errors import APIConnectionError, VoicedError, error_from_response
from .._files import AudioInput, content_type_of, read_audio
from .._rate_limit import RateLimitInfo
from .._transport import AsyncTransport, Request, ResponseInfo, SyncTransport, aiter_sse, iter_sse
from ..types import OpenAiSpeechRequest, OpenAiTranscription, OpenAiVerboseTranscription, VoiceRef
from .speech import AudioFormat

TextFormat = Literal["text", "srt", "vtt"]
Granularity = Literal["segment", "word"]


class TranscriptionStreamEvent(TypedDict, total=False):
    """An event of a streamed transcription: `transcript.text.delta` (`delta`, one a segment),
    then `transcript.text.done` (`text`), or `error` (`error`)."""

    type: str
    delta: str
    text: str
    error: dict[str, Any]


class SpeechAudio:
    """The answer of `POST /v1/audio/speech`: the audio bytes and what the headers said."""

    def __init__(self, content: bytes, info: ResponseInfo) -> None:
        self.content = content
        """The whole audio."""
        self.status = info.status
        self.headers = info.headers
        self.content_type = info.headers.get("content-type", "application/octet-stream")
        """`audio/mpeg`, `audio/ogg` or `audio/wav`."""
        self.generation_id = info.headers.get("x-service-generation-id")
        """The generation behind the audio (`generations.get`)."""
        self.engine = info.headers.get("x-service-engine")
        self.request_id = info.request_id
        self.rate_limit: RateLimitInfo | None = info.rate_limit
        self.response = info

    def write_to(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self.content)


class _StreamBase:
    def __init__(self, resp: httpx.Response, info: ResponseInfo) -> None:
        self._resp = resp
        self.response = info
        self.status = info.status
        self.headers = info.headers
        self.content_type = info.headers.get("content-type", "application/octet-stream")
        self.generation_id = info.headers.get("x-service-generation-id")
        """Known before the first byte: look the generation up while it renders."""
        self.engine = info.headers.get("x-service-engine")
        self.request_id = info.request_id
        self.rate_limit = info.rate_limit

    def _cut(self, e: Exception) -> VoicedError:
        # The server cuts the chunked body when the generation fails after the first byte.
        return APIConnectionError(
            f"the audio stream of generation {self.generation_id} was cut ({e}); "
            "generations.get tells why"
        )


class SpeechStream(_StreamBase):
    """Audio of `POST /v1/audio/speech` as it is rendered: iterate it for `bytes` chunks.
    A generation that fails after the first byte ends the iteration with `APIConnectionError`
    (the transfer is cut, never a short file that looks whole)."""

    def __iter__(self) -> Iterator[bytes]:
        return self.iter_bytes()

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        try:
            yield from self._resp.iter_bytes(chunk_size)
        except httpx.TransportError as e:
            raise self._cut(e) from e

    def read(self) -> bytes:
        return b"".join(self.iter_bytes())

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> SpeechStream:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncSpeechStream(_StreamBase):
    """`SpeechStream`, asynchronously: `async for chunk in stream`."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.iter_bytes()

    async def iter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._resp.aiter_bytes(chunk_size):
                yield chunk
        except httpx.TransportError as e:
            raise self._cut(e) from e

    async def read(self) -> bytes:
        return b"".join([c async for c in self.iter_bytes()])

    async def close(self) -> None:
        await self._resp.aclose()

    async def __aenter__(self) -> AsyncSpeechStream:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _speech_body(
    model: str,
    input: str,
    voice: VoiceRef,
    response_format: AudioFormat | None,
    seed: int | None,
    temperature: float | None,
) -> OpenAiSpeechRequest:
    body: OpenAiSpeechRequest = {"model": model, "input": input, "voice": voice}
    if response_format is not None:
        body["response_format"] = response_format
    if seed is not None:
        body["seed"] = seed
    if temperature is not None:
        body["temperature"] = temperature
    return body


def _speech_request(body: OpenAiSpeechRequest, idempotency_key: str | None) -> Request:
    return Request(
        "POST",
        "/v1/audio/speech",
        json=body,
        accept="audio/*, application/json",
        idempotency_key=idempotency_key,
    )


def _form_request(
    path: str,
    file: AudioInput,
    model: str,
    fields: dict[str, str | Sequence[str] | None],
    idempotency_key: str | None,
    accept: str = "application/json",
) -> Request:
    name, data = read_audio(file)
    form = {k: v for k, v in fields.items() if v is not None}
    form["model"] = model
    return Request(
        "POST",
        path,
        data=form,
        files={"file": (name, data, content_type_of(name))},
        accept=accept,
        idempotency_key=idempotency_key,
    )


def _transcription_fields(
    language: str | None,
    prompt: str | None,
    temperature: float | None,
    response_format: str | None,
    granularities: Sequence[Granularity] | None,
) -> dict[str, str | Sequence[str] | None]:
    return {
        "language": language,
        "prompt": prompt,
        "temperature": None if temperature is None else repr(temperature),
        "response_format": response_format,
        "timestamp_granularities[]": list(granularities) if granularities else None,
    }


def _parse_transcription(resp: httpx.Response, response_format: str | None) -> Any:
    if response_format in ("text", "srt", "vtt"):
        return resp.text
    return resp.json()


def _stream_event(data: str) -> TranscriptionStreamEvent:
    event = cast(TranscriptionStreamEvent, json.loads(data))
    if event.get("type") == "error":
        err = event.get("error") or {}
        raise error_from_response(500, {}, json.dumps({"error": err}).encode())
    return event


class AudioSpeech:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def create(
        self,
        *,
        model: str,
        input: str,
        voice: VoiceRef,
        response_format: AudioFormat | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        idempotency_key: str | None = None,
    ) -> SpeechAudio:
        """Speaks `input` and answers once the whole audio has arrived. `model`: an engine id
        (`kokoro`), or `tts-1`/`tts-1-hd`/`gpt-4o-mini-tts` for the voice's default engine;
        `voice`: a voice profile name or id, or `{"id": …}`."""
        body = _speech_body(model, input, voice, response_format, seed, temperature)
        resp, info = self._t.send(_speech_request(body, idempotency_key))
        return SpeechAudio(resp.content, info)

    def stream(
        self,
        *,
        model: str,
        input: str,
        voice: VoiceRef,
        response_format: AudioFormat | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        idempotency_key: str | None = None,
    ) -> SpeechStream:
        """The same call, answered as the audio is rendered: use it as a context manager and
        iterate it (`for chunk in stream`). Retries happen before the first byte only."""
        body = _speech_body(model, input, voice, response_format, seed, temperature)
        resp, info = self._t.send(_speech_request(body, idempotency_key), stream=True)
        return SpeechStream(resp, info)


class Transcriptions:
    """`POST /v1/audio/transcriptions` (OpenAI's whisper-1 call)."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    @overload
    def create(
        self,
        *,
        file: AudioInput,
        model: str = ...,
        language: str | None = ...,
        prompt: str | None = ...,
        temperature: float | None = ...,
        response_format: Literal["json"] | None = ...,
        idempotency_key: str | None = ...,
    ) -> OpenAiTranscription: ...

    @overload
    def create(
        self,
        *,
        file: AudioInput,
        model: str = ...,
        language: str | None = ...,
        prompt: str | None = ...,
        temperature: float | None = ...,
        response_format: Literal["verbose_json"],
        timestamp_granularities: Sequence[Granularity] | None = ...,
        idempotency_key: str | None = ...,
    ) -> OpenAiVerboseTranscription: ...

    @overload
    def create(
        self,
        *,
        file: AudioInput,
        model: str = ...,
        language: str | None = ...,
        prompt: str | None = ...,
        temperature: float | None = ...,
        response_format: TextFormat,
        idempotency_key: str | None = ...,
    ) -> str: ...

    def create(
        self,
        *,
        file: AudioInput,
        model: str = "whisper-1",
        language: str | None = None,
        prompt: str | None = None,
        temperature: float | None = None,
        response_format: str | None = None,
        timestamp_granularities: Sequence[Granularity] | None = None,
        idempotency_key: str | None = None,
    ) -> OpenAiTranscription | OpenAiVerboseTranscription | str:
        """Transcribes `file` (bytes, a path or a binary file object). `response_format`:
        `json` (default), `verbose_json` (with `timestamp_granularities`), `text`, `srt`, `vtt`."""
        fields = _transcription_fields(
            language, prompt, temperature, response_format, timestamp_granularities
        )
        req = _form_request(
            "/v1/audio/transcriptions", file, model, fields, idempotency_key, "*/*"
        )
        resp, _ = self._t.send(req)
        return cast(
            "OpenAiTranscription | OpenAiVerboseTranscription | str",
            _parse_transcription(resp, response_format),
        )

    def stream(
        self,
        *,
        file: AudioInput,
        model: str = "whisper-1",
        language: str | None = None,
        prompt: str | None = None,
        temperature: float | None = None,
        idempotency_key: str | None = None,
    ) -> Iterator[TranscriptionStreamEvent]:
        """`stream=true`: a `transcript.text.delta` event per segment as it is decoded, then
        `transcript.text.done` with the whole text. A failure mid-stream raises."""
        fields = _transcription_fields(language, prompt, temperature, None, None)
        fields["stream"] = "true"
        req = _form_request(
            "/v1/audio/transcriptions", file, model, fields, idempotency_key, "text/event-stream"
        )
        resp, _ = self._t.send(req, stream=True)
        try:
            for data in iter_sse(resp.iter_lines()):
                yield _stream_event(data)
        finally:
            resp.close()


class Translations:
    """`POST /v1/audio/translations`: speech in any language, English text out."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def create(
        self,
        *,
        file: AudioInput,
        model: str = "whisper-1",
        prompt: str | None = None,
        temperature: float | None = None,
        response_format: Literal["json", "text", "srt", "vtt", "verbose_json"] | None = None,
        idempotency_key: str | None = None,
    ) -> OpenAiTranscription | OpenAiVerboseTranscription | str:
        fields = _transcription_fields(None, prompt, temperature, response_format, None)
        req = _form_request("/v1/audio/translations", file, model, fields, idempotency_key, "*/*")
        resp, _ = self._t.send(req)
        return cast(
            "OpenAiTranscription | OpenAiVerboseTranscription | str",
            _parse_transcription(resp, response_format),
        )


class Audio:
    """OpenAI's dialect: `audio.speech`, `audio.transcriptions`, `audio.translations`."""

    def __init__(self, transport: SyncTransport) -> None:
        self.speech = AudioSpeech(transport)
        self.transcriptions = Transcriptions(transport)
        self.translations = Translations(transport)


class AsyncAudioSpeech:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def create(
        self,
        *,
        model: str,
        input: str,
        voice: VoiceRef,
        response_format: AudioFormat | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        idempotency_key: str | None = None,
    ) -> SpeechAudio:
        body = _speech_body(model, input, voice, response_format, seed, temperature)
        resp, info = await self._t.send(_speech_request(body, idempotency_key))
        return SpeechAudio(resp.content, info)

    def stream(
        self,
        *,
        model: str,
        input: str,
        voice: VoiceRef,
        response_format: AudioFormat | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        idempotency_key: str | None = None,
    ) -> _AsyncSpeechStreamCall:
        """`async with client.audio.speech.stream(...) as stream: async for chunk in stream`."""
        body = _speech_body(model, input, voice, response_format, seed, temperature)
        return _AsyncSpeechStreamCall(self._t, _speech_request(body, idempotency_key))


class _AsyncSpeechStreamCall:
    """Sends the request when the `async with` block is entered; closes the stream on exit."""

    def __init__(self, transport: AsyncTransport, req: Request) -> None:
        self._t = transport
        self._req = req
        self._stream: AsyncSpeechStream | None = None

    async def __aenter__(self) -> AsyncSpeechStream:
        resp, info = await self._t.send(self._req, stream=True)
        self._stream = AsyncSpeechStream(resp, info)
        return self._stream

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stream is not None:
            await self._stream.close()


class AsyncTranscriptions:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    @overload
    async def create(
        self,
        *,
        file: AudioInput,
        model: str = ...,
        language: str | None = ...,
        prompt: str | None = ...,
        temperature: float | None = ...,
        response_format: Literal["json"] | None = ...,
        idempotency_key: str | None = ...,
    ) -> OpenAiTranscription: ...

    @overload
    async def create(
        self,
        *,
        file: AudioInput,
        model: str = ...,
        language: str | None = ...,
        prompt: str | None = ...,
        temperature: float | None = ...,
        response_format: Literal["verbose_json"],
        timestamp_granularities: Sequence[Granularity] | None = ...,
        idempotency_key: str | None = ...,
    ) -> OpenAiVerboseTranscription: ...

    @overload
    async def create(
        self,
        *,
        file: AudioInput,
        model: str = ...,
        language: str | None = ...,
        prompt: str | None = ...,
        temperature: float | None = ...,
        response_format: TextFormat,
        idempotency_key: str | None = ...,
    ) -> str: ...

    async def create(
        self,
        *,
        file: AudioInput,
        model: str = "whisper-1",
        language: str | None = None,
        prompt: str | None = None,
        temperature: float | None = None,
        response_format: str | None = None,
        timestamp_granularities: Sequence[Granularity] | None = None,
        idempotency_key: str | None = None,
    ) -> OpenAiTranscription | OpenAiVerboseTranscription | str:
        fields = _transcription_fields(
            language, prompt, temperature, response_format, timestamp_granularities
        )
        req = _form_request(
            "/v1/audio/transcriptions", file, model, fields, idempotency_key, "*/*"
        )
        resp, _ = await self._t.send(req)
        return cast(
            "OpenAiTranscription | OpenAiVerboseTranscription | str",
            _parse_transcription(resp, response_format),
        )

    async def stream(
        self,
        *,
        file: AudioInput,
        model: str = "whisper-1",
        language: str | None = None,
        prompt: str | None = None,
        temperature: float | None = None,
        idempotency_key: str | None = None,
    ) -> AsyncIterator[TranscriptionStreamEvent]:
        fields = _transcription_fields(language, prompt, temperature, None, None)
        fields["stream"] = "true"
        req = _form_request(
            "/v1/audio/transcriptions", file, model, fields, idempotency_key, "text/event-stream"
        )
        resp, _ = await self._t.send(req, stream=True)
        try:
            async for data in aiter_sse(resp.aiter_lines()):
                yield _stream_event(data)
        finally:
            await resp.aclose()


class AsyncTranslations:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def create(
        self,
        *,
        file: AudioInput,
        model: str = "whisper-1",
        prompt: str | None = None,
        temperature: float | None = None,
        response_format: Literal["json", "text", "srt", "vtt", "verbose_json"] | None = None,
        idempotency_key: str | None = None,
    ) -> OpenAiTranscription | OpenAiVerboseTranscription | str:
        fields = _transcription_fields(None, prompt, temperature, response_format, None)
        req = _form_request("/v1/audio/translations", file, model, fields, idempotency_key, "*/*")
        resp, _ = await self._t.send(req)
        return cast(
            "OpenAiTranscription | OpenAiVerboseTranscription | str",
            _parse_transcription(resp, response_format),
        )


class AsyncAudio:
    def __init__(self, transport: AsyncTransport) -> None:
        self.speech = AsyncAudioSpeech(transport)
        self.transcriptions = AsyncTranscriptions(transport)
        self.translations = AsyncTranslations(transport)
