# What both live sockets share: the ws:// URL under the base URL, the credential headers, and
# opening with the REST calls' retry rule (an upgrade refused with 429 or 503 is tried again
# after Retry-After; a refusal is an HTTP answer and becomes the same exception as on REST).
from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from urllib.parse import urlencode

import websockets
from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.asyncio.client import connect as async_connect
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as sync_connect

from .._errors import APIConnectionError, APITimeoutError, VoicedError, error_from_response
from .._transport import ClientConfig, retry_delay

# Audio frames and speech chunks are small; 16 MiB bounds a hostile peer's message.
MAX_MESSAGE = 16 * 1024 * 1024


def socket_url(config: ClientConfig, path: str, query: Sequence[tuple[str, str]]) -> str:
    base = config.base_url
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    return f"{base}{path}" + (f"?{urlencode(list(query))}" if query else "")


def _refusal(e: Exception) -> VoicedError:
    if isinstance(e, websockets.exceptions.InvalidStatus):
        r = e.response
        headers = {k.lower(): v for k, v in r.headers.raw_items()}
        return error_from_response(r.status_code, headers, bytes(r.body or b""))
    if isinstance(e, TimeoutError):
        return APITimeoutError(f"the live socket did not open in time: {e}")
    return APIConnectionError(f"the live socket could not be opened: {e}")


_OPEN_ERRORS = (websockets.exceptions.InvalidHandshake, OSError, TimeoutError)


def open_sync(
    config: ClientConfig, url: str, headers: dict[str, str]
) -> ClientConnection:
    for retries in range(config.max_retries + 1):
        try:
            connection = sync_connect(
                url,
                additional_headers=headers,
                open_timeout=min(config.timeout, 60.0),
                max_size=MAX_MESSAGE,
                user_agent_header="voiced-python",
            )
            # Entering marks it as managed (websockets 17 warns otherwise); the session closes it.
            return connection.__enter__()
        except _OPEN_ERRORS as e:
            error = _refusal(e)
        delay = retry_delay(error, retries, True)
        if delay is None or retries == config.max_retries:
            raise error
        time.sleep(delay)
    raise AssertionError("unreachable")


async def open_async(
    config: ClientConfig, url: str, headers: dict[str, str]
) -> AsyncConnection:
    for retries in range(config.max_retries + 1):
        try:
            return await async_connect(
                url,
                additional_headers=headers,
                open_timeout=min(config.timeout, 60.0),
                max_size=MAX_MESSAGE,
                user_agent_header="voiced-python",
            )
        except _OPEN_ERRORS as e:
            error = _refusal(e)
        delay = retry_delay(error, retries, True)
        if delay is None or retries == config.max_retries:
            raise error
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")
