"""A stand-in Prolific API for tests: a real HTTP server on 127.0.0.1 (http.server in a thread) with its own state.

It keeps studies, submissions, bulk bonus payments and the individual payments made, answers the calls the app
makes (`studies.prolific.client`) as Prolific documents them, and signs and delivers webhooks to the app as
Prolific does: base64(HMAC-SHA256(secret, timestamp + body)) in `X-Prolific-Request-Signature`, the sending time
in `X-Prolific-Request-Timestamp`, the event's id in `X-Event-ID` (the same on every re-delivery) and its time in
`X-Timestamp`. The signing is written here again, on purpose, rather than borrowed from the app.

Told to misbehave: `fail_next(n, status)` answers the next n API calls with `status`; `hang_s` delays every
answer; `pay_then_hang_s` makes the pay call record the payment and then not answer for that long (the answer
is lost, as when the sender crashes after Prolific paid); deliveries can be repeated, reordered, delayed.

Screen-outs: `POST /api/v1/studies/<id>/screen-out-submissions/` ({"submission_ids": [...], "increase_places"})
screens out ACTIVE or AWAITING REVIEW submissions of the study (recorded in `state.screen_outs`, places given back
when asked); any other submission refuses the whole call (400), so a second screen-out of one submission is refused.

Beyond Prolific's documented API: `GET /api/v1/bulk-bonus-payments/?study_id=&reference=` lists the bulk payments
set up with the app's key (`reference`), with their status (SET_UP or PAID).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx


@dataclass
class Event:
    event_id: str
    payload: dict
    event_time: float


@dataclass
class State:
    studies: dict = field(default_factory=dict)       # id -> {"id", "name", "status", "total_available_places"}
    submissions: dict = field(default_factory=dict)   # id -> {"id", "study_id", "participant_id", "status"}
    bulk: dict = field(default_factory=dict)          # id -> {"id", "study_id", "reference", "rows", "status"}
    payments: list = field(default_factory=list)      # (participant_id, Decimal amount, bulk id), one per pay
    transitions: list = field(default_factory=list)   # (submission id, action, message)
    screen_outs: list = field(default_factory=list)   # (submission id, increase_places), one per submission screened out
    requests: list = field(default_factory=list)      # (method, path)


class ProlificStandIn:
    def __init__(self, *, token: str, webhook_secret: str, webhook_url: str = ""):
        self.token, self.secret, self.webhook_url = token, webhook_secret, webhook_url
        self.state = State()
        self.lock = threading.Lock()
        self.hang_s = 0.0
        self.pay_then_hang_s = 0.0
        self._fail: list[int] = []
        self._server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ life
    def __enter__(self) -> ProlificStandIn:
        stand_in = self

        class Handler(_Handler):
            server_state = stand_in

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_next(self, n: int, status: int = 503) -> None:
        with self.lock:
            self._fail.extend([status] * n)

    # ------------------------------------------------------------------ Prolific's side of a study
    def add_study(self, study_id: str, *, places: int, name: str = "A study") -> None:
        self.state.studies[study_id] = {"id": study_id, "name": name, "status": "ACTIVE",
                                        "total_available_places": places}

    def add_submission(self, study_id: str, participant_id: str) -> str:
        submission_id = uuid.uuid4().hex[:24]
        self.state.submissions[submission_id] = {"id": submission_id, "study_id": study_id,
                                                 "participant_id": participant_id, "status": "ACTIVE"}
        return submission_id

    def set_status(self, submission_id: str, status: str) -> Event:
        """Change a submission's status; returns the webhook event it raises (deliver it with `deliver`)."""
        submission = self.state.submissions[submission_id]
        submission["status"] = status
        time.sleep(0.002)  # distinct event times, as events of one submission never share a clock tick here
        return Event(event_id=str(uuid.uuid4()), event_time=time.time(), payload={
            "resource_id": submission_id, "event_type": "submission.status.change",
            "participant_id": submission["participant_id"], "status": status, "study_id": submission["study_id"]})

    def paid_per_participant(self, study_id: str) -> Counter:
        bulk_study = {b["id"]: b["study_id"] for b in self.state.bulk.values()}
        return Counter(pid for pid, _, bulk_id in self.state.payments if bulk_study[bulk_id] == study_id)

    # ------------------------------------------------------------------ webhooks
    def signed(self, event: Event, *, sent_at: float | None = None, secret: str | None = None) -> tuple[bytes, dict]:
        body = json.dumps(event.payload).encode()
        timestamp = str(int(sent_at if sent_at is not None else time.time()))
        digest = hmac.new((secret if secret is not None else self.secret).encode(), timestamp.encode() + body,
                          hashlib.sha256).digest()
        return body, {"Content-Type": "application/json", "X-Prolific-Request-Signature": base64.b64encode(digest).decode(),
                      "X-Prolific-Request-Timestamp": timestamp, "X-Event-ID": event.event_id,
                      "X-Timestamp": f"{event.event_time:.6f}"}

    def deliver(self, events: list[Event], *, repeat: int = 1, reverse: bool = False, delay_s: float = 0.0,
                secret: str | None = None, sent_at: float | None = None) -> list[tuple[Event, int, float]]:
        """POST each event (`repeat` times each, in reverse order if asked) to the app, signed at sending time;
        returns (event, HTTP status, seconds the app took) per delivery. Re-delivers once on a 5xx, as Prolific."""
        order = list(reversed(events)) if reverse else list(events)
        answers = []
        with httpx.Client(timeout=10) as http:
            for event in order:
                for _ in range(repeat):
                    for _try in range(2):
                        body, headers = self.signed(event, secret=secret, sent_at=sent_at)
                        started = time.monotonic()
                        status = http.post(self.webhook_url, content=body, headers=headers).status_code
                        answers.append((event, status, time.monotonic() - started))
                        if status < 500:
                            break
                    if delay_s:
                        time.sleep(delay_s)
        return answers


class _Handler(BaseHTTPRequestHandler):
    server_state: ProlificStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _answer(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        me = self.server_state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with me.lock:
            me.state.requests.append((method, url.path))
            fail = me._fail.pop(0) if me._fail else None
        if me.hang_s:
            time.sleep(me.hang_s)
        if fail:
            return self._answer(fail, {"error": "injected failure"})
        if self.headers.get("Authorization") != f"Token {me.token}":
            return self._answer(401, {"error": {"detail": "Invalid token."}})
        body = json.loads(raw) if raw else {}
        with me.lock:
            status, answer, hang = self._route(method, parts, query, body)
        if hang:
            time.sleep(hang)
        self._answer(status, answer)

    def _route(self, method, parts, query, body):
        me, state = self.server_state, self.server_state.state
        if parts[:2] != ["api", "v1"] or len(parts) < 3:
            return 404, {"error": "not found"}, 0
        rest = parts[2:]
        if method == "GET" and rest[0] == "studies" and len(rest) == 2:
            study = state.studies.get(rest[1])
            return (200, study, 0) if study else (404, {"error": "No such study."}, 0)
        if method == "GET" and rest[0] == "studies" and rest[2:] == ["submissions"]:
            return 200, {"results": [s for s in state.submissions.values() if s["study_id"] == rest[1]]}, 0
        if method == "POST" and rest[0] == "submissions" and rest[2:] == ["transition"]:
            submission = state.submissions.get(rest[1])
            if submission is None:
                return 404, {"error": "No such submission."}, 0
            action = body.get("action")
            if submission["status"] != "AWAITING REVIEW":
                return 400, {"error": f"Cannot {action} a submission that is {submission['status']}."}, 0
            if action == "REJECT" and (len(body.get("message", "")) < 100 or not body.get("rejection_category")):
                return 400, {"error": "A rejection needs a message of 100 characters and a category."}, 0
            submission["status"] = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[action]
            state.transitions.append((rest[1], action, body.get("message", "")))
            return 200, submission, 0
        if method == "POST" and rest[0] == "studies" and rest[2:] == ["screen-out-submissions"]:
            ids = list(body.get("submission_ids") or [])
            chosen = [state.submissions.get(i) for i in ids]
            if not ids or any(s is None or s["study_id"] != rest[1] for s in chosen):
                return 400, {"error": "Every submission must be one of the study's."}, 0
            stuck = [s["id"] for s in chosen if s["status"] not in ("ACTIVE", "AWAITING REVIEW")]
            if stuck:
                return 400, {"error": f"Submissions {stuck} cannot be screened out."}, 0
            for submission in chosen:
                submission["status"] = "SCREENED-OUT"
                state.screen_outs.append((submission["id"], bool(body.get("increase_places"))))
            if body.get("increase_places") and rest[1] in state.studies:
                state.studies[rest[1]]["total_available_places"] += len(chosen)
            return 200, {"screened_out": ids}, 0
        if method == "POST" and rest == ["submissions", "bonus-payments"]:
            study_id = body.get("study_id")
            rows = []
            for line in body.get("csv_bonuses", "").splitlines():
                pid, amount = line.split(",")
                if not any(s["participant_id"] == pid and s["study_id"] == study_id
                           for s in state.submissions.values()):
                    return 400, {"error": f"Participant {pid} did not take part in study {study_id}."}, 0
                rows.append((pid, Decimal(amount)))
            bulk_id = uuid.uuid4().hex[:24]
            state.bulk[bulk_id] = {"id": bulk_id, "study_id": study_id, "reference": body.get("reference", ""),
                                   "rows": rows, "status": "SET_UP"}
            total = sum((a for _, a in rows), Decimal(0))
            return 201, {"id": bulk_id, "study": study_id, "amount": float(total * 100),
                         "total_amount": float(total * 100)}, 0
        if method == "POST" and rest[0] == "bulk-bonus-payments" and rest[2:] == ["pay"]:
            bulk = state.bulk.get(rest[1])
            if bulk is None:
                return 404, {"error": "No such bulk bonus payment."}, 0
            # Not idempotent, as at Prolific: every call pays every row again.
            state.payments.extend((pid, amount, bulk["id"]) for pid, amount in bulk["rows"])
            bulk["status"] = "PAID"
            return 202, {}, me.pay_then_hang_s
        if method == "GET" and rest == ["bulk-bonus-payments"]:
            found = [{"id": b["id"], "status": b["status"], "reference": b["reference"]} for b in state.bulk.values()
                     if b["reference"] == query.get("reference") and b["study_id"] == query.get("study_id")]
            return 200, {"results": found}, 0
        return 404, {"error": "not found"}, 0
