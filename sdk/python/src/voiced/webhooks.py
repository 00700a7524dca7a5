"""Verifying webhook deliveries (docs/webhooks.md), on the Standard Webhooks library.

`webhook-signature` holds space-separated `v1,<base64>` entries (two during a secret rotation),
each an HMAC-SHA256 under the secret of `{webhook-id}.{webhook-timestamp}.{body}`. The signature
is computed by `standardwebhooks.Webhook.sign` and compared with `hmac.compare_digest`; the
timestamp window is checked here so that it can be configured (the library fixes it at 5 min).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import standardwebhooks


class WebhookVerificationError(standardwebhooks.WebhookVerificationError):
    """A delivery that is not from voiced, was altered, or is too old or too new."""


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def verify(
    payload: str | bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance_seconds: int = 300,
    now: datetime | None = None,
) -> Any:
    """Checks a delivery's signature and timestamp and returns its parsed payload
    (`{"type", "timestamp", "data"}`).

    `payload` is the raw body as received (before any JSON parsing); `headers` any mapping of the
    request's headers (a dict, Starlette's or httpx's headers, …); `secret` the endpoint's
    `whsec_…`. Raises `WebhookVerificationError` when a header is missing, the timestamp is more
    than `tolerance_seconds` away from `now`, or no `v1` signature matches.
    """
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    if not timestamp.isdigit():
        raise WebhookVerificationError("invalid webhook-timestamp")
    seconds = int(timestamp)
    current = int((now.timestamp() if now is not None else time.time()))
    if seconds < current - tolerance_seconds:
        raise WebhookVerificationError("message timestamp too old")
    if seconds > current + tolerance_seconds:
        raise WebhookVerificationError("message timestamp too new")

    try:
        webhook = standardwebhooks.Webhook(secret)
    except (binascii.Error, ValueError, standardwebhooks.webhooks.EmptyWebhookSecretError) as e:
        raise ValueError("the secret is not whsec_ followed by base64") from e
    text = payload if isinstance(payload, str) else payload.decode("utf-8")
    expected = webhook.sign(msg_id, datetime.fromtimestamp(seconds, tz=timezone.utc), text)
    expected_bytes = base64.b64decode(expected.split(",", 1)[1])
    for entry in signatures.split(" "):
        version, _, encoded = entry.partition(",")
        if version != "v1" or not encoded:
            continue
        try:
            candidate = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(expected_bytes, candidate):
            return json.loads(text)
    raise WebhookVerificationError("no matching signature found")


__all__ = ["WebhookVerificationError", "verify"]
