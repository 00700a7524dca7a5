"""The official MCP Python SDK (`mcp`) against a running voiced, on both protocol revisions.

Run by scripts/mcp-test.sh, which starts `voiced serve`, creates an account (with a console
password), a key and a voice, and passes them in VOICED_BASE_URL, VOICED_PUBLIC_URL,
VOICED_EMAIL, VOICED_PASSWORD, VOICED_KEY, VOICED_READ_KEY and VOICED_VOICE.

The checks take a connected `mcp.Client`. Most tests connect with an API key header; one connects
through OAuth: the SDK's `OAuthClientProvider` discovers, registers, authorizes (its redirect
handler signs in and consents headlessly) and exchanges the code, then runs the same checks.
"""

import asyncio
import base64
import contextlib
import io
import json
import os
import re
import urllib.request
import wave
from html import unescape
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

BASE = os.environ["VOICED_BASE_URL"]
# The public base URL (the OAuth issuer and resources): the conformance proxy in front of BASE.
PUBLIC = os.environ["VOICED_PUBLIC_URL"]
EMAIL = os.environ["VOICED_EMAIL"]
PASSWORD = os.environ["VOICED_PASSWORD"]
# Tells scripts/mcp-auth-proxy.mjs to add no key: the OAuth client brings its own credentials.
NO_KEY = {"X-Proxy-No-Key": "1"}
CALLBACK = "http://127.0.0.1:9/callback"
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
        await speak_and_transcribe(client, mode)


async def speak_and_transcribe(client, mode):
    """Every tool on the real models: speech made, downloaded, decoded, transcribed back into an
    agent capture that `GET /v1/captures` (with the API key) lists."""
    assert client.server_info.name == "voiced"
    assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"list_voices", "list_captures", "get_generation", "cancel_generation", "speak", "transcribe"}
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


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def form_field(html, name):
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"a form field {name}"
    return unescape(match.group(1))


class HeadlessUser:
    """The person at the browser: follows the authorization URL to the console's sign-in, signs
    in, allows on the consent page, and hands the redirect's code, state and iss to the SDK."""

    def __init__(self):
        self.pages = []
        self.result = asyncio.get_running_loop().create_future()

    async def redirect_handler(self, authorization_url):
        assert authorization_url.startswith(f"{PUBLIC}/oauth/authorize?"), authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, headers=NO_KEY, timeout=30) as browser:
            response = await browser.get(authorization_url)
            while response.status_code in (302, 303):
                location = response.headers["location"]
                if location.startswith(CALLBACK):
                    break
                url = urljoin(str(response.url), location)
                response = await browser.get(url)
                if response.status_code != 200:
                    continue
                html = response.text
                self.pages.append(urlsplit(url).path)
                if urlsplit(url).path == "/console/sign-in":
                    response = await browser.post(f"{PUBLIC}/console/sign-in", data={
                        "email": EMAIL, "password": PASSWORD,
                        "csrf_token": form_field(html, "csrf_token"), "next": form_field(html, "next"),
                    })
                else:
                    assert urlsplit(url).path == "/console/authorize", url
                    assert "voiced python test" in html
                    response = await browser.post(f"{PUBLIC}/console/authorize", data={
                        "request": form_field(html, "request"), "decision": "allow",
                        "csrf_token": form_field(html, "csrf_token"),
                    })
            assert response.status_code == 302, (response.status_code, response.text)
        query = parse_qs(urlsplit(response.headers["location"]).query)
        self.result.set_result(AuthorizationCodeResult(
            code=query["code"][0], state=query["state"][0], iss=query["iss"][0]))

    async def callback_handler(self):
        return await self.result


async def test_oauth_client_provider_signs_in_consents_and_uses_the_tools():
    user = HeadlessUser()
    storage = MemoryStorage()
    oauth = OAuthClientProvider(
        f"{PUBLIC}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="voiced python test",
            redirect_uris=[CALLBACK],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=user.redirect_handler,
        callback_handler=user.callback_handler,
    )
    async with httpx2.AsyncClient(auth=oauth, headers=NO_KEY, timeout=300) as http:
        async with Client(streamable_http_client(f"{PUBLIC}/mcp", http_client=http), mode="auto") as client:
            await speak_and_transcribe(client, "auto")
    # The SDK registered itself, the user signed in and consented, and the tokens are voiced's.
    assert user.pages == ["/console/sign-in", "/console/authorize"], user.pages
    assert storage.client_info.client_id.startswith("client_")
    assert storage.tokens.access_token.startswith("vat_")
    assert storage.tokens.refresh_token.startswith("vrt_")
    assert set(storage.tokens.scope.split()) == {"voice:read", "voice:generate"}
