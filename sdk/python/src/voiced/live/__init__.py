"""Live sockets: `client.live.listen(...)` (Deepgram's `/v1/listen`) and `client.live.speak(...)`
(ElevenLabs' multi-context speech socket)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from .._transport import AsyncTransport, SyncTransport
from .listen import (
    AsyncListenSession,
    ListenEvent,
    ListenOptions,
    ListenSession,
    Metadata,
    SpeechStarted,
    Transcript,
    UnknownEvent,
    UtteranceEnd,
    Word,
)
from .speak import (
    Alignment,
    AsyncSpeakContext,
    AsyncSpeakSocket,
    AudioChunk,
    ContextFinal,
    OutputFormat,
    SpeakContext,
    SpeakEvent,
    SpeakOptions,
    SpeakSocket,
    WordTiming,
)


def _listen_options(
    encoding: Literal["linear16", "mulaw"],
    sample_rate: int,
    language: str | None,
    model: str | None,
    interim_results: bool,
    endpointing: int | Literal[False] | None,
    utterance_end_ms: int | None,
    vad_events: bool,
    keywords: Sequence[str],
    extra_query: Mapping[str, str] | None,
) -> ListenOptions:
    return ListenOptions(
        encoding=encoding,
        sample_rate=sample_rate,
        language=language,
        model=model,
        interim_results=interim_results,
        endpointing=endpointing,
        utterance_end_ms=utterance_end_ms,
        vad_events=vad_events,
        keywords=tuple(keywords),
        extra_query=extra_query,
    )


class Live:
    """Live sockets of a `Voiced` client."""

    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def listen(
        self,
        *,
        encoding: Literal["linear16", "mulaw"] = "linear16",
        sample_rate: int = 16000,
        language: str | None = None,
        model: str | None = None,
        interim_results: bool = False,
        endpointing: int | Literal[False] | None = None,
        utterance_end_ms: int | None = None,
        vad_events: bool = False,
        keywords: Sequence[str] = (),
        extra_query: Mapping[str, str] | None = None,
    ) -> ListenSession:
        """A live transcription session (`with client.live.listen(...) as session`): mono audio
        in (`linear16` PCM at `sample_rate`, or `mulaw`), `Transcript`s out (interim with
        `interim_results`, finals with words), `SpeechStarted` with `vad_events`, `UtteranceEnd`
        with `utterance_end_ms`, and `Metadata` last. `endpointing`: ms of silence that end an
        utterance (at least 300), or `False` for finals only on `finalize()` and at the close."""
        options = _listen_options(
            encoding, sample_rate, language, model, interim_results, endpointing,
            utterance_end_ms, vad_events, keywords, extra_query,
        )  # fmt: skip
        return ListenSession(self._t.config, options)

    def speak(
        self,
        *,
        voice: str,
        model: str | None = None,
        output_format: OutputFormat = "pcm_24000",
        sync_alignment: bool = True,
        auto_mode: bool = False,
        language_code: str | None = None,
        inactivity_timeout: int | None = None,
        extra_query: Mapping[str, str] | None = None,
    ) -> SpeakSocket:
        """A multi-context speech socket (`with client.live.speak(voice=…) as socket`): open a
        context per turn with `socket.context()`, `send_text` as the text is written, `flush`,
        then `close()` (speak everything sent) or `cancel()` (stop at once, the barge-in);
        iterate the socket for `AudioChunk`s (audio with word timings on the context's clock)
        and `ContextFinal`. `voice`: a voice profile's id or name; `model`: an engine id or any
        `eleven_…` name (the voice's engine); `auto_mode`: cut phrases at sentence ends only;
        `inactivity_timeout`: 1–180 s (20). A refused upgrade raises the same exception as a
        REST call (`InsufficientScope`; `InvalidRequest` naming `voice_id` for an unknown
        voice, …); a refusal on the socket raises its code's exception from the iteration."""
        options = SpeakOptions(
            voice, model, output_format, sync_alignment, auto_mode, language_code,
            inactivity_timeout, extra_query,
        )  # fmt: skip
        return SpeakSocket(self._t.config, options)


class AsyncLive:
    """Live sockets of an `AsyncVoiced` client (`async with`)."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    def listen(
        self,
        *,
        encoding: Literal["linear16", "mulaw"] = "linear16",
        sample_rate: int = 16000,
        language: str | None = None,
        model: str | None = None,
        interim_results: bool = False,
        endpointing: int | Literal[False] | None = None,
        utterance_end_ms: int | None = None,
        vad_events: bool = False,
        keywords: Sequence[str] = (),
        extra_query: Mapping[str, str] | None = None,
    ) -> AsyncListenSession:
        options = _listen_options(
            encoding, sample_rate, language, model, interim_results, endpointing,
            utterance_end_ms, vad_events, keywords, extra_query,
        )  # fmt: skip
        return AsyncListenSession(self._t.config, options)

    def speak(
        self,
        *,
        voice: str,
        model: str | None = None,
        output_format: OutputFormat = "pcm_24000",
        sync_alignment: bool = True,
        auto_mode: bool = False,
        language_code: str | None = None,
        inactivity_timeout: int | None = None,
        extra_query: Mapping[str, str] | None = None,
    ) -> AsyncSpeakSocket:
        options = SpeakOptions(
            voice, model, output_format, sync_alignment, auto_mode, language_code,
            inactivity_timeout, extra_query,
        )  # fmt: skip
        return AsyncSpeakSocket(self._t.config, options)


__all__ = [
    "Alignment",
    "AsyncListenSession",
    "AsyncLive",
    "AsyncSpeakContext",
    "AsyncSpeakSocket",
    "AudioChunk",
    "ContextFinal",
    "ListenEvent",
    "ListenSession",
    "Live",
    "Metadata",
    "OutputFormat",
    "SpeakContext",
    "SpeakEvent",
    "SpeakSocket",
    "SpeechStarted",
    "Transcript",
    "UnknownEvent",
    "UtteranceEnd",
    "Word",
    "WordTiming",
]
