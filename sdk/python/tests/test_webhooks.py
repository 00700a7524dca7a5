import base64
import json
import os
import subprocess
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import standardwebhooks
from conftest import FIXTURES, VOICE, client

from voiced import WebhookVerificationError, webhooks

SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_HEADERS = {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}
SPEC_BODY = '{"test": 2432232314}'
SPEC_TIME = datetime.fromtimestamp(1614265330, tz=timezone.utc)


def test_the_specifications_example_verifies_from_text_and_bytes():
    assert webhooks.verify(SPEC_BODY, SPEC_HEADERS, SPEC_SECRET, now=SPEC_TIME) == {"test": 2432232314}
    upper = {k.upper(): v for k, v in SPEC_HEADERS.items()}
    assert webhooks.verify(SPEC_BODY.encode(), upper, SPEC_SECRET, now=SPEC_TIME) == {"test": 2432232314}


def test_refusals_altered_body_wrong_secret_old_new_missing():
    def refused(body, headers, secret=SPEC_SECRET, now=SPEC_TIME) -> str:
        with pytest.raises(WebhookVerificationError) as err:
            webhooks.verify(body, headers, secret, now=now)
        # The library's own exception type catches it too.
        assert isinstance(err.value, standardwebhooks.WebhookVerificationError)
        return str(err.value)

    assert "signature" in refused('{"test": 2432232315}', SPEC_HEADERS)
    other = "whsec_" + base64.b64encode(b"another secret").decode()
    assert "signature" in refused(SPEC_BODY, SPEC_HEADERS, other)
    late = datetime.fromtimestamp(1614265330 + 301, tz=timezone.utc)
    assert "too old" in refused(SPEC_BODY, SPEC_HEADERS, now=late)
    early = datetime.fromtimestamp(1614265330 - 301, tz=timezone.utc)
    assert "too new" in refused(SPEC_BODY, SPEC_HEADERS, now=early)
    missing = {k: v for k, v in SPEC_HEADERS.items() if k != "webhook-signature"}
    assert "missing" in refused(SPEC_BODY, missing)
    assert "signature" in refused(SPEC_BODY, {**SPEC_HEADERS, "webhook-signature": "v2,abc"})
    assert "signature" in refused(SPEC_BODY, {**SPEC_HEADERS, "webhook-signature": "garbage"})


def test_agrees_with_the_standardwebhooks_package_rotations_included():
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    previous = "whsec_" + base64.b64encode(b"the previous secret, 32 bytes ok").decode()
    now = datetime.now(tz=timezone.utc)
    body = json.dumps({"type": "generation.completed", "data": {"id": "gen_1"}})
    signature = standardwebhooks.Webhook(secret).sign("msg_x", now, body)
    old = standardwebhooks.Webhook(previous).sign("msg_x", now, body)
    headers = {
        "webhook-id": "msg_x",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": f"{old} {signature}",
    }
    assert webhooks.verify(body, headers, secret) == json.loads(body)
    assert webhooks.verify(body, headers, previous) == json.loads(body)
    assert standardwebhooks.Webhook(secret).verify(body, headers) == json.loads(body)


def test_a_delivery_signed_by_voiced_verifies_with_the_endpoints_secret():
    received: list[tuple[dict, bytes]] = []
    arrived = threading.Condition()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            with arrived:
                received.append((dict(self.headers.items()), body))
                arrived.notify_all()
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    env = {**os.environ, "VOICED_DATA_DIR": FIXTURES["data_dir"], "VOICED_LOG": "warn"}
    try:
        out = subprocess.run(
            [FIXTURES["bin"], "admin", "--json", "webhook", "create", "--account",
             FIXTURES["main_account"], "--url", f"http://127.0.0.1:{server.server_port}/hooks",
             "--events", "generation.completed"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout
        endpoint = json.loads(out)
        c = client()
        accepted = c.speech.create(text="Webhook check.", voice=VOICE)
        c.generations.wait(accepted["id"], poll_interval=0.1)

        def mine():
            for headers, body in received:
                if json.loads(body)["data"].get("id") == accepted["id"]:
                    return headers, body
            return None

        with arrived:
            assert arrived.wait_for(mine, timeout=120), "the delivery never came"
        headers, body = mine()  # type: ignore[misc]
        event = webhooks.verify(body, headers, endpoint["secret"])
        assert event["type"] == "generation.completed"
        assert event["data"]["id"] == accepted["id"] and event["data"]["status"] == "completed"
        with pytest.raises(WebhookVerificationError):
            webhooks.verify(body.replace(b"completed", b"failed"), headers, endpoint["secret"])
        subprocess.run(
            [FIXTURES["bin"], "admin", "webhook", "delete", endpoint["id"], "--account",
             FIXTURES["main_account"]],
            env=env, capture_output=True, check=True,
        )
    finally:
        server.shutdown()
        thread.join()
