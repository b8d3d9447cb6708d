"""Run by tests/perf/test_request_instructions.py under valgrind's callgrind: participants' requests through the WSGI
application, in this one process, as a gunicorn worker of the image serves them (the app, the views and the question's
templates loaded first, the start-up objects frozen, the young generation collected less often), with callgrind
counting only the measured participants' requests.

Usage: request_instructions_client.py STUDY_SLUG PARTICIPANTS TOGGLE_LIBRARY [answer]
("answer": each participant also answers the first question, as htmx does: the difference is an answer's count)
"""
from __future__ import annotations

import ctypes
import io
import re
import sys
from http.cookies import SimpleCookie
from urllib.parse import urlencode

from django.urls import get_resolver

from detectbench_web.wsgi import application
from foundation.process_start import collect_young_less_often, freeze_startup_objects
from studies.page_templates import load_templates

WARM_UP = 10


def _call(method: str, path: str, cookies: dict, query: str = "", form: dict | None = None,
          htmx: bool = False) -> tuple[str, dict, bytes]:
    body = urlencode(form).encode() if form else b""
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1",
        "HTTP_USER_AGENT": "request-instructions", "HTTP_ACCEPT_LANGUAGE": "en", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    if form:
        environ.update(CONTENT_TYPE="application/x-www-form-urlencoded", HTTP_X_CSRFTOKEN=cookies["csrftoken"])
    if htmx:
        environ["HTTP_HX_REQUEST"] = "true"
    if cookies:
        environ["HTTP_COOKIE"] = "; ".join(f"{name}={value}" for name, value in cookies.items())
    answer: dict = {}
    chunks = application(environ, lambda status, headers, exc_info=None: answer.update(status=status, headers=headers))
    content = b"".join(chunks)
    chunks.close()
    for name, value in answer["headers"]:
        if name.lower() == "set-cookie":
            cookie = SimpleCookie()
            cookie.load(value)
            cookies.update({key: morsel.value for key, morsel in cookie.items()})
    return answer["status"], dict(answer["headers"]), content


def participant(slug: str, pid: str, answer: bool = False) -> None:
    """The link, consent (joining), the attempt's page and Start, which answers with the first question; with
    `answer`, that question's answer too (htmx: the next question's card comes back)."""
    cookies: dict = {}
    external = {"PROLIFIC_PID": pid, "STUDY_ID": "instructions", "SESSION_ID": f"s-{pid}"}
    status, _, _ = _call("GET", f"/s/{slug}/", cookies, query=urlencode(external))
    assert status.startswith("200"), status
    status, headers, _ = _call("POST", f"/s/{slug}/join/", cookies,
                               form={"consent": "yes", **external, "csrfmiddlewaretoken": cookies["csrftoken"]})
    assert status.startswith("302"), status
    status, _, _ = _call("GET", headers["Location"], cookies)
    assert status.startswith("200"), status
    token = re.search(r"/s/a/([^/]+)/", headers["Location"]).group(1)
    status, _, page = _call("POST", f"/s/a/{token}/start/", cookies, form={"csrfmiddlewaretoken": cookies["csrftoken"]})
    assert status.startswith("200") and b'name="chosen_option"' in page, status
    if answer:
        status, _, card = _call("POST", f"/s/a/{token}/answer/", cookies, htmx=True,
                                form={"position": 0, "chosen_option": 1, "highlights": "[]",
                                      "csrfmiddlewaretoken": cookies["csrftoken"]})
        assert status.startswith("200") and b'data-position="1"' in card, status


def main() -> None:
    slug, participants, library = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    answer = sys.argv[4:] == ["answer"]
    assert get_resolver().url_patterns  # as the image's gunicorn: views imported, templates compiled, then frozen
    load_templates()
    freeze_startup_objects()
    collect_young_less_often()
    for i in range(WARM_UP):
        participant(slug, f"{'answering' if answer else 'joining'}-warm-{i}", answer)
    callgrind = ctypes.CDLL(library)
    callgrind.measure_start()
    for i in range(participants):
        participant(slug, f"{'answering' if answer else 'joining'}-measured-{i}", answer)
    callgrind.measure_stop()


if __name__ == "__main__":
    main()
