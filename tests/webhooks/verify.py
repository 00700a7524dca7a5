"""Verifies recorded webhook deliveries with the `standardwebhooks` package (PyPI), an
implementation of the Standard Webhooks specification independent of voiced's own code.

Input (stdin): a JSON list of {"secret": "whsec_…", "id", "timestamp", "signature", "body"};
`"expect": false` marks a delivery that must NOT verify (a tampered copy). Prints one line per
delivery and exits 1 if any outcome differs from what was expected.
"""
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

failures = 0
for n, d in enumerate(json.load(sys.stdin)):
    headers = {
        "webhook-id": d["id"],
        "webhook-timestamp": d["timestamp"],
        "webhook-signature": d["signature"],
    }
    expect = d.get("expect", True)
    try:
        payload = Webhook(d["secret"]).verify(d["body"], headers)
        ok = True
        detail = payload.get("type", "?")
    except WebhookVerificationError as err:
        ok = False
        detail = str(err)
    if ok != expect:
        failures += 1
    print(f"{n}: {d['id']} verified={ok} expected={expect} {detail}")
sys.exit(1 if failures else 0)
