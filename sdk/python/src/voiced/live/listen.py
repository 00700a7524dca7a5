# Live transcription over Deepgram's `GET /v1/listen` socket (docs/live-transcription.md):
# binary audio frames in; `Results` (interim and final), `SpeechStarted`, `UtteranceEnd` and
# `Metadata` out, parsed into typed events.
from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

import websockets
from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.sync.client import ClientConnection

from .._errors import LiveConnectionClosed
from .._transport import ClientConfig
from ._socket import open_async, open_sync, socket_url


@dataclass(frozen=True)
class Word:
    word: str
    """Lower case, without punctuation."""
    start: float
    """Seconds on the session's clock."""
    end: float
    confidence: float
    punctuated_word: str
    """As recognised, with case and punctuation."""


@dataclass(frozen=True)
class Transcript:
    """A `Results` message: an interim hypothesis (`is_final` false) of the open utterance, or a
    final (`is_final` true; `speech_final` when the utterance ended by endpointing or at the close,
    `from_finalize` when `finalize()` ended it)."""

    transcript: str
    confidence: float
    words: list[Word]
    is_final: bool
    speech_final: bool
    from_finalize: bool
    start: float
    duration: float
    request_id: str | None
    raw: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class SpeechStarted:
    """Voice activity began (with `vad_events=True`)."""

    channel: list[int]
    timestamp: float


@dataclass(frozen=True)
class UtteranceEnd:
    """`utterance_end_ms` of silence followed the last word (after its final)."""

    channel: list[int]
    last_word_end: float


@dataclass(frozen=True)
class Metadata:
    """The session's summary, last before the close; `capture_id` is the stored capture."""

    request_id: str
    duration: float
    capture_id: str | None
    raw: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class UnknownEvent:
    """A message type this SDK version does not know."""

    type: str
    raw: dict[str, Any]


ListenEvent = Transcript | SpeechStarted | UtteranceEnd | Metadata | UnknownEvent


def parse_event(text: str | bytes) -> ListenEvent:
    m: dict[str, Any] = json.loads(text)
    kind = m.get("type")
    if kind == "Results":
        alt = (m.get("channel") or {}).get("alternatives", [{}])[0]
        words = [
            Word(
                word=w.get("word", ""),
                start=float(w.get("start", 0.0)),
                end=float(w.get("end", 0.0)),
                confidence=float(w.get("confidence", 0.0)),
                punctuated_word=w.get("punctuated_word", w.get("word", "")),
            )
            for w in alt.get("words") or []
        ]
        return Transcript(
            transcript=alt.get("transcript", ""),
            confidence=float(alt.get("confidence", 0.0)),
            words=words,
            is_final=bool(m.get("is_final")),
            speech_final=bool(m.get("speech_final")),
            from_finalize=bool(m.get("from_finalize")),
            start=float(m.get("start", 0.0)),
            duration=float(m.get("duration", 0.0)),
            request_id=(m.get("metadata") or {}).get("request_id"),
            raw=m,
        )
    if kind == "SpeechStarted":
        return SpeechStarted(list(m.get("channel", [0])), float(m.get("timestamp", 0.0)))
    if kind == "UtteranceEnd":
        return UtteranceEnd(list(m.get("channel", [0])), float(m.get("last_word_end", 0.0)))
    if kind == "Metadata":
        return Metadata(
            request_id=str(m.get("request_id", "")),
            duration=float(m.get("duration", 0.0)),
            capture_id=m.get("capture_id"),
            raw=m,
        )
    return UnknownEvent(str(kind), m)


@dataclass(frozen=True)
class ListenOptions:
    encoding: Literal["linear16", "mulaw"] = "linear16"
    sample_rate: int = 16000
    language: str | None = None
    model: str | None = None
    interim_results: bool = False
    endpointing: int | Literal[False] | None = None
    utterance_end_ms: int | None = None
    vad_events: bool = False
    keywords: Sequence[str] = ()
    extra_query: Mapping[str, str] | None = None

    def query(self) -> list[tuple[str, str]]:
        q: list[tuple[str, str]] = [
            ("encoding", self.encoding),
            ("sample_rate", str(self.sample_rate)),
            ("channels", "1"),
        ]
        if self.language is not None:
            q.append(("language", self.language))
        if self.model is not None:
            q.append(("model", self.model))
        if self.interim_results:
            q.append(("interim_results", "true"))
        if self.endpointing is not None:
            q.append(("endpointing", "false" if self.endpointing is False else str(self.endpointing)))
        if self.utterance_end_ms is not None:
            q.append(("utterance_end_ms", str(self.utterance_end_ms)))
        if self.vad_events:
            q.append(("vad_events", "true"))
        q.extend(("keywords", k) for k in self.keywords)
        q.extend((self.extra_query or {}).items())
        return q


def _headers(config: ClientConfig) -> dict[str, str]:
    return {"Authorization": f"Bearer {config.api_key}"}


def _closed_error(e: websockets.exceptions.ConnectionClosed) -> LiveConnectionClosed:
    rcvd = e.rcvd
    code = rcvd.code if rcvd is not None else None
    reason = rcvd.reason if rcvd is not None else ""
    return LiveConnectionClosed(
        f"the live socket closed with {code}: {reason or 'no reason given'}",
        close_code=code,
        reason=reason,
    )


class ListenSession:
    """A live transcription session; use it as a context manager.

    Send audio with `send_audio` (16-bit little-endian PCM or μ-law, as `encoding` said), and
    iterate the session for events until the server closes it after `close_stream()`. For a
    long stream, send from one thread and iterate in another: the server paces a sender that
    is faster than real time.
    """

    def __init__(self, config: ClientConfig, options: ListenOptions) -> None:
        self._config = config
        self._url = socket_url(config, "/v1/listen", options.query())
        self._ws: ClientConnection | None = None

    @property
    def ws(self) -> ClientConnection:
        if self._ws is None:
            raise RuntimeError("the session is not open: use `with client.live.listen(...)`")
        return self._ws

    def __enter__(self) -> ListenSession:
        self._ws = open_sync(self._config, self._url, _headers(self._config))
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None:
            self._ws.close()

    def send_audio(self, audio: bytes) -> None:
        """One binary frame of audio (at most 256 KiB)."""
        self.ws.send(audio)

    def keep_alive(self) -> None:
        """Keeps a silent session open (the server closes after 10 s without audio or this)."""
        self.ws.send(json.dumps({"type": "KeepAlive"}))

    def finalize(self) -> None:
        """Ends the open utterance now: its final comes with `from_finalize`."""
        self.ws.send(json.dumps({"type": "Finalize"}))

    def close_stream(self) -> None:
        """No more audio: the server sends the remaining finals, `Metadata`, and closes."""
        self.ws.send(json.dumps({"type": "CloseStream"}))

    def recv(self, timeout: float | None = None) -> ListenEvent:
        """The next event (`timeout` in seconds, `TimeoutError` past it); `EOFError` once the
        server has closed normally, `LiveConnectionClosed` after an error close."""
        try:
            return parse_event(self.ws.recv(timeout))
        except websockets.exceptions.ConnectionClosedOK as e:
            raise EOFError("the live socket is closed") from e
        except websockets.exceptions.ConnectionClosedError as e:
            raise _closed_error(e) from e

    def __iter__(self) -> Iterator[ListenEvent]:
        while True:
            try:
                yield self.recv()
            except EOFError:
                return


class AsyncListenSession:
    """`ListenSession`, asynchronously: `async with client.live.listen(...) as session`."""

    def __init__(self, config: ClientConfig, options: ListenOptions) -> None:
        self._config = config
        self._url = socket_url(config, "/v1/listen", options.query())
        self._ws: AsyncConnection | None = None

    @property
    def ws(self) -> AsyncConnection:
        if self._ws is None:
            raise RuntimeError("the session is not open: use `async with client.live.listen(...)`")
        return self._ws

    async def __aenter__(self) -> AsyncListenSession:
        self._ws = await open_async(self._config, self._url, _headers(self._config))
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ws is not None:
            await self._ws.close()

    async def send_audio(self, audio: bytes) -> None:
        await self.ws.send(audio)

    async def keep_alive(self) -> None:
        await self.ws.send(json.dumps({"type": "KeepAlive"}))

    async def finalize(self) -> None:
        await self.ws.send(json.dumps({"type": "Finalize"}))

    async def close_stream(self) -> None:
        await self.ws.send(json.dumps({"type": "CloseStream"}))

    async def recv(self) -> ListenEvent:
        try:
            return parse_event(await self.ws.recv())
        except websockets.exceptions.ConnectionClosedOK as e:
            raise EOFError("the live socket is closed") from e
        except websockets.exceptions.ConnectionClosedError as e:
            raise _closed_error(e) from e

    async def __aiter__(self) -> AsyncIterator[ListenEvent]:
        while True:
            try:
                yield await self.recv()
            except EOFError:
                return
