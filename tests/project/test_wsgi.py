"""detectbench_web.wsgi: a request naming a charset Django cannot read ASCII with is a 415 before Django builds it
(Django raised while decoding the query with it, and the server answered a bare 500); every other request is
Django's."""
from __future__ import annotations

import codecs
import encodings
import io
import pkgutil
import sys

import pytest

from detectbench_web.wsgi import application


def _call(content_type: str, query: str = "a=1") -> tuple[str, bytes]:
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/accounts/login/", "QUERY_STRING": query, "SCRIPT_NAME": "",
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
               "HTTP_HOST": "testserver", "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http",
               "wsgi.input": io.BytesIO(b""), "CONTENT_LENGTH": "0", "CONTENT_TYPE": content_type,
               "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": False,
               "wsgi.multiprocess": True, "wsgi.run_once": False}
    answer = {}
    body = b"".join(application(environ, lambda status, headers, exc_info=None: answer.update(status=status)))
    return answer["status"], body


def _codecs() -> list[str]:
    names = sorted({module.name for module in pkgutil.iter_modules(encodings.__path__)} - {"aliases"})
    return [name for name in names if name not in ("mbcs", "oem", "cp65001")]  # Windows only


@pytest.mark.django_db
@pytest.mark.parametrize("charset", _codecs())
def test_every_codec_named_as_a_charset_is_answered_never_raised(charset):
    """Every codec Python has, named in the Content-Type of a request with a query: an answer, never an exception
    (the server's bare 500); one that cannot read ASCII is the 415 from here, the others reach the site (its own 415
    page for any but UTF-8 and ASCII)."""
    try:
        codecs.lookup(charset)
    except LookupError:
        pytest.skip(f"{charset} is not a codec on this platform")
    status, body = _call(f"text/plain; charset={charset}")
    code = int(status.split()[0])
    assert code < 500, (charset, status, body[:200])
    readable = False  # ASCII read as ASCII, and any byte decoded (with replacement) without raising
    try:
        readable = (bytes(range(128)).decode(charset) == bytes(range(128)).decode("ascii")
                    and isinstance(bytes(range(256)).decode(charset, "replace"), str))
    except (LookupError, UnicodeError, ValueError, TypeError):
        pass
    assert body.startswith(b"415 Unsupported") != readable, (charset, status, body[:100])


@pytest.mark.django_db
def test_a_request_without_a_charset_or_with_utf_8_is_the_sites():
    for content_type in ("", "text/plain", "application/json; charset=utf-8", 'text/plain; charset="UTF-8"'):
        status, body = _call(content_type, query="")
        assert status.startswith("200") and b"<html" in body.lower(), (content_type, status)
