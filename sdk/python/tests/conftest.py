"""What scripts/sdk-py-test.sh set up (server, keys, voice, a wav file), and small helpers.

The suite runs against the installed wheel, never the source tree."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from voiced import AsyncVoiced, Voiced

_file = os.environ.get("VOICED_SDK_FIXTURES")
if not _file:
    raise RuntimeError("run the tests through scripts/sdk-py-test.sh, which starts the server")
FIXTURES: dict[str, Any] = json.load(open(_file))
BASE_URL: str = FIXTURES["base_url"]
VOICE: str = FIXTURES["voice"]
SPEAKER: str = FIXTURES["speaker"]
"""An American English voice (af_heart), for speech long enough that Whisper must hear English."""
WAV: str = FIXTURES["wav"]


def client(key: str = "main", **options: Any) -> Voiced:
    return Voiced(api_key=FIXTURES["keys"][key], base_url=BASE_URL, **options)


def async_client(key: str = "main", **options: Any) -> AsyncVoiced:
    return AsyncVoiced(api_key=FIXTURES["keys"][key], base_url=BASE_URL, **options)


def audio_kind(data: bytes) -> str:
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:4] == b"OggS":
        return "ogg"
    if data[:3] == b"ID3" or (data[0] == 0xFF and (data[1] & 0xE0) == 0xE0):
        return "mp3"
    return "unknown"


class Recording(httpx.BaseTransport):
    """Sends every attempt over a real connection and records it (method, path, headers,
    status or error); `fault` may replace an attempt's outcome (a lost answer, a 503)."""

    def __init__(self, fault: Callable[[httpx.Request, int], httpx.Response | None] | None = None):
        self.inner = httpx.HTTPTransport()
        self.log: list[dict[str, Any]] = []
        self.fault = fault

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        entry: dict[str, Any] = {
            "method": request.method,
            "path": request.url.path,
            "headers": dict(request.headers),
        }
        self.log.append(entry)
        try:
            replaced = self.fault(request, len(self.log) - 1) if self.fault else None
            response = replaced if replaced is not None else self.inner.handle_request(request)
        except Exception as e:
            entry["error"] = e
            raise
        entry["status"] = response.status_code
        return response


def recording_client(key: str = "main", fault: Any = None, **options: Any) -> tuple[Voiced, Recording]:
    transport = Recording(fault)
    return client(key, http_client=httpx.Client(transport=transport), **options), transport


@pytest.fixture
def voiced() -> Voiced:
    return client()
