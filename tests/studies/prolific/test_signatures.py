"""Prolific's webhook signatures (studies/prolific/signatures.py)."""
from __future__ import annotations

import base64
import hashlib
import hmac

from studies.prolific.signatures import signature, signature_valid


def test_signature_is_prolifics_base64_hmac_of_timestamp_and_body():
    assert signature("s", "1700000000", b"{}") == base64.b64encode(
        hmac.new(b"s", b"1700000000{}", hashlib.sha256).digest()).decode()
    assert not signature_valid("", "1700000000", b"{}", signature("", "1700000000", b"{}"))  # no secret: nothing
