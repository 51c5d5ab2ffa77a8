"""Verifies a webhook delivery signed the way Standard Webhooks specifies: HMAC-SHA256 over
`<webhook-id>.<webhook-timestamp>.<raw body>` with the endpoint's secret (`whsec_` + base64), sent
as one or more space-separated `v1,<base64>` entries in `webhook-signature`."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
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
    body exactly as received, before any JSON parsing. Header names are matched in any case.

    Raises `ValueError`, whatever the delivery, for a secret that is not `whsec_` + base64 of a
    key of at least one byte, a tolerance that is not a finite number of seconds, 0 or more, or a
    `now` that is not a finite time: each would let forged or stale deliveries through (an empty
    key is one anyone has; a NaN compares false, so no timestamp would be too far)."""
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError("the tolerance is not a finite number of seconds, 0 or more")
    current = time.time() if now is None else now
    if not math.isfinite(current):
        raise ValueError("now is not a finite time")
    try:
        key = base64.b64decode(secret[len("whsec_") :] if secret.startswith("whsec_") else secret, validate=True)
    except binascii.Error:
        raise ValueError("the secret is not whsec_ followed by base64") from None
    if not key:
        raise ValueError("the secret is empty: whsec_ must be followed by a key")
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
    if abs(current - sent) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too far from the current time")
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected.encode()):
            return
    raise WebhookVerificationError("no signature matches")
