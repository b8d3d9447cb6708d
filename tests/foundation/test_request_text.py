"""The quick look at a whole urlencoded body (one decoding) never passes a body in which the look part by part finds
a NUL or a surrogate: a property checked over generated bodies made of the pieces that matter (escapes of NUL,
surrogate and other UTF-8 bytes, '+', the separators)."""
from __future__ import annotations

from urllib.parse import parse_qsl

from hypothesis import given, settings
from hypothesis import strategies as st

from foundation.request_text import _urlencoded_clean, _urlencoded_problem, text_problem

PIECES = ["a", "Z", "9", "+", "=", "&", ";", "%00", "%ED%A0%80", "%ED%BF%BF", "%ED", "%A0", "%80", "%E4%BD%A0",
          "%FF", "%25", "%26", "%3D", "%", "%2", "\u00ed", "\u00e9"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_a_body_the_quick_look_passes_has_no_unusable_part(pieces):
    raw = "".join(pieces).encode("latin-1")
    if _urlencoded_clean(raw):
        assert _urlencoded_problem(raw, "form field") is None
        # and what Django decodes from it (UTF-8, errors replaced) holds nothing unusable either
        for name, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True, encoding="utf-8",
                                     errors="replace"):
            assert text_problem(name) is None and text_problem(value) is None
    if _urlencoded_problem(raw, "form field") is not None:
        assert not _urlencoded_clean(raw)


def test_the_quick_look_sees_a_nul_and_a_surrogate_anywhere():
    assert _urlencoded_clean(b"position=1&highlights=%5B%7B%22start%22%3A0%7D%5D&chosen_option=2")
    assert not _urlencoded_clean(b"a=1&b=x%00y")
    assert not _urlencoded_clean(b"a%ED%A0%80=1")
    assert not _urlencoded_clean(b"a=1;b=%ed%bf%bf")
    assert _urlencoded_clean(b"a=%E4%BD%A0%E5%A5%BD&b=%FF")  # Chinese, and a byte Django replaces
