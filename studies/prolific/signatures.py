"""Prolific's webhook signature (docs.prolific.com, API reference, Webhooks, "Verifying"). Pure Python.

The signature is base64(HMAC-SHA256(secret, timestamp + raw body)), sent as `X-Prolific-Request-Signature`, with
the UNIX timestamp of sending as `X-Prolific-Request-Timestamp`. The raw body is used as received (never
re-serialised), so that what is checked is exactly what was sent.
"""
from __future__ import annotations

import base64
import hashlib
import hmac


def signature(secret: str, timestamp: str, body: bytes) -> str:
    # surrogateescape: a secret read from the environment is its bytes again, whatever they are.
    digest = hmac.new(secret.encode("utf-8", "surrogateescape"), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def signature_valid(secret: str, timestamp: str, body: bytes, given: str) -> bool:
    """Constant-time comparison; an empty secret never verifies anything, nor does a timestamp or a signature that
    is not ASCII (a UNIX time and base64 are; a header can hold anything, a NUL or a lone surrogate included)."""
    if not secret or not given or not timestamp or not timestamp.isascii() or not given.isascii():
        return False
    return hmac.compare_digest(signature(secret, timestamp, body).encode(), given.strip().encode())
