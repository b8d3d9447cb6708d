"""How the Prolific services refuse a call (the project's one error contract). Pure Python."""
from __future__ import annotations

from foundation.errors import Conflict, Forbidden, Invalid, ServiceError


class WebhookRefused(Forbidden):
    """A webhook delivery that is not applied: wrong or missing signature (401), replayed (403), unreadable (400)."""

    code = "webhook_refused"


class ProlificNotConnected(Invalid):
    """The study has no Prolific connection, or the variable it names holds no token."""

    code = "prolific_not_connected"


class ProlificUnavailable(ServiceError):
    """Prolific's API did not answer (network, time-out, 5xx): nothing is known to have changed."""

    code = "prolific_unavailable"
    http_status = 502


class ProlificRefused(ServiceError):
    """Prolific's API refused the call (4xx); its answer is in the message."""

    code = "prolific_refused"
    http_status = 502


class SubmissionReviewRefused(Invalid):
    """An approval or rejection that Prolific's rules do not allow (checked before asking Prolific)."""

    code = "review_refused"


class BonusBatchRefused(Conflict):
    """A bonus batch action that does not fit the batch's state (approve twice, send unapproved, already sending)."""

    code = "bonus_batch_refused"


class BonusOutcomeUnknown(ServiceError):
    """The pay call may have reached Prolific but its answer was lost: the batch stays "sending" and is reconciled
    against Prolific's record before anything is sent again."""

    code = "bonus_outcome_unknown"
    http_status = 502
