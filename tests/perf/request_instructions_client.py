"""Run by tests/perf/test_request_instructions.py under valgrind's callgrind: participants' requests through the WSGI
application, in this one process, as a gunicorn worker of the image serves them (the app, the views and the question's
templates loaded first, the start-up objects frozen, the young generation collected less often), with callgrind
counting only the measured participants' requests, step by step.

Usage: request_instructions_client.py STUDY_SLUG PARTICIPANTS TOGGLE_LIBRARY
Each step (the link, joining as the page's form does, Start, the first answer; joining as a script does and the
attempt's page it is redirected to) is counted on its own, over all the measured participants: callgrind writes one
dump per step, in the order of STEPS.
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


STEPS = ("landing", "join", "start", "answer", "scripted_join", "scripted_page")


class Participant:
    """One participant's requests, a step at a time: the link, consent as the page's form sends it (answered with the
    attempt's page), Start (answered with the first question) and that question's answer, as htmx sends it (the
    next question's card back). A scripted participant sends the consent without the form's field instead (answered
    with a redirect) and then gets the attempt's page."""

    def __init__(self, slug: str, pid: str):
        self.slug, self.cookies, self.location, self.token = slug, {}, "", ""
        self.external = {"PROLIFIC_PID": pid, "STUDY_ID": "instructions", "SESSION_ID": f"s-{pid}"}

    def landing(self) -> None:
        status, _, _ = _call("GET", f"/s/{self.slug}/", self.cookies, query=urlencode(self.external))
        assert status.startswith("200"), status

    def join(self) -> None:
        status, _, page = _call("POST", f"/s/{self.slug}/join/", self.cookies, form={
            "consent": "yes", **self.external, "language": "", "answer_with": "page",
            "csrfmiddlewaretoken": self.cookies["csrftoken"]})
        assert status.startswith("200") and b'id="start"' in page, status
        self.token = re.search(rb'<meta name="page-address" content="/s/a/([^/]+)/"', page).group(1).decode()

    def scripted_join(self) -> None:
        status, headers, _ = _call("POST", f"/s/{self.slug}/join/", self.cookies, form={
            "consent": "yes", **self.external, "csrfmiddlewaretoken": self.cookies["csrftoken"]})
        assert status.startswith("302"), status
        self.location = headers["Location"]
        self.token = re.search(r"/s/a/([^/]+)/", self.location).group(1)

    def scripted_page(self) -> None:
        status, _, page = _call("GET", self.location, self.cookies)
        assert status.startswith("200") and b'id="start"' in page, status

    def start(self) -> None:
        status, _, page = _call("POST", f"/s/a/{self.token}/start/", self.cookies,
                                form={"csrfmiddlewaretoken": self.cookies["csrftoken"]})
        assert status.startswith("200") and b'name="chosen_option"' in page, status

    def answer(self) -> None:
        status, _, card = _call("POST", f"/s/a/{self.token}/answer/", self.cookies, htmx=True,
                                form={"position": 0, "chosen_option": 1, "highlights": "[]",
                                      "csrfmiddlewaretoken": self.cookies["csrftoken"]})
        assert status.startswith("200") and b'data-position="1"' in card, status


def main() -> None:
    slug, participants, library = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    assert get_resolver().url_patterns  # as the image's gunicorn: views imported, templates compiled, then frozen
    load_templates()
    freeze_startup_objects()
    collect_young_less_often()
    for i in range(WARM_UP):  # every step of every warm-up participant, one participant after another
        warm, scripted = Participant(slug, f"warm-{i}"), Participant(slug, f"warm-scripted-{i}")
        for step in STEPS:
            if step.startswith("scripted_"):
                if step == "scripted_join":
                    scripted.landing()
                getattr(scripted, step)()
            else:
                getattr(warm, step)()
    callgrind = ctypes.CDLL(library)
    measured = [Participant(slug, f"measured-{i}") for i in range(participants)]
    scripts = [Participant(slug, f"scripted-{i}") for i in range(participants)]
    for step in STEPS:  # one count (callgrind dump) per step, over all the measured participants
        if step == "scripted_join":
            for participant in scripts:  # not counted: the same as a browser's
                participant.landing()
        group = scripts if step.startswith("scripted_") else measured
        callgrind.measure_start()
        for participant in group:
            getattr(participant, step)()
        callgrind.measure_stop()


if __name__ == "__main__":
    main()
