"""`verify_webhook` against the Standard Webhooks specification's own example, the ways a
delivery must be refused, and the daemon's own deliveries."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import re
import unittest

from tokenvault import Client, WebhookVerificationError, verify_webhook

from daemon import REPOSITORY, Daemon, Provider, Receiver


def documented_verifier():  # type: ignore[no-untyped-def]
    """docs/webhooks.md's standard-library verification snippet, as a function."""
    with open(os.path.join(REPOSITORY, "docs", "webhooks.md")) as file:
        snippet = re.search(r"```python\n(import base64.*?def verify\(.*?)```", file.read(), re.S)
    assert snippet is not None, "docs/webhooks.md has no Python verification snippet"
    scope: dict = {}
    exec(snippet.group(1), scope)
    return scope["verify"]

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
HEADERS = {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}
BODY = b'{"test": 2432232314}'
NOW = 1614265330 + 10


class WebhookVerificationTests(unittest.TestCase):
    def test_the_specifications_example_is_accepted(self) -> None:
        verify_webhook(SECRET, HEADERS, BODY, now=NOW)
        verify_webhook(SECRET, {k.upper(): v for k, v in HEADERS.items()}, BODY, now=NOW)
        several = dict(HEADERS, **{"webhook-signature": "v1,bm90IGl0 v2,eA== " + HEADERS["webhook-signature"]})
        verify_webhook(SECRET, several, BODY, now=NOW)

    def test_anything_changed_is_refused(self) -> None:
        refused = [
            (SECRET, HEADERS, b'{"test": 2432232315}'),
            ("whsec_" + "A" * 32, HEADERS, BODY),
            (SECRET, dict(HEADERS, **{"webhook-id": "msg_other"}), BODY),
            (SECRET, dict(HEADERS, **{"webhook-timestamp": "1614265331"}), BODY),
            (SECRET, dict(HEADERS, **{"webhook-signature": "v2," + HEADERS["webhook-signature"][3:]}), BODY),
            (SECRET, {k: v for k, v in HEADERS.items() if k != "webhook-signature"}, BODY),
            (SECRET, dict(HEADERS, **{"webhook-timestamp": "soon"}), BODY),
        ]
        for secret, headers, body in refused:
            with self.subTest(headers=headers, body=body):
                with self.assertRaises(WebhookVerificationError):
                    verify_webhook(secret, headers, body, now=NOW)

    def test_a_delivery_too_old_or_too_new_is_refused(self) -> None:
        for now in (1614265330 + 301, 1614265330 - 301):
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(SECRET, HEADERS, BODY, now=now)
        verify_webhook(SECRET, HEADERS, BODY, tolerance=3600, now=1614265330 + 3000)
        for now in (1614265330 + 300, 1614265330 - 300):
            verify_webhook(SECRET, HEADERS, BODY, now=now)  # the boundary is in

    def test_a_secret_time_or_tolerance_that_would_let_anything_through_is_refused(self) -> None:
        # Signed with the empty key "whsec_" decodes to, which anyone can do.
        signed = f"{HEADERS['webhook-id']}.{HEADERS['webhook-timestamp']}.".encode() + BODY
        forged = base64.b64encode(hmac.new(b"", signed, hashlib.sha256).digest()).decode()
        headers = dict(HEADERS, **{"webhook-signature": "v1," + forged})
        for secret in ("whsec_", ""):
            with self.subTest(secret=secret):
                with self.assertRaisesRegex(ValueError, "the secret is empty"):
                    verify_webhook(secret, headers, BODY, now=NOW)
                with self.assertRaises(ValueError):
                    verify_webhook(secret, {}, BODY, now=NOW)  # whatever the delivery
        wrong = [
            {"now": math.nan},
            {"now": math.inf},
            {"tolerance": math.nan},
            {"tolerance": math.inf},
            {"tolerance": -1},
        ]
        for options in wrong:
            with self.subTest(options=options):
                with self.assertRaises(ValueError):
                    verify_webhook(SECRET, HEADERS, BODY, **dict({"now": NOW}, **options))  # type: ignore[arg-type]
                with self.assertRaises(ValueError):
                    verify_webhook(SECRET, {}, BODY, **dict({"now": NOW}, **options))  # type: ignore[arg-type]


class DaemonDeliveryTests(unittest.TestCase):
    """The daemon signs a deletion's event; the verifier takes it as sent and refuses it altered."""

    def test_the_daemons_delivery_is_accepted_and_a_tampered_one_refused(self) -> None:
        provider, receiver = Provider(), Receiver()
        daemon = Daemon(provider, receiver)
        try:
            client = Client(daemon.socket)
            client.put("payments/alice", provider="idp", token=provider.issue())
            client.delete("payments/alice")
            delivery = receiver.wait_for("credential.deleted")
            headers, body = delivery["headers"], delivery["body"]
            verify_webhook(daemon.webhook_secret, headers, body)  # type: ignore[arg-type]
            lowered = {name.lower(): value for name, value in headers.items()}  # type: ignore[union-attr]
            documented_verifier()(daemon.webhook_secret, lowered, body)
            event = json.loads(body)  # type: ignore[arg-type]
            self.assertEqual(event["data"]["id"], "payments/alice")
            for token in provider.issued:
                self.assertNotIn(token.encode(), body)  # type: ignore[operator]
            tampered = body.replace(b"alice", b"mallory")  # type: ignore[union-attr]
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(daemon.webhook_secret, headers, tampered)  # type: ignore[arg-type]
            with self.assertRaises(ValueError):
                documented_verifier()(daemon.webhook_secret, lowered, tampered)
        finally:
            daemon.close()
            receiver.close()
            provider.close()


if __name__ == "__main__":
    unittest.main()
