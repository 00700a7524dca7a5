# Live speech over ElevenLabs' multi-context socket,
# `GET /v1/text-to-speech/{voice}/multi-stream-input` (issue 39's door): text goes in as it is
# written, one "context" per turn (at most 5 open per socket); audio comes back per context as
# phrases complete, with character timings that are grouped here into words.
#
# Wire (ElevenLabs' own, as the frameworks send it): a context opens with
# `{"text": " ", "context_id"}`, takes `{"text": "… ", "context_id"}` pieces (each ending with
# a space), `{"context_id", "flush": true}` renders what is buffered, `{"context_id",
# "close_context": true}` ends it (and stops its audio: the barge-in), `{"close_socket": true}`
# ends the socket. The server answers `{"audio": base64, "alignment": {"chars",
# "charStartTimesMs", "charDurationsMs"}, "normalizedAlignment", "contextId"}` and
# `{"isFinal": true, "contextId"}`.
from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import quote

import websockets
from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.sync.client import ClientConnection

from .._transport import ClientConfig
from ._socket import open_async, open_sync, socket_url
from .listen import _closed_error


@dataclass(frozen=True)
class WordTiming:
    """A word of a chunk, from the characters' timings (seconds on the context's clock)."""

    word: str
    start: float
    end: float


@dataclass(frozen=True)
class Alignment:
    chars: list[str]
    char_start_times_ms: list[int]
    char_durations_ms: list[int]

    def words(self) -> list[WordTiming]:
        out: list[WordTiming] = []
        current: list[str] = []
        start = end = 0
        for ch, at, dur in zip(self.chars, self.char_start_times_ms, self.char_durations_ms):
            if ch.isspace():
                if current:
                    out.append(WordTiming("".join(current), start / 1000, end / 1000))
                    current = []
                continue
            if not current:
                start = at
            current.append(ch)
            end = at + dur
        if current:
            out.append(WordTiming("".join(current), start / 1000, end / 1000))
        return out


def _alignment(raw: Any) -> Alignment | None:
    if not isinstance(raw, dict) or not raw.get("chars"):
        return None
    return Alignment(
        list(raw.get("chars") or []),
        [int(x) for x in raw.get("charStartTimesMs") or []],
        [int(x) for x in raw.get("charDurationsMs") or []],
    )


@dataclass(frozen=True)
class AudioChunk:
    """Audio of one context, in the socket's `output_format`, with its timings when sent."""

    context_id: str
    audio: bytes
    alignment: Alignment | None
    normalized_alignment: Alignment | None
    words: list[WordTiming] = field(default_factory=list)


@dataclass(frozen=True)
class ContextFinal:
    """The context has delivered all its audio (after a flush and close, or its cancel)."""

    context_id: str


@dataclass(frozen=True)
class SpeakError:
    """An error message the server sent on the socket (for instance a phrase refused by the
    account's ceiling); `code` is voiced's stable code where the server gives it."""

    context_id: str | None
    code: str | None
    message: str
    raw: dict[str, Any]


SpeakEvent = AudioChunk | ContextFinal | SpeakError


def parse_speak_event(text: str | bytes) -> SpeakEvent:
    m: dict[str, Any] = json.loads(text)
    ctx = m.get("contextId", m.get("context_id"))
    if m.get("audio"):
        alignment = _alignment(m.get("alignment"))
        return AudioChunk(
            context_id=str(ctx),
            audio=base64.b64decode(m["audio"]),
            alignment=alignment,
            normalized_alignment=_alignment(m.get("normalizedAlignment")),
            words=alignment.words() if alignment else [],
        )
    if m.get("isFinal"):
        return ContextFinal(str(ctx))
    err = m.get("error")
    detail = err if isinstance(err, dict) else {}
    return SpeakError(
        context_id=None if ctx is None else str(ctx),
        code=detail.get("code") if detail else m.get("code"),
        message=str(detail.get("message") if detail else m.get("message", err or m)),
        raw=m,
    )


@dataclass(frozen=True)
class SpeakOptions:
    voice: str
    model: str | None = None
    output_format: str = "pcm_24000"
    sync_alignment: bool = True
    language_code: str | None = None
    inactivity_timeout: int | None = None
    extra_query: Mapping[str, str] | None = None

    def path(self) -> str:
        return f"/v1/text-to-speech/{quote(self.voice, safe='')}/multi-stream-input"

    def query(self) -> list[tuple[str, str]]:
        q = [("output_format", self.output_format)]
        if self.model is not None:
            q.append(("model_id", self.model))
        if self.sync_alignment:
            q.append(("sync_alignment", "true"))
        if self.language_code is not None:
            q.append(("language_code", self.language_code))
        if self.inactivity_timeout is not None:
            q.append(("inactivity_timeout", str(self.inactivity_timeout)))
        q.extend((self.extra_query or {}).items())
        return q


def _headers(config: ClientConfig) -> dict[str, str]:
    # ElevenLabs' header, which the door takes, and the Bearer form every /v1 route takes
    # (OAuth access tokens included).
    return {"xi-api-key": config.api_key, "Authorization": f"Bearer {config.api_key}"}


def _text(text: str) -> str:
    # ElevenLabs' rule: a piece ends with a space, so that words of two pieces never merge.
    return text if text.endswith(" ") else text + " "


class SpeakContext:
    """One turn of a `SpeakSocket`: text in pieces, `flush`, then `close` (or `cancel`)."""

    def __init__(self, socket: SpeakSocket, context_id: str) -> None:
        self._socket = socket
        self.id = context_id

    def send_text(self, text: str) -> None:
        self._socket._send({"text": _text(text), "context_id": self.id})

    def flush(self) -> None:
        """Renders what is buffered now, even without a sentence end."""
        self._socket._send({"context_id": self.id, "flush": True})

    def keep_alive(self) -> None:
        self._socket._send({"text": "", "context_id": self.id})

    def close(self) -> None:
        """Ends the context: its audio not yet sent is dropped (the barge-in), then `ContextFinal`."""
        self._socket._send({"context_id": self.id, "close_context": True})

    cancel = close


class SpeakSocket:
    """A multi-context speech socket; use it as a context manager and iterate it for events."""

    def __init__(self, config: ClientConfig, options: SpeakOptions) -> None:
        self._config = config
        self._url = socket_url(config, options.path(), options.query())
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
            try:
                self._ws.send(json.dumps({"close_socket": True}))
            except websockets.exceptions.ConnectionClosed:
                pass
            self._ws.close()

    def _send(self, message: dict[str, Any]) -> None:
        self.ws.send(json.dumps(message))

    def context(
        self, context_id: str | None = None, *, voice_settings: Mapping[str, Any] | None = None
    ) -> SpeakContext:
        """Opens a context (a turn) with the given or a random id."""
        ctx = SpeakContext(self, context_id or f"ctx_{uuid.uuid4().hex[:12]}")
        first: dict[str, Any] = {"text": " ", "context_id": ctx.id}
        if voice_settings is not None:
            first["voice_settings"] = dict(voice_settings)
        self._send(first)
        return ctx

    def recv(self, timeout: float | None = None) -> SpeakEvent:
        try:
            return parse_speak_event(self.ws.recv(timeout))
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
    def __init__(self, socket: AsyncSpeakSocket, context_id: str) -> None:
        self._socket = socket
        self.id = context_id

    async def send_text(self, text: str) -> None:
        await self._socket._send({"text": _text(text), "context_id": self.id})

    async def flush(self) -> None:
        await self._socket._send({"context_id": self.id, "flush": True})

    async def keep_alive(self) -> None:
        await self._socket._send({"text": "", "context_id": self.id})

    async def close(self) -> None:
        await self._socket._send({"context_id": self.id, "close_context": True})

    cancel = close


class AsyncSpeakSocket:
    """`SpeakSocket`, asynchronously: `async with client.live.speak(...) as socket`."""

    def __init__(self, config: ClientConfig, options: SpeakOptions) -> None:
        self._config = config
        self._url = socket_url(config, options.path(), options.query())
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
            try:
                await self._ws.send(json.dumps({"close_socket": True}))
            except websockets.exceptions.ConnectionClosed:
                pass
            await self._ws.close()

    async def _send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def context(
        self, context_id: str | None = None, *, voice_settings: Mapping[str, Any] | None = None
    ) -> AsyncSpeakContext:
        ctx = AsyncSpeakContext(self, context_id or f"ctx_{uuid.uuid4().hex[:12]}")
        first: dict[str, Any] = {"text": " ", "context_id": ctx.id}
        if voice_settings is not None:
            first["voice_settings"] = dict(voice_settings)
        await self._send(first)
        return ctx

    async def recv(self) -> SpeakEvent:
        try:
            return parse_speak_event(await self.ws.recv())
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
