"""`verify_webhook` against the Standard Webhooks specification's own example, and the ways a
delivery must be refused. (The daemon's own deliveries come with its webhooks.)"""

from __future__ import annotations

import unittest

from tokenvault import WebhookVerificationError, verify_webhook

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


if __name__ == "__main__":
    unittest.main()
