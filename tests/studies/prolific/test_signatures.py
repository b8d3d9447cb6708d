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


def test_any_header_text_is_a_wrong_signature_never_an_error():
    """Headers are whatever was sent (a NUL, a lone surrogate, Latin-1); the secret is the environment's bytes."""
    for hostile in ("\x00", "\ud800", "\udcff", "\u00ff", "1700000000\ud800"):
        assert not signature_valid("s", hostile, b"{}", signature("s", "1700000000", b"{}"))
        assert not signature_valid("s", "1700000000", b"{}", hostile)
    undecodable = "s\udcff"  # os.environ's text of a secret that is not UTF-8 (byte 0xFF)
    assert signature(undecodable, "1700000000", b"{}") == base64.b64encode(
        hmac.new(b"s\xff", b"1700000000{}", hashlib.sha256).digest()).decode()
    assert signature_valid(undecodable, "1700000000", b"{}", signature(undecodable, "1700000000", b"{}"))
