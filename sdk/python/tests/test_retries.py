import socket
import threading

import httpx
import pytest
from conftest import BASE_URL, FIXTURES, VOICE, client, recording_client

from voiced import APIConnectionError, APITimeoutError, KeyCeilingExceeded, RateLimitExceeded, Voiced


def burn_reads(key: str) -> None:
    """Spends the key's read-burst quota (300 a minute) until the server answers 429."""
    headers = {"authorization": f"Bearer {key}"}
    with httpx.Client(base_url=BASE_URL, headers=headers) as http:
        for _ in range(1000):
            if http.get("/v1/voices").status_code == 429:
                return
    raise AssertionError("no 429 after 1000 reads")


def test_429_is_retried_after_retry_after_and_without_retries_carries_it():
    key = FIXTURES["keys"]["rate_limited"]
    # Reads refill one every 0.2 s, so a token may come back between the burn and the call;
    # then burn again. What must hold: a 429 the SDK saw was followed by a successful retry.
    for _ in range(20):
        burn_reads(key)
        try:
            client("rate_limited", max_retries=0).voices.list()
            continue
        except RateLimitExceeded as err:
            assert err.status == 429 and err.retry_after is not None and err.retry_after >= 1
            assert err.rate_limit is not None and err.rate_limit.remaining == 0
        c, rec = recording_client("rate_limited")
        with c.capture() as captured:
            page = c.voices.list()
        if rec.log[0]["status"] != 429:
            continue
        assert [e["status"] for e in rec.log] == [429, 200]
        assert captured.response.retries == 1
        assert any(v["name"] == VOICE for v in page["data"])
        return
    raise AssertionError("could not catch the key with its quota spent")


def test_503_is_retried_keeping_the_posts_idempotency_key():
    def unavailable_once(request: httpx.Request, attempt: int):
        if attempt == 0:
            return httpx.Response(
                503,
                headers={"content-type": "application/problem+json", "retry-after": "0"},
                json={"type": "about:blank", "title": "Service unavailable", "status": 503,
                      "detail": "busy", "instance": "/v1/speech", "code": "service_unavailable"},
            )
        return None

    c, rec = recording_client(fault=unavailable_once)
    accepted = c.speech.create(text="Retry me.", voice=VOICE)
    assert accepted["id"].startswith("gen_")
    assert [e["status"] for e in rec.log] == [503, 202]
    assert rec.log[0]["headers"]["idempotency-key"] == rec.log[1]["headers"]["idempotency-key"]


def test_the_key_ceiling_is_key_ceiling_exceeded_and_not_retried():
    c, rec = recording_client("ceiling")
    with pytest.raises(KeyCeilingExceeded) as err:
        c.speech.create(text="Over the ceiling.", voice=VOICE)
    assert err.value.status == 429 and err.value.code == "key_ceiling_exceeded"
    assert err.value.settings_url and err.value.settings_url.startswith("http")
    assert len(rec.log) == 1, "waiting does not fix a ceiling: no retry"


def test_an_unreachable_server_is_a_connection_error_after_the_retries():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    transport = httpx.HTTPTransport()
    attempts = []

    class Counting(httpx.BaseTransport):
        def handle_request(self, request):
            attempts.append(request.url.path)
            return transport.handle_request(request)

    c = Voiced(api_key="vk_x", base_url=f"http://127.0.0.1:{port}", max_retries=1,
               http_client=httpx.Client(transport=Counting()))
    with pytest.raises(APIConnectionError) as err:
        c.voices.list()
    assert err.value.status is None
    assert len(attempts) == 2


def test_a_silent_server_times_out_each_attempt_keeping_the_key():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        c, rec = recording_client("main", timeout=0.5, max_retries=1)
        c = Voiced(api_key="vk_x", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}",
                   timeout=0.5, max_retries=1, http_client=c._transport.http)
        with pytest.raises(APITimeoutError):
            c.audio.speech.create(model="kokoro", input="Too slow.", voice=VOICE)
        assert len(rec.log) == 2 and all("status" not in e for e in rec.log)
        assert rec.log[0]["headers"]["idempotency-key"] == rec.log[1]["headers"]["idempotency-key"]
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        listener.close()


def test_with_options_changes_retries_for_one_view():
    c = client()
    view = c.with_options(max_retries=0, timeout=30)
    assert view.voices.list()["total"] >= 1
    assert view._transport.config.max_retries == 0 and c._transport.config.max_retries == 2
