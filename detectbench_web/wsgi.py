import functools
import os

from django.core.wsgi import get_wsgi_application
from django.utils.http import parse_header_parameters

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "detectbench_web.settings.base")
django_application = get_wsgi_application()

#: A request may name UTF-8 or ASCII as its charset (foundation.request_text answers any other with the site's 415
#: page), but Django decodes the query and the form with it while it builds the request, before any middleware: one
#: that is no text codec (hex_codec, undefined) or that cannot read ASCII (punycode, utf-16) raised there, and the
#: server answered a bare 500. Such a request is answered here; an ASCII-compatible one goes on to that 415 page.
_REFUSED = b"415 Unsupported Media Type: send UTF-8.\n"
_ASCII, _BYTES = bytes(range(128)), bytes(range(256))


@functools.lru_cache(maxsize=64)
def _readable(charset: str) -> bool:
    """Whether Django can decode a request's text with this charset: ASCII read as ASCII, any byte without raising."""
    try:
        return _ASCII.decode(charset) == _ASCII.decode("ascii") and isinstance(_BYTES.decode(charset, "replace"), str)
    except (LookupError, UnicodeError, ValueError, TypeError):
        return False


def application(environ, start_response):
    content_type = environ.get("CONTENT_TYPE", "")
    if "charset" in content_type.lower():
        charset = parse_header_parameters(content_type)[1].get("charset", "")
        if charset and not _readable(charset):
            start_response("415 Unsupported Media Type", [("Content-Type", "text/plain; charset=utf-8"),
                                                          ("Content-Length", str(len(_REFUSED)))])
            return [_REFUSED]
    return django_application(environ, start_response)
