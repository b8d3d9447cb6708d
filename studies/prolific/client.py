"""Prolific's HTTP API (https://api.prolific.com/api/v1/...), the calls the app makes. Pure: httpx, no Django.

Authentication is `Authorization: Token <token>`; the token is given by the caller (the services read it from the
environment variable a study's connection names) and never stored or logged here.

Failures are the project's errors: `ProlificRefused` (a 4xx, with Prolific's answer), `ProlificUnavailable` (no
answer, a time-out or a 5xx). `ProlificUnavailable.maybe_sent` says whether the request may have reached Prolific
(anything but a refused connection): for the pay call, whose effect cannot be undone, that decides whether a batch
may be retried or must be reconciled first.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from foundation.words import gettext
from studies.prolific.errors import ProlificRefused, ProlificUnavailable

if TYPE_CHECKING:
    import httpx  # imported by the client itself: the researchers' pages import this module at URL loading

DEFAULT_BASE_URL = "https://api.prolific.com"


@dataclass(frozen=True)
class BonusRow:
    participant_id: str
    amount: Decimal  # in the study's currency, e.g. 1.50 for £1.50


def bonuses_csv(rows: list[BonusRow]) -> str:
    """Prolific's `csv_bonuses`: one `<participant_id>,<amount>` line per participant."""
    return "".join(f"{row.participant_id},{row.amount:.2f}\n" for row in rows)


class ProlificClient:
    def __init__(self, *, token: str, base_url: str = DEFAULT_BASE_URL, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None):
        import httpx

        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=httpx.Timeout(timeout_s),
                                  headers={"Authorization": f"Token {token}"}, transport=transport,
                                  follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ProlificClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ studies and submissions
    def study(self, study_id: str) -> dict[str, Any]:
        return self._call("GET", f"/api/v1/studies/{study_id}/")

    def submissions(self, study_id: str) -> list[dict[str, Any]]:
        body = self._call("GET", f"/api/v1/studies/{study_id}/submissions/")
        return list(body.get("results", [])) if isinstance(body, dict) else list(body)

    def submission_transition(self, submission_id: str, action: str, *, message: str = "",
                              rejection_category: str = "") -> dict[str, Any]:
        """APPROVE, REJECT (with a message and a category) or another of Prolific's transitions."""
        payload: dict[str, Any] = {"action": action}
        if message:
            payload["message"] = message
        if rejection_category:
            payload["rejection_category"] = rejection_category
        return self._call("POST", f"/api/v1/submissions/{submission_id}/transition/", json=payload)

    def screen_out_submissions(self, study_id: str, submission_ids: list[str], *, increase_places: bool = True
                               ) -> dict[str, Any]:
        """Prolific's bulk screen-out: the submissions end SCREENED-OUT and get the study's fixed screen-out payment;
        `increase_places` gives their places back to the study. POST /api/v1/studies/<id>/screen-out-submissions/
        (the path and body as open-source Prolific clients send them; see the README)."""
        return self._call("POST", f"/api/v1/studies/{study_id}/screen-out-submissions/",
                          json={"submission_ids": list(submission_ids), "increase_places": increase_places})

    # ------------------------------------------------------------------ bonuses: two calls, as Prolific's API
    def bonus_setup(self, study_id: str, rows: list[BonusRow], *, reference: str) -> dict[str, Any]:
        """Set up a bulk bonus payment (pays nothing). `reference` is the app's own idempotency key for the batch,
        sent so that the payment can be found again by it (`bonus_payments_by_reference`)."""
        return self._call("POST", "/api/v1/submissions/bonus-payments/",
                          json={"study_id": study_id, "csv_bonuses": bonuses_csv(rows), "reference": reference},
                          headers={"Idempotency-Key": reference})

    def bonus_pay(self, bulk_id: str) -> dict[str, Any]:
        """Pay a bulk bonus payment set up before. NOT idempotent at Prolific: every call pays again."""
        return self._call("POST", f"/api/v1/bulk-bonus-payments/{bulk_id}/pay/")

    def bonus_payments_by_reference(self, study_id: str, reference: str) -> list[dict[str, Any]]:
        """The bulk bonus payments set up with the app's key, each with its status (SET_UP, PAID)."""
        body = self._call("GET", "/api/v1/bulk-bonus-payments/", params={"study_id": study_id, "reference": reference})
        return list(body.get("results", [])) if isinstance(body, dict) else list(body)

    # ------------------------------------------------------------------ transport
    def _call(self, method: str, path: str, **kwargs) -> Any:
        import httpx

        try:
            response = self._http.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            raise _unavailable(f"Prolific could not be reached ({type(error).__name__}).", maybe_sent=False)
        except httpx.HTTPError as error:
            raise _unavailable(f"Prolific did not answer ({type(error).__name__}).", maybe_sent=True)
        if response.status_code >= 500:
            raise _unavailable(f"Prolific answered {response.status_code}.", maybe_sent=True)
        if response.status_code >= 400:
            detail = response.text[:300]
            raise ProlificRefused(gettext("Prolific refused the call (%(status)s): %(detail)s",
                                          status=response.status_code, detail=detail),
                                  details={"prolific_status": response.status_code})
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise _unavailable("Prolific answered with something that is not JSON.", maybe_sent=True)


def _unavailable(message: str, *, maybe_sent: bool) -> ProlificUnavailable:
    error = ProlificUnavailable(message)
    error.maybe_sent = maybe_sent
    return error
