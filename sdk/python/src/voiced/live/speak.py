# Live speech over ElevenLabs' multi-context socket,
# `GET /v1/text-to-speech/{voice}/multi-stream-input` (docs/live-speech.md): text goes in as it
# is written, one "context" per turn (at most 5 open per socket); audio comes back per context
# as phrases complete, with when each character is said, grouped here into words.
#
# Wire, as the server reads it: a context opens with `{"text": " ", "context_id"}` (its first
# message), takes `{"text", "context_id"}` pieces joined as sent, renders what it holds on
# `{"context_id", "flush": true}`, and ends on `{"context_id", "close_context": true}`: at once
# (its rendering cut, queued phrases and unflushed text dropped) while it holds text not yet
# flushed, else after speaking what was flushed; then `{"isFinal": true, "contextId"}`.
# `{"close_socket": true}` speaks what every context holds, then the server closes (1000).
# Audio: `{"audio": base64, "alignment": {"chars", "charStartTimesMs", "charDurationsMs"},
# "normalizedAlignment", "contextId", "generationId"}`, times in ms from the start of that
# chunk's own audio. A refusal mid-socket is `{"error", "message", "code", "param",
# "contextId"}`, then a close with 1008.
from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote

import websockets
from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.sync.client import ClientConnection

from .._errors import error_from_socket_message
from .._transport import ClientConfig
from ._socket import open_async, open_sync, socket_url
from .listen import UnknownEvent, _closed_error

OutputFormat = Literal[
    "pcm_8000",
    "pcm_16000",
    "pcm_22050",
    "pcm_24000",
    "pcm_44100",
    "pcm_48000",
    "ulaw_8000",
    "mp3_22050_32",
    "mp3_44100_32",
    "mp3_44100_64",
    "mp3_44100_96",
    "mp3_44100_128",
    "mp3_44100_192",
]
"""The socket's audio: raw 16-bit little-endian mono PCM at a rate, 8 kHz μ-law, or mp3 frames
at a rate and kbit/s."""


def audio_seconds(output_format: str, audio: bytes) -> float:
    """How long `audio` of `output_format` plays. Exact for PCM and μ-law; for mp3 (constant
    bit rate) the bytes over the bit rate, which trails the rendered audio by the encoder's
    look-ahead (a frame or two) until a phrase's last chunk."""
    kind, _, rest = output_format.partition("_")
    if kind == "pcm":
        return len(audio) / 2 / int(rest)
    if kind == "ulaw":
        return len(audio) / int(rest)
    if kind == "mp3":
        kbps = int(rest.rpartition("_")[2])
        return len(audio) * 8 / (kbps * 1000)
    raise ValueError(f"unknown output_format {output_format!r}")


@dataclass(frozen=True)
class WordTiming:
    """A word as it was sent (punctuation included) and when it is said: seconds on its
    context's clock (0 at the context's first audio; see `AudioChunk.start`)."""

    word: str
    start: float
    end: float


@dataclass(frozen=True)
class Alignment:
    """Characters and when each is said, as the server sends them: milliseconds from the start
    of the chunk's own audio."""

    chars: list[str]
    char_start_times_ms: list[int]
    char_durations_ms: list[int]

    def words(self, offset: float = 0.0) -> list[WordTiming]:
        """The whitespace-separated words, each from the start of its first letter or digit to
        the end of its last (the server gives the spaces and punctuation between two words the
        gap between them), plus `offset` seconds."""
        out: list[WordTiming] = []
        word: list[str] = []
        spans: list[tuple[int, int]] = []  # (start, end) ms of the word's letters and digits
        every: list[tuple[int, int]] = []  # of all its characters (a word without letters)

        def emit() -> None:
            if word:
                timed = spans or every
                start, end = timed[0][0], max(e for _, e in timed)
                out.append(WordTiming("".join(word), offset + start / 1000, offset + end / 1000))
            word.clear()
            spans.clear()
            every.clear()

        for ch, at, dur in zip(self.chars, self.char_start_times_ms, self.char_durations_ms):
            if ch.isspace():
                emit()
                continue
            word.append(ch)
            every.append((at, at + dur))
            if ch.isalnum():
                spans.append((at, at + dur))
        emit()
        return out


def _alignment(raw: Any) -> Alignment | None:
    if not isinstance(raw, dict) or not raw.get("chars"):
        return None
    return Alignment(
        [str(c) for c in raw.get("chars") or []],
        [int(x) for x in raw.get("charStartTimesMs") or []],
        [int(x) for x in raw.get("charDurationsMs") or []],
    )


@dataclass(frozen=True)
class AudioChunk:
    """Audio of one context in the socket's `output_format`, and when its words are said.

    `start` and `duration` place the chunk on its context's clock: the seconds of that
    context's audio received before it (a context's audio is its phrases one after the other).
    `words` are on that clock too; `alignment` and `normalized_alignment` are as sent
    (milliseconds from the chunk's start; `None` for engines without durations)."""

    context_id: str
    audio: bytes
    generation_id: str | None
    """The phrase's generation (`client.generations.get(...)` reads it afterwards)."""
    start: float
    duration: float
    alignment: Alignment | None
    normalized_alignment: Alignment | None
    """The words as spoken after normalisation ("5" → "five"), a space after each."""
    words: list[WordTiming] = field(default_factory=list)

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True)
class ContextFinal:
    """The context has ended: nothing more comes for it (after `close()`, `cancel()` or the
    socket's `close_socket()`). Its id may be used again for a new context."""

    context_id: str


SpeakEvent = AudioChunk | ContextFinal | UnknownEvent


class _Reader:
    """Messages to events, keeping each context's clock (seconds of audio received so far)."""

    def __init__(self, output_format: str) -> None:
        self._format = output_format
        self._clocks: dict[str, float] = {}

    def event(self, text: str | bytes) -> SpeakEvent:
        m: dict[str, Any] = json.loads(text)
        ctx = str(m.get("contextId", m.get("context_id", "")))
        if m.get("isFinal") is True:
            self._clocks.pop(ctx, None)
            return ContextFinal(ctx)
        if "error" in m:
            # A refusal (the key's ceiling crossed by the next phrase, a bad message): the
            # server closes next; the exception is the code's, as on REST.
            raise error_from_socket_message(m)
        if isinstance(m.get("audio"), str):
            audio = base64.b64decode(m["audio"])
            start = self._clocks.get(ctx, 0.0)
            duration = audio_seconds(self._format, audio)
            self._clocks[ctx] = start + duration
            alignment = _alignment(m.get("alignment"))
            return AudioChunk(
                context_id=ctx,
                audio=audio,
                generation_id=m.get("generationId"),
                start=start,
                duration=duration,
                alignment=alignment,
                normalized_alignment=_alignment(m.get("normalizedAlignment")),
                words=alignment.words(start) if alignment else [],
            )
        return UnknownEvent("unknown", m)


@dataclass(frozen=True)
class SpeakOptions:
    voice: str
    model: str | None = None
    output_format: OutputFormat = "pcm_24000"
    sync_alignment: bool = True
    auto_mode: bool = False
    language_code: str | None = None
    inactivity_timeout: int | None = None
    extra_query: Mapping[str, str] | None = None

    def path(self) -> str:
        return f"/v1/text-to-speech/{quote(self.voice, safe='')}/multi-stream-input"

    def query(self) -> list[tuple[str, str]]:
        q: list[tuple[str, str]] = [("output_format", self.output_format)]
        if self.model is not None:
            q.append(("model_id", self.model))
        if self.sync_alignment:
            q.append(("sync_alignment", "true"))
        if self.auto_mode:
            q.append(("auto_mode", "true"))
        if self.language_code is not None:
            q.append(("language_code", self.language_code))
        if self.inactivity_timeout is not None:
            q.append(("inactivity_timeout", str(self.inactivity_timeout)))
        q.extend((self.extra_query or {}).items())
        return q


def _headers(config: ClientConfig) -> dict[str, str]:
    # voiced's own credential header (OAuth access tokens included); the door takes
    # ElevenLabs' `xi-api-key` too, for ElevenLabs' clients.
    return {"Authorization": f"Bearer {config.api_key}"}


def _opening(
    context_id: str,
    voice_settings: Mapping[str, Any] | None,
    chunk_length_schedule: Sequence[int] | None,
) -> dict[str, Any]:
    first: dict[str, Any] = {"text": " ", "context_id": context_id}
    if voice_settings is not None:
        first["voice_settings"] = dict(voice_settings)
    if chunk_length_schedule is not None:
        first["generation_config"] = {"chunk_length_schedule": list(chunk_length_schedule)}
    return first


# `cancel()` after a flush: the server cancels a context at `close_context` only while it holds
# text not yet flushed, so a cancel first sends this one character, never spoken (the
# context's buffer is dropped with it). A character with no space before it: it cannot
# complete a sentence the buffer holds.
_CANCEL_MARK = "-"


def _close(context_id: str) -> list[dict[str, Any]]:
    return [
        {"text": "", "context_id": context_id, "flush": True},
        {"context_id": context_id, "close_context": True},
    ]


def _cancel(context_id: str) -> list[dict[str, Any]]:
    return [
        {"text": _CANCEL_MARK, "context_id": context_id},
        {"context_id": context_id, "close_context": True},
    ]


class SpeakContext:
    """One turn of a `SpeakSocket`: `send_text` as the text is written, `flush` to render what
    is buffered now, then `close()` (speak everything sent) or `cancel()` (stop at once)."""

    def __init__(self, socket: SpeakSocket, context_id: str) -> None:
        self._socket = socket
        self.id = context_id
        self.closed = False
        """`close()` or `cancel()` was called: the context takes no more text."""

    def _check(self) -> None:
        if self.closed:
            raise RuntimeError(f"context {self.id} is closed; open another with socket.context()")

    def send_text(self, text: str) -> None:
        """Adds `text` to the context, joined to what came before as it is (send the spaces
        between words; a language model's tokens carry them). A phrase is rendered when a
        sentence ends (`.`, `!`, `?` followed by a space), the chunk schedule's length is
        reached, or on `flush()`."""
        self._check()
        self._socket._send({"text": text, "context_id": self.id})

    def flush(self) -> None:
        """Renders what is buffered now, even without a sentence end."""
        self._check()
        self._socket._send({"text": "", "context_id": self.id, "flush": True})

    def keep_alive(self) -> None:
        """Resets the socket's `inactivity_timeout` without saying anything."""
        self._check()
        self._socket._send({"text": "", "context_id": self.id})

    def close(self) -> None:
        """Ends the turn: what was sent is flushed and spoken to the end, then `ContextFinal`."""
        self._check()
        self.closed = True
        for message in _close(self.id):
            self._socket._send(message)

    def cancel(self) -> bool:
        """Stops the turn at once (a barge-in): the phrase being rendered is cut inside its
        sentence, queued phrases and unflushed text are dropped, audio not yet sent is dropped,
        then `ContextFinal`; the generation cut is charged for the audio that left. Returns
        `False` after `close()`: the server then finishes what was flushed, and the caller
        drops that audio itself."""
        if self.closed:
            return False
        self.closed = True
        for message in _cancel(self.id):
            self._socket._send(message)
        return True


class SpeakSocket:
    """A multi-context speech socket; use it as a context manager and iterate it for events.

    Send from one thread and iterate in another when text and audio overlap (an agent that
    speaks while its model writes); leaving the `with` block closes the connection, which
    cancels what is still being spoken. `close_socket()` first lets everything finish."""

    def __init__(self, config: ClientConfig, options: SpeakOptions) -> None:
        self._config = config
        self._url = socket_url(config, options.path(), options.query())
        self._reader = _Reader(options.output_format)
        self._ws: ClientConnection | None = None

    @property
    def ws(self) -> ClientConnection:
        if self._ws is None:
            raise RuntimeError("the socket is not open: use `with client.live.speak(...)`")
        return self._ws

    def __enter__(self) -> SpeakSocket:
        self._ws = open_sync(self._config, self._url, _headers(self._config))
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None:
            self._ws.close()

    def _send(self, message: dict[str, Any]) -> None:
        self.ws.send(json.dumps(message))

    def context(
        self,
        context_id: str | None = None,
        *,
        voice_settings: Mapping[str, Any] | None = None,
        chunk_length_schedule: Sequence[int] | None = None,
    ) -> SpeakContext:
        """Opens a context (a turn) with the given or a random id. `chunk_length_schedule`:
        characters after which the n-th phrase is cut at its last space without a sentence end
        (ElevenLabs' default `[120, 160, 250, 290]`; each 50–500)."""
        ctx = SpeakContext(self, context_id or f"ctx_{uuid.uuid4().hex[:12]}")
        self._send(_opening(ctx.id, voice_settings, chunk_length_schedule))
        return ctx

    def close_socket(self) -> None:
        """No more text: every open context speaks what it holds, `ContextFinal` comes for
        each, then the server closes and iteration ends."""
        self._send({"close_socket": True})

    def recv(self, timeout: float | None = None) -> SpeakEvent:
        """The next event. Raises the code's `VoicedError` subclass when the server refuses
        (`KeyCeilingExceeded`, `QuotaExhausted`, `InvalidRequest`, …; the socket then closes),
        `LiveConnectionClosed` on another abnormal close, `EOFError` at the normal close."""
        try:
            return self._reader.event(self.ws.recv(timeout))
        except websockets.exceptions.ConnectionClosedOK as e:
            raise EOFError("the speech socket is closed") from e
        except websockets.exceptions.ConnectionClosedError as e:
            raise _closed_error(e) from e

    def __iter__(self) -> Iterator[SpeakEvent]:
        while True:
            try:
                yield self.recv()
            except EOFError:
                return


class AsyncSpeakContext:
    """`SpeakContext` of an `AsyncSpeakSocket`."""

    def __init__(self, socket: AsyncSpeakSocket, context_id: str) -> None:
        self._socket = socket
        self.id = context_id
        self.closed = False

    def _check(self) -> None:
        if self.closed:
            raise RuntimeError(f"context {self.id} is closed; open another with socket.context()")

    async def send_text(self, text: str) -> None:
        self._check()
        await self._socket._send({"text": text, "context_id": self.id})

    async def flush(self) -> None:
        self._check()
        await self._socket._send({"text": "", "context_id": self.id, "flush": True})

    async def keep_alive(self) -> None:
        self._check()
        await self._socket._send({"text": "", "context_id": self.id})

    async def close(self) -> None:
        self._check()
        self.closed = True
        for message in _close(self.id):
            await self._socket._send(message)

    async def cancel(self) -> bool:
        if self.closed:
            return False
        self.closed = True
        for message in _cancel(self.id):
            await self._socket._send(message)
        return True


class AsyncSpeakSocket:
    """`SpeakSocket`, asynchronously: `async with client.live.speak(...) as socket`."""

    def __init__(self, config: ClientConfig, options: SpeakOptions) -> None:
        self._config = config
        self._url = socket_url(config, options.path(), options.query())
        self._reader = _Reader(options.output_format)
        self._ws: AsyncConnection | None = None

    @property
    def ws(self) -> AsyncConnection:
        if self._ws is None:
            raise RuntimeError("the socket is not open: use `async with client.live.speak(...)`")
        return self._ws

    async def __aenter__(self) -> AsyncSpeakSocket:
        self._ws = await open_async(self._config, self._url, _headers(self._config))
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None:
            await self._ws.close()

    async def _send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def context(
        self,
        context_id: str | None = None,
        *,
        voice_settings: Mapping[str, Any] | None = None,
        chunk_length_schedule: Sequence[int] | None = None,
    ) -> AsyncSpeakContext:
        ctx = AsyncSpeakContext(self, context_id or f"ctx_{uuid.uuid4().hex[:12]}")
        await self._send(_opening(ctx.id, voice_settings, chunk_length_schedule))
        return ctx

    async def close_socket(self) -> None:
        await self._send({"close_socket": True})

    async def recv(self) -> SpeakEvent:
        try:
            return self._reader.event(await self.ws.recv())
        except websockets.exceptions.ConnectionClosedOK as e:
            raise EOFError("the speech socket is closed") from e
        except websockets.exceptions.ConnectionClosedError as e:
            raise _closed_error(e) from e

    async def __aiter__(self) -> AsyncIterator[SpeakEvent]:
        while True:
            try:
                yield await self.recv()
            except EOFError:
                return
