"""The official MCP Python SDK (`mcp`) against a running voiced, on both protocol revisions.

Run by scripts/mcp-test.sh, which starts `voiced serve`, creates an account, a key and a voice,
and passes them in VOICED_BASE_URL, VOICED_KEY, VOICED_READ_KEY and VOICED_VOICE.

Each test takes a `connect` fixture: a function (mode) -> async context manager yielding a
connected `mcp.Client`. Here it authenticates with an API key header; a test that authenticates
through OAuth (`OAuthClientProvider`) supplies another fixture with the same shape and reuses
the checks.
"""

import base64
import contextlib
import io
import json
import os
import urllib.request
import wave

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

BASE = os.environ["VOICED_BASE_URL"]
KEY = os.environ["VOICED_KEY"]
READ_KEY = os.environ["VOICED_READ_KEY"]
VOICE = os.environ["VOICED_VOICE"]
MCP_URL = f"{BASE}/mcp"
SENTENCE = "The quick brown fox jumps over the lazy dog."
# "auto" probes server/discover and so runs on 2026-07-28; "legacy" is the initialize handshake.
MODES = ["legacy", "auto"]

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def key_connect(key):
    """Connects with `Authorization: Bearer <key>` on every request."""

    @contextlib.asynccontextmanager
    async def connect(mode):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=300) as http:
            async with Client(streamable_http_client(MCP_URL, http_client=http), mode=mode) as client:
                yield client

    return connect


@pytest.fixture
def connect():
    return key_connect(KEY)


def rest(path, key=KEY):
    request = urllib.request.Request(f"{BASE}{path}", headers={"Authorization": f"Bearer {key}"})
    return json.load(urllib.request.urlopen(request))


def wav_ms(data):
    with wave.open(io.BytesIO(data)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return w.getnframes() * 1000 // w.getframerate()


def words(text):
    return {w.strip(".,!?;:'\"").lower() for w in text.split()} - {""}


@pytest.mark.parametrize("mode", MODES)
async def test_tools_speak_and_transcribe(connect, mode):
    async with connect(mode) as client:
        assert client.server_info.name == "voiced"
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"list_voices", "list_captures", "get_generation", "speak", "transcribe"}
        assert tools["list_voices"].annotations.read_only_hint is True
        assert tools["speak"].annotations.read_only_hint is False
        assert tools["speak"].output_schema["required"][0] == "generation_id"

        voices = await client.call_tool("list_voices", {})
        assert not voices.is_error
        assert VOICE in [v["name"] for v in voices.structured_content["data"]]

        # speak, with progress notifications while it waits. The SDK validates the
        # structured content against the tool's output schema.
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        spoken = await client.call_tool(
            "speak",
            {"text": SENTENCE, "voice": VOICE, "format": "wav", "wait_seconds": 120},
            progress_callback=on_progress,
        )
        assert not spoken.is_error, spoken
        out = spoken.structured_content
        assert out["status"] == "completed"
        assert progress, "progress notifications arrive while speak waits"
        values = [p[0] for p in progress]
        assert values == sorted(set(values)), values
        assert out["audio_url"] in spoken.content[0].text
        links = [c for c in spoken.content if c.type == "resource_link"]
        assert [str(link.uri) for link in links] == [out["audio_url"]]
        assert links[0].mime_type == "audio/wav"
        audio = urllib.request.urlopen(out["audio_url"]).read()
        ms = wav_ms(audio)
        assert 1000 < ms < 8000
        assert abs(ms - out["duration_ms"]) <= 50

        # The generated speech, transcribed back; the capture is the agent's.
        heard = await client.call_tool("transcribe", {"audio_base64": base64.b64encode(audio).decode()})
        assert not heard.is_error, heard
        transcript = heard.structured_content
        assert len(words(SENTENCE) - words(transcript["text"])) <= 1, transcript
        assert transcript["language"] == "en"
        captures = rest("/v1/captures?limit=200")["data"]
        mine = [c for c in captures if c["id"] == transcript["capture_id"]]
        assert len(mine) == 1 and mine[0]["source"] == "agent"

        generation = await client.call_tool("get_generation", {"generation_id": out["generation_id"]})
        assert generation.structured_content["status"] == "completed"
        assert rest(f"/v1/generations/{out['generation_id']}")["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
async def test_errors_are_tool_errors_with_codes(connect, mode):
    async with connect(mode) as client:
        bad = await client.call_tool("speak", {"text": "Hi.", "voice": "No such voice"})
        assert bad.is_error
        error = json.loads(bad.content[0].text)
        assert error["code"] == "invalid_request" and error["param"] == "voice"
        missing = await client.call_tool("get_generation", {"generation_id": "gen_missing"})
        assert missing.is_error and json.loads(missing.content[0].text)["code"] == "not_found"


async def test_a_read_only_key_is_refused_generation_with_the_scope_to_ask_for():
    async with key_connect(READ_KEY)("legacy") as client:
        voices = await client.call_tool("list_voices", {})
        assert not voices.is_error
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            MCP_URL,
            headers={
                "Authorization": f"Bearer {READ_KEY}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "speak", "arguments": {"text": "Hi.", "voice": VOICE}}},
        )
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="voice:generate"' in challenge
    assert 'resource_metadata="' in challenge
