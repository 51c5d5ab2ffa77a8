"""Verifies a webhook delivery signed the way Standard Webhooks specifies: HMAC-SHA256 over
`<webhook-id>.<webhook-timestamp>.<raw body>` with the endpoint's secret (`whsec_` + base64), sent
as one or more space-separated `v1,<base64>` entries in `webhook-signature`."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from typing import Mapping, Optional


class WebhookVerificationError(Exception):
    """The delivery is not authentic, or too old or too new to be trusted."""


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    tolerance: float = 300,
    now: Optional[float] = None,
) -> None:
    """Returns when `body` with these `headers` was signed with `secret` within `tolerance`
    seconds of `now` (default: the clock); raises `WebhookVerificationError` otherwise. Pass the
    body exactly as received, before any JSON parsing. Header names are matched in any case."""
    lowered = {name.lower(): value for name, value in headers.items()}
    webhook_id = lowered.get("webhook-id")
    timestamp = lowered.get("webhook-timestamp")
    signatures = lowered.get("webhook-signature")
    if not webhook_id or not timestamp or not signatures:
        raise WebhookVerificationError("webhook-id, webhook-timestamp and webhook-signature are all required")
    try:
        sent = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds") from None
    if abs((time.time() if now is None else now) - sent) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too far from the current time")
    try:
        key = base64.b64decode(secret[len("whsec_") :] if secret.startswith("whsec_") else secret, validate=True)
    except binascii.Error:
        raise ValueError("the secret is not whsec_ followed by base64") from None
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected.encode()):
            return
    raise WebhookVerificationError("no signature matches")
