# The HTTP transport every resource goes through: the credential, the automatic
# Idempotency-Key (one per logical call, the same on each of its retries), timeouts, and retries
# with backoff that honour Retry-After. One synchronous and one asynchronous transport over the
# same request description and the same retry rule.
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from ._errors import (
    APIConnectionError,
    APITimeoutError,
    VoicedError,
    error_from_response,
)
from ._rate_limit import RateLimitInfo, parse_rate_limit
from ._version import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_RETRIES = 2
# The longest Retry-After the SDK waits out by itself; beyond it the error goes to the caller.
MAX_RETRY_AFTER_SECONDS = 60

QueryValue = str | int | float | bool | None


@dataclass(frozen=True)
class ClientConfig:
    api_key: str
    base_url: str
    timeout: float
    max_retries: int


@dataclass(frozen=True)
class ResponseInfo:
    """What a call's final HTTP answer said besides its body."""

    status: int
    headers: httpx.Headers
    url: str
    request_id: str | None
    """`X-Request-Id`: quote it when reporting a problem."""
    rate_limit: RateLimitInfo | None
    """Rate-limit state (`RateLimit`, `RateLimit-Policy`); `None` for OAuth access tokens."""
    idempotent_replayed: bool
    """`Idempotent-Replayed: true`: answered from an earlier request with the same key."""
    idempotency_key: str | None
    """The `Idempotency-Key` sent (every POST has one)."""
    retries: int
    """How many times the request was sent again after a retryable failure."""


@dataclass
class Request:
    method: str
    path: str | None = None
    """Under the base URL, e.g. `/v1/voices`."""
    url: str | None = None
    """An absolute URL instead (a signed audio link): sent without the credential."""
    query: Mapping[str, QueryValue] = field(default_factory=dict)
    json: Any = None
    data: Mapping[str, str | Sequence[str]] | None = None
    """Multipart form fields (the OpenAI transcription dialect)."""
    files: Mapping[str, tuple[str, bytes, str]] | None = None
    accept: str = "application/json"
    idempotency_key: str | None = None


class ResponseCapture:
    """What `client.capture()` collects: the `ResponseInfo` of each call made inside its block."""

    def __init__(self) -> None:
        self.responses: list[ResponseInfo] = []

    @property
    def response(self) -> ResponseInfo:
        """The last call's response info."""
        if not self.responses:
            raise LookupError("no call answered inside the capture block")
        return self.responses[-1]


_capture: contextvars.ContextVar[ResponseCapture | None] = contextvars.ContextVar(
    "voiced_capture", default=None
)


@contextlib.contextmanager
def capture() -> Iterator[ResponseCapture]:
    """Collects the response info of the calls made inside the block, in this thread or task."""
    recorder = ResponseCapture()
    token = _capture.set(recorder)
    try:
        yield recorder
    finally:
        _capture.reset(token)


def _record(info: ResponseInfo) -> None:
    recorder = _capture.get()
    if recorder is not None:
        recorder.responses.append(info)


def normalize_base_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def retry_delay(error: VoicedError, retries: int, resendable: bool) -> float | None:
    """Seconds to wait before resending after `error`, or `None` when it is not worth a retry.

    Retried: 429 (but not an exhausted allowance or ceiling, which a wait does not fix), 503,
    409 `idempotency_key_in_use` (our own first attempt is still running), and network failures
    or timeouts of resendable requests. `Retry-After` is honoured (plus up to 250 ms of jitter);
    otherwise exponential backoff from 0.5 s, capped at 8 s, with jitter.
    """
    if error.code in ("connection_error", "timeout"):
        retryable = resendable
    elif error.code in ("quota_exhausted", "key_ceiling_exceeded"):
        retryable = False
    elif error.code == "idempotency_key_in_use":
        retryable = True
    else:
        retryable = error.status in (429, 503)
    if not retryable:
        return None
    if error.retry_after is not None:
        if error.retry_after > MAX_RETRY_AFTER_SECONDS:
            return None
        return error.retry_after + random.random() * 0.25
    return float(min(8.0, 0.5 * 2**retries) * (0.75 + random.random() * 0.25))


@dataclass(frozen=True)
class _Prepared:
    method: str
    url: str
    headers: dict[str, str]
    params: dict[str, str]
    idempotency_key: str | None
    resendable: bool


class _Base:
    def __init__(self, config: ClientConfig) -> None:
        self.config = config

    def _prepare(self, req: Request) -> _Prepared:
        url = req.url if req.url is not None else f"{self.config.base_url}{req.path or ''}"
        key = req.idempotency_key
        if req.method == "POST" and key is None:
            key = str(uuid.uuid4())
        headers = {"accept": req.accept, "user-agent": f"voiced-python/{__version__}"}
        # The credential goes to the API only, never to a URL taken from a response body.
        if req.url is None:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        if key is not None:
            headers["idempotency-key"] = key
        params = {k: _query_value(v) for k, v in req.query.items() if v is not None}
        # Resending is safe for reads and for writes that carry an Idempotency-Key.
        resendable = req.method in ("GET", "DELETE") or key is not None
        return _Prepared(req.method, url, headers, params, key, resendable)

    def _build(self, http: httpx.Client | httpx.AsyncClient, p: _Prepared, req: Request) -> httpx.Request:
        return http.build_request(
            p.method,
            p.url,
            headers=p.headers,
            # A signed link's query is sent exactly as given: re-encoding it breaks the signature.
            params=p.params or None,
            json=req.json,
            data=req.data,
            files=req.files,
            timeout=httpx.Timeout(self.config.timeout),
        )

    def _info(self, resp: httpx.Response, p: _Prepared, retries: int) -> ResponseInfo:
        info = ResponseInfo(
            status=resp.status_code,
            headers=resp.headers,
            url=p.url,
            request_id=resp.headers.get("x-request-id"),
            rate_limit=parse_rate_limit(resp.headers),
            idempotent_replayed=resp.headers.get("idempotent-replayed") == "true",
            idempotency_key=p.idempotency_key,
            retries=retries,
        )
        _record(info)
        return info

    def _network_error(self, p: _Prepared, e: Exception) -> VoicedError:
        path = httpx.URL(p.url).path
        if isinstance(e, httpx.TimeoutException):
            return APITimeoutError(
                f"{p.method} {path} timed out after {self.config.timeout:g} s"
            )
        return APIConnectionError(f"{p.method} {path} failed: {e}")


def _query_value(v: str | int | float | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class SyncTransport(_Base):
    def __init__(self, config: ClientConfig, http: httpx.Client) -> None:
        super().__init__(config)
        self.http = http

    def with_config(self, **changes: Any) -> SyncTransport:
        return SyncTransport(replace(self.config, **changes), self.http)

    def send(self, req: Request, *, stream: bool = False) -> tuple[httpx.Response, ResponseInfo]:
        """Sends `req` with retries; answers its 2xx response (unread when `stream`), or raises."""
        p = self._prepare(req)
        for retries in range(self.config.max_retries + 1):
            try:
                resp = self.http.send(self._build(self.http, p, req), stream=stream)
            except httpx.TransportError as e:
                error = self._network_error(p, e)
            else:
                if 200 <= resp.status_code < 300:
                    return resp, self._info(resp, p, retries)
                try:
                    content = resp.read()
                except httpx.TransportError as e:
                    error = self._network_error(p, e)
                else:
                    error = error_from_response(resp.status_code, resp.headers, content)
                finally:
                    resp.close()
            delay = retry_delay(error, retries, p.resendable)
            if delay is None or retries == self.config.max_retries:
                raise error
            time.sleep(delay)
        raise AssertionError("unreachable")

    def json(self, req: Request) -> Any:
        resp, _ = self.send(req)
        return resp.json() if resp.content else None

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class AsyncTransport(_Base):
    def __init__(self, config: ClientConfig, http: httpx.AsyncClient) -> None:
        super().__init__(config)
        self.http = http

    def with_config(self, **changes: Any) -> AsyncTransport:
        return AsyncTransport(replace(self.config, **changes), self.http)

    async def send(
        self, req: Request, *, stream: bool = False
    ) -> tuple[httpx.Response, ResponseInfo]:
        p = self._prepare(req)
        for retries in range(self.config.max_retries + 1):
            try:
                resp = await self.http.send(self._build(self.http, p, req), stream=stream)
            except httpx.TransportError as e:
                error = self._network_error(p, e)
            else:
                if 200 <= resp.status_code < 300:
                    return resp, self._info(resp, p, retries)
                try:
                    content = await resp.aread()
                except httpx.TransportError as e:
                    error = self._network_error(p, e)
                else:
                    error = error_from_response(resp.status_code, resp.headers, content)
                finally:
                    await resp.aclose()
            delay = retry_delay(error, retries, p.resendable)
            if delay is None or retries == self.config.max_retries:
                raise error
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def json(self, req: Request) -> Any:
        resp, _ = await self.send(req)
        return resp.json() if resp.content else None

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def iter_sse(lines: Iterator[str]) -> Iterator[str]:
    """The `data:` payloads of a `text/event-stream`, one per event."""
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield "\n".join(data)


async def aiter_sse(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield "\n".join(data)
