# The clients: one per credential, safe to share between threads (Voiced) or tasks
# (AsyncVoiced). Each holds one httpx connection pool; `with_options` makes a view with other
# timeouts or retries over the same pool.
from __future__ import annotations

import os
from types import TracebackType

import httpx

from ._transport import (
    DEFAULT_BASE_URL,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AsyncTransport,
    ClientConfig,
    ResponseCapture,
    SyncTransport,
    capture,
    normalize_base_url,
)
from .live import AsyncLive, Live
from .resources.audio import AsyncAudio, Audio
from .resources.reads import (
    AsyncCaptures,
    AsyncPronunciations,
    AsyncTranscriptions,
    AsyncVoices,
    Captures,
    Pronunciations,
    Transcriptions,
    Voices,
)
from .resources.speech import AsyncGenerations, AsyncSpeech, Generations, Speech

from contextlib import AbstractContextManager


def _config(
    api_key: str | None, base_url: str | None, timeout: float, max_retries: int
) -> ClientConfig:
    key = api_key or os.environ.get("VOICED_API_KEY")
    if not key:
        raise ValueError("Voiced needs an API key: pass api_key= or set VOICED_API_KEY")
    base = base_url or os.environ.get("VOICED_BASE_URL") or DEFAULT_BASE_URL
    return ClientConfig(key, normalize_base_url(base), timeout, max_retries)


class Voiced:
    """The synchronous client.

    `api_key`: an API key (`vk_…`) or an OAuth access token (`vat_…`), sent as
    `Authorization: Bearer`; default `VOICED_API_KEY`. `base_url`: default `VOICED_BASE_URL`,
    else `http://127.0.0.1:8080`; a trailing `/v1` is fine. `timeout`: seconds httpx waits to
    connect and for each read or write of an attempt (default 600). `max_retries`: retries of
    429, 503 and network failures (default 2).
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
    ) -> None:
        config = _config(api_key, base_url, timeout, max_retries)
        self._owns_http = http_client is None
        self._init(SyncTransport(config, http_client or httpx.Client()))

    def _init(self, transport: SyncTransport) -> None:
        self._transport = transport
        self.base_url = transport.config.base_url
        self.generations = Generations(transport)
        """`GET /v1/generations[/{id}]`: status, waiting, audio, captions, cancel, delete."""
        self.speech = Speech(transport, self.generations)
        """`POST /v1/speech`, and waiting for its audio."""
        self.audio = Audio(transport)
        """OpenAI's dialect: `audio.speech`, `audio.transcriptions`, `audio.translations`."""
        self.transcriptions = Transcriptions(transport)
        """`POST /v1/transcriptions`."""
        self.captures = Captures(transport)
        """`/v1/captures`: stored transcriptions."""
        self.voices = Voices(transport)
        """`/v1/voices`: voice profiles and presets."""
        self.pronunciations = Pronunciations(transport)
        """`/v1/pronunciations`: how the account's voices read a word."""
        self.live = Live(transport)
        """Live sockets: `live.listen(...)`, `live.speak(...)`."""

    def with_options(
        self, *, timeout: float | None = None, max_retries: int | None = None
    ) -> Voiced:
        """A view of this client with another timeout or retry count, sharing its connections."""
        config = self._transport.config
        view = object.__new__(Voiced)
        view._owns_http = False
        view._init(
            self._transport.with_config(
                timeout=config.timeout if timeout is None else timeout,
                max_retries=config.max_retries if max_retries is None else max_retries,
            )
        )
        return view

    def capture(self) -> AbstractContextManager[ResponseCapture]:
        """`with client.capture() as c:` collects the response info (status, headers, request id,
        rate limit, idempotent replay, retries) of the calls made in the block: `c.response`."""
        return capture()

    def close(self) -> None:
        if self._owns_http:
            self._transport.http.close()

    def __enter__(self) -> Voiced:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncVoiced:
    """The asynchronous client: the same resources, each method a coroutine (iterators are
    async iterators, sockets async context managers)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        config = _config(api_key, base_url, timeout, max_retries)
        self._owns_http = http_client is None
        self._init(AsyncTransport(config, http_client or httpx.AsyncClient()))

    def _init(self, transport: AsyncTransport) -> None:
        self._transport = transport
        self.base_url = transport.config.base_url
        self.generations = AsyncGenerations(transport)
        self.speech = AsyncSpeech(transport, self.generations)
        self.audio = AsyncAudio(transport)
        self.transcriptions = AsyncTranscriptions(transport)
        self.captures = AsyncCaptures(transport)
        self.voices = AsyncVoices(transport)
        self.pronunciations = AsyncPronunciations(transport)
        self.live = AsyncLive(transport)

    def with_options(
        self, *, timeout: float | None = None, max_retries: int | None = None
    ) -> AsyncVoiced:
        config = self._transport.config
        view = object.__new__(AsyncVoiced)
        view._owns_http = False
        view._init(
            self._transport.with_config(
                timeout=config.timeout if timeout is None else timeout,
                max_retries=config.max_retries if max_retries is None else max_retries,
            )
        )
        return view

    def capture(self) -> AbstractContextManager[ResponseCapture]:
        """As `Voiced.capture`: collects the response info of the calls in this task."""
        return capture()

    async def close(self) -> None:
        if self._owns_http:
            await self._transport.http.aclose()

    async def __aenter__(self) -> AsyncVoiced:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
