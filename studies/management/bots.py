"""Study bots: drive a running server over real HTTP exactly as a participant's browser would.

join (GET the public link, POST consent) -> Start -> for each question: load the page, select
a passage of the story as a highlight, pick an option, submit with htmx headers -> completion
page. Used by `manage.py run_study_bots` (rehearsal, load tests) and by the tests.

No Django import: a bot knows only what a browser knows. It speaks HTTP/1.1 with the standard
library (keep-alive, cookies, redirects) rather than a client library: in load tests the bots share
the machine with the server, and every millisecond of client CPU is taken from the server. To answer with a given accuracy it
can be given an `oracle(token, position) -> correct option index` (the management command
reads it from the database; nothing on the pages reveals it).
"""
from __future__ import annotations

import html
import http.client
import json
import random
import re
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urljoin, urlsplit

Oracle = Callable[[str, int], "int | None"]

_POSITION_RE = re.compile(r'<div id="question" data-attempt="([^"]+)" data-position="(\d+)"')
_CONTEXT_RE = re.compile(r'<div class="context" id="context" data-context[^>]*>(.*?)</div>', re.S)
_OPTION_RE = re.compile(r'name="chosen_option" value="(\d+)"')
_CODE_RE = re.compile(r'id="completion-code">([^<]*)<')
_SECONDS_RE = re.compile(r'data-seconds-left="(\d+)"')
_SENTENCE_RE = re.compile(r"[^.!?\n]+[.!?]?")
_CONSENT_FORM_RE = re.compile(r'<form method="post" action="[^"]*/join/">(.*?)</form>', re.S)
_HIDDEN_RE = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
_TOKEN_RE = re.compile(r'<meta name="page-address" content="[^"]*/s/a/([^/"]+)/"')


@dataclass
class BotResult:
    participant_id: str
    outcome: str = "error"       # complete | full | stopped | refused | closed | error
    token: str = ""
    answered: int = 0
    completion_code: str = ""
    http_status: int | None = None
    message: str = ""
    released: bool = False       # an attempt left unfinished was returned ("Stop and leave the study")
    acknowledged: list[int] = field(default_factory=list)   # positions whose answer the server accepted
    server_errors: dict[int, int] = field(default_factory=lambda: defaultdict(int))   # 5xx status -> times seen
    connection_errors: int = 0   # requests sent again because the server closed or refused the connection
    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class Page:
    """What the bot got back (after following redirects)."""

    status_code: int
    url: str
    headers: dict[str, str]
    text: str


#: How often a request is sent on a new connection when the server closed or refused the previous one.
CONNECTION_TRIES = 4


class Browser:
    """A minimal browser for one participant: one keep-alive connection, a cookie jar, GET after redirects."""

    def __init__(self, base_url: str, timeout: float):
        parts = urlsplit(base_url)
        self.base_url, self.host, self.port = base_url, parts.hostname, parts.port or 80
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self.connection: http.client.HTTPConnection | None = None
        self.connection_errors = 0  # connections the server closed or refused before it answered

    def request(self, method: str, url: str, data: dict | None = None, headers: dict | None = None) -> Page:
        body = urlencode(data).encode() if data is not None else None
        for _ in range(10):  # redirects
            page = self._send(method, url, body, headers or {})
            if page.status_code not in (301, 302, 303, 307, 308) or "location" not in page.headers:
                return page
            url = urljoin(page.url, page.headers["location"])
            if page.status_code in (301, 302, 303):
                method, body, headers = "GET", None, {}
        raise RuntimeError("too many redirects")

    def _send(self, method: str, url: str, body: bytes | None, headers: dict) -> Page:
        path = urlsplit(urljoin(self.base_url + "/", url))
        target = path.path + (f"?{path.query}" if path.query else "")
        all_headers = {"Accept": "text/html", **headers}
        if self.cookies:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if body is not None:
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        for attempt in range(1, CONNECTION_TRIES + 1):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.connection.request(method, target, body=body, headers=all_headers)
                response = self.connection.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionRefusedError):
                # The server closed an idle keep-alive connection, or its listen queue was full: open a new
                # one and send again, after a moment (as a browser does); counted, and raised in the end.
                self.close()
                self.connection_errors += 1
                if attempt == CONNECTION_TRIES:
                    raise
                time.sleep(0.2 * (attempt - 1))
        received = {}
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                for morsel in SimpleCookie(value).values():
                    if morsel["max-age"] == "0":
                        self.cookies.pop(morsel.key, None)
                    else:
                        self.cookies[morsel.key] = morsel.value
            else:
                received[name.lower()] = value
        if response.will_close:
            self.close()
        charset = response.headers.get_content_charset() or "utf-8"
        return Page(response.status, self.base_url + target, received, payload.decode(charset, "replace"))

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


@dataclass
class QuestionPage:
    token: str
    position: int
    context: str
    n_options: int
    seconds_left: int


def parse_question(page: str) -> QuestionPage | None:
    pos, ctx = _POSITION_RE.search(page), _CONTEXT_RE.search(page)
    if not pos or not ctx:
        return None
    seconds = _SECONDS_RE.search(page)
    return QuestionPage(pos.group(1), int(pos.group(2)), html.unescape(ctx.group(1)),
                        len(_OPTION_RE.findall(page)), int(seconds.group(1)) if seconds else 0)


def consent_fields(page: str) -> dict[str, str]:
    """The hidden fields of the consent form on a landing page ({} when it has none): what a browser sends."""
    form = _CONSENT_FORM_RE.search(page)
    return {name: html.unescape(value) for name, value in _HIDDEN_RE.findall(form.group(1))} if form else {}


def pick_highlight(context: str, rng: random.Random) -> list[dict]:
    """One sentence of the story, as a browser selection would give it (offsets + text)."""
    sentences = [(m.start(), m.end()) for m in _SENTENCE_RE.finditer(context) if m.group().strip()]
    if not sentences:
        return []
    start, end = rng.choice(sentences)
    while start < end and context[start].isspace():
        start += 1
    while end > start and context[end - 1].isspace():
        end -= 1
    return [{"start": start, "end": end, "text": context[start:end]}] if end > start else []


class StudyBot:
    """One simulated participant (own cookie jar, CSRF token from the cookie like htmx's hx-headers)."""

    def __init__(self, base_url: str, slug: str, participant_id: str, *, accuracy: float | None = None,
                 oracle: Oracle | None = None, stop_after: int | None = None, seed: int = 0,
                 barrier: threading.Barrier | None = None, reload_each_question: bool = True,
                 think: tuple[float, float] | None = None, timeout: float = 60.0, consent_form: bool = True):
        self.base_url, self.slug, self.participant_id = base_url.rstrip("/"), slug, participant_id
        self.accuracy, self.oracle, self.stop_after = accuracy, oracle, stop_after
        self.rng = random.Random(f"{seed}:{participant_id}")
        self.barrier, self.reload_each_question = barrier, reload_each_question
        # Reading time before each answer (a participant reads a ~190-word story); its own seeded
        # stream, so that the answers chosen do not depend on whether bots think.
        self.think, self.think_rng = think, random.Random(f"think:{seed}:{participant_id}")
        self.client = Browser(self.base_url, timeout)
        self.result = BotResult(participant_id)
        self.consent_form = consent_form  # False: consent sent as a script builds it (only the ids), redirected

    # -- HTTP helpers
    def _timed(self, kind: str, method: str, url: str, **kwargs) -> Page:
        for retry in range(RETRIES_503 + 1):
            began = time.perf_counter()
            response = self.client.request(method, url, **kwargs)
            self.result.timings[kind].append(time.perf_counter() - began)
            self.result.http_status = response.status_code
            if response.status_code >= 500:
                self.result.server_errors[response.status_code] += 1
            # "Please try again" (the server kept the participant's place): a person waits a moment and does.
            if response.status_code != 503 or retry == RETRIES_503:
                return response
            time.sleep(min(2.0, 0.3 * (retry + 1)))
        return response

    def _csrf(self) -> str:
        return self.client.cookies.get("csrftoken", "")

    def _post(self, kind: str, url: str, data: dict, htmx: bool = False) -> Page:
        headers = {"X-CSRFToken": self._csrf()}
        if htmx:
            headers.update({"HX-Request": "true", "HX-Current-URL": self.base_url + url})
        return self._timed(kind, "POST", url, data={"csrfmiddlewaretoken": self._csrf(), **data}, headers=headers)

    # -- the participant
    def run(self) -> BotResult:
        try:
            self._run()
        except Exception as error:  # noqa: BLE001 - a bot reports, it does not crash the swarm
            self.result.outcome, self.result.message = "error", f"{type(error).__name__}: {error}"
        finally:
            self.result.connection_errors = self.client.connection_errors
            self.client.close()
        return self.result

    def _run(self) -> None:
        r = self.result
        query = urlencode({"PROLIFIC_PID": self.participant_id, "STUDY_ID": f"bots-{self.slug}",
                           "SESSION_ID": f"s-{self.participant_id}"})
        page = self._timed("landing", "GET", f"/s/{self.slug}/?{query}")
        if self._ended(page):
            return
        # The consent form as the page has it (its hidden fields, as a browser sends them) with the box ticked: its
        # answer is the attempt's page, which names the attempt's address (a POST without the form's fields is
        # redirected there instead, and the address is the page's URL).
        page = self._post("join", f"/s/{self.slug}/join/", {
            "PROLIFIC_PID": self.participant_id, "STUDY_ID": f"bots-{self.slug}",
            "SESSION_ID": f"s-{self.participant_id}", **(consent_fields(page.text) if self.consent_form else {}),
            "consent": "yes"})
        match = _TOKEN_RE.search(page.text) or re.search(r"/s/a/([^/]+)/", str(page.url))
        r.token = match.group(1) if match else ""
        if self._ended(page):
            return
        if not r.token:
            r.outcome, r.message = "error", f"joining led to no attempt: HTTP {page.status_code} {page.url}"
            return
        if self.barrier is not None:
            self.barrier.wait(timeout=120)
        page = self._post("start", f"/s/a/{r.token}/start/", {})
        while True:
            if self._ended(page):
                return
            question = parse_question(page.text)
            if question is None:
                r.outcome, r.message = "error", f"unexpected page {page.status_code} {page.url}"
                return
            if self.stop_after is not None and r.answered >= self.stop_after:
                r.outcome = "stopped"
                return
            if self.think is not None:
                time.sleep(self.think_rng.uniform(*self.think))
            page = self._answer(question)
            if page.status_code == 204 and page.headers.get("hx-redirect"):
                page = self._timed("question", "GET", page.headers["hx-redirect"])
            elif page.status_code == 200 and self.reload_each_question:
                page = self._timed("question", "GET", f"/s/a/{r.token}/")

    def _answer(self, question: QuestionPage) -> Page:
        correct = self.oracle(question.token, question.position) if self.oracle else None
        if correct is not None and self.accuracy is not None:
            if self.rng.random() < self.accuracy or question.n_options < 2:
                choice = correct
            else:
                choice = self.rng.choice([i for i in range(question.n_options) if i != correct])
        else:
            choice = self.rng.randrange(max(1, question.n_options))
        response = self._post("answer", f"/s/a/{question.token}/answer/", {
            "position": str(question.position), "chosen_option": str(choice),
            "confidence": str(self.rng.randint(1, 5)),
            "highlights": json.dumps(pick_highlight(question.context, self.rng)),
        }, htmx=True)
        if response.status_code in (200, 204):
            self.result.answered += 1
            self.result.acknowledged.append(question.position)
        return response

    def release(self) -> bool:
        """Return the attempt this bot leaves unfinished, as its participant would ("Stop and leave the study"),
        so that its items go back to the pool now instead of at its deadline. True when the attempt has ended."""
        r = self.result
        if not r.token:
            return False
        try:
            page = self._post("return", f"/s/a/{r.token}/return/", {})
        except Exception as error:  # noqa: BLE001 - reported, like every failure of a bot
            r.message = f"{r.message}; not returned: {type(error).__name__}: {error}".lstrip("; ")
            return False
        finally:
            self.client.close()
        r.released = page.status_code == 200 and ('id="ended"' in page.text or 'id="complete"' in page.text)
        if not r.released:
            r.message = f"{r.message}; not returned: HTTP {page.status_code}".lstrip("; ")
        return r.released

    def _ended(self, page: Page) -> bool:
        r, text = self.result, page.text
        if 'id="study-full"' in text:
            r.outcome = "full"
        elif 'id="complete"' in text:
            r.outcome = "complete"
            code = _CODE_RE.search(text)
            r.completion_code = html.unescape(code.group(1)) if code else ""
        elif 'id="ended"' in text or 'id="study-closed"' in text:
            r.outcome = "closed"
        elif "data-refused=" in text:
            r.outcome, r.message = "refused", f"HTTP {page.status_code}"
        elif page.status_code >= 400:
            r.outcome, r.message = "error", f"HTTP {page.status_code} {page.url}"
        else:
            return False
        return True


#: Outcomes that may leave an attempt running (holding its items until its deadline).
UNFINISHED = ("error", "stopped", "refused")
#: How often a bot reloads after "please try again" (503) before it counts the request as failed.
RETRIES_503 = 10


def run_bots(base_url: str, slug: str, participants: int, *, concurrency: int = 10, accuracy: float | None = None,
             oracle: Oracle | None = None, seed: int = 0, id_prefix: str = "bot", start_together: bool = False,
             stop_after: int | None = None, reload_each_question: bool = True,
             think: tuple[float, float] | None = None, release_unfinished: bool = False,
             on_bot_done: Callable[[], None] | None = None) -> list[BotResult]:
    """Run `participants` bots, `concurrency` at a time; with start_together they press Start at the same instant.

    `think=(low, high)`: each bot waits a uniform random time in that range (seconds) before each answer.
    `release_unfinished`: a bot that ends without finishing (error, stop_after, refused) returns its attempt.
    `on_bot_done` runs in the bot's thread when it is done (the command closes the thread's database connection).
    """
    barrier = threading.Barrier(participants) if start_together else None
    if start_together:
        concurrency = participants

    def one(i: int) -> BotResult:
        bot = StudyBot(base_url, slug, f"{id_prefix}-{i:04d}", accuracy=accuracy, oracle=oracle, seed=seed,
                       barrier=barrier, stop_after=stop_after, reload_each_question=reload_each_question,
                       think=think)
        try:
            result = bot.run()
            if release_unfinished and result.outcome in UNFINISHED:
                bot.release()
            return result
        finally:
            if on_bot_done is not None:
                on_bot_done()

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, range(participants)))


def summarize(results: list[BotResult]) -> dict:
    """Outcome counts and latency percentiles (ms) per request kind."""
    outcomes: dict[str, int] = defaultdict(int)
    samples: dict[str, list[float]] = defaultdict(list)
    for r in results:
        outcomes[r.outcome] += 1
        for kind, values in r.timings.items():
            samples[kind].extend(values)
    latency = {}
    for kind, values in samples.items():
        values = sorted(values)
        latency[kind] = {
            "n": len(values),
            "p50_ms": round(statistics.median(values) * 1000, 1),
            "p95_ms": round(values[min(len(values) - 1, int(0.95 * len(values)))] * 1000, 1),
            "max_ms": round(values[-1] * 1000, 1),
        }
    unfinished = [{"participant_id": r.participant_id, "outcome": r.outcome, "answered": r.answered,
                   "released": r.released, "message": r.message}
                  for r in results if r.outcome in UNFINISHED and r.token]
    server_errors: dict[int, int] = defaultdict(int)
    for r in results:
        for code, n in r.server_errors.items():
            server_errors[code] += n
    return {"outcomes": dict(outcomes), "latency": latency, "unfinished": unfinished,
            "released": sum(u["released"] for u in unfinished), "server_errors": dict(server_errors),
            "connection_errors": sum(r.connection_errors for r in results)}
