"""How studies' services refuse a call: subclasses of the project's one error contract.

Each refusal keeps the code and HTTP status the participant pages and the researcher pages
answer with; `foundation.error_mapping` turns them into form errors, pages and API
responses. Pure Python: no Django import (`content` raises `AnswerInvalid`).
"""
from __future__ import annotations

from foundation.errors import Invalid, ServiceError
from foundation.words import gettext, ngettext


class StudyError(ServiceError):
    """A refused call on a study or an attempt (the call does not fit the current state)."""

    code = "study_error"
    http_status = 409


class StudyNotOpen(StudyError):
    """Joining or starting a study that is not open (the page shows "closed")."""

    code = "not_open"
    http_status = 403

    def __init__(self, message: str = "", **kwargs):
        super().__init__(message or gettext("This study is not open."), **kwargs)


class ParticipantIdTaken(StudyError):
    """The external participant id names an attempt that this browser may not resume (neither its cookie nor
    the external session id matches): the page says so and shows nothing of that attempt."""

    code = "participant_taken"
    http_status = 409

    def __init__(self, participant_id: str = ""):
        super().__init__(gettext("This participant id already has an attempt at this study, started in another browser."))
        self.participant_id = participant_id


class PlaceholderId(StudyError):
    """The study link carries a placeholder that the recruitment platform never filled (``{{%PROLIFIC_PID%}}``) as
    an id: joining with it would give every such visitor the same "participant". `fields` names them."""

    code = "placeholder_id"
    http_status = 400

    def __init__(self, fields: list[str]):
        super().__init__(gettext("The study link carries an unfilled placeholder as %(fields)s.", fields=", ".join(fields)),
                         field=fields[0] if fields else None)
        self.fields = list(fields)


class AttemptNotRunning(StudyError):
    """A researcher action that needs a running attempt (extend)."""

    code = "not_running"

    def __init__(self, message: str = "", **kwargs):
        super().__init__(message or gettext("Only a running attempt can be extended."), **kwargs)


class PoolFrozen(StudyError):
    """The item pool is fixed once participants have started."""

    code = "pool_frozen"

    def __init__(self, message: str = "", **kwargs):
        super().__init__(message or gettext("The item pool cannot change after participants have started."), **kwargs)


class RatersBelowLoad(StudyError):
    """Fewer raters per item than an item already has (answers plus running leases)."""

    code = "raters_below_load"

    def __init__(self, busiest: int):
        super().__init__(gettext("An item already has %(n)s raters; raters cannot go below that.", n=busiest), field="raters")
        self.busiest = busiest


class AnswerRefused(StudyError):
    """An answer that cannot be accepted; `reason` (= `code`) is a `RefusedAnswer.Reason` or `UNKNOWN`.

    Refused answers of a known attempt are kept for the record (`RefusedAnswer`).
    """

    UNKNOWN = "unknown"

    def __init__(self, reason: str, message: str, http_status: int = 409, details: dict | None = None):
        super().__init__(message, code=str(reason), http_status=http_status, details=details)
        self.reason = str(reason)


class DraftRefused(StudyError):
    """A highlight draft for a question that is not open now: answered, timed out, not shown yet, or an attempt
    that is not running. Nothing is stored; the page says so and leads to the question the participant is on."""

    NOT_OPEN = "draft_not_open"
    CLOSED = "draft_closed"
    UNKNOWN = "draft_unknown"
    STALE = "draft_stale"

    def __init__(self, reason: str, message: str, http_status: int = 409):
        super().__init__(message, code=reason, http_status=http_status)
        self.reason = reason


class DraftStale(DraftRefused):
    """A draft save that names a revision other than the stored one: another save came first (another tab, or
    this page before a reload, whose request arrived late). Nothing is stored (412); `revision` and
    `highlights` are the stored draft's, for a page that still wants its own highlights to send them again."""

    def __init__(self, message: str, *, revision: int, highlights: list):
        super().__init__(self.STALE, message, 412)
        self.revision, self.highlights = revision, highlights


class StudySetupInvalid(Invalid):
    """A study's settings or item pool are wrong (400, beside the field they name)."""

    code = "study_invalid"


class EmptyPool(StudySetupInvalid):
    code = "empty_pool"

    def __init__(self, message: str = "", field: str = "pool_split"):
        super().__init__(message or gettext("This split has no items."), field=field)


class UnknownItems(StudySetupInvalid):
    code = "unknown_items"

    def __init__(self, missing: list[str], field: str = "pool_items"):
        super().__init__(gettext("Unknown items: %(items)s", items=", ".join(missing[:10])), field=field)
        self.missing = list(missing)


class PracticeItemInPool(StudySetupInvalid):
    """The practice question tells the participant whether they were right: it must never be a study item."""

    code = "practice_in_pool"

    def __init__(self):
        super().__init__(gettext("The practice item is part of the study's item pool; choose another practice item."),
                         field="practice_item")


class RejectedItems(StudySetupInvalid):
    """An explicit item list names items annotators rejected (pools leave them out unless asked)."""

    code = "rejected_items"

    def __init__(self, names: list[str], field: str = "pool_items"):
        super().__init__(gettext("Annotators rejected these items: %(items)s; remove them or allow rejected items in the "
                                 "pool.", items=", ".join(names[:10]) + (" …" if len(names) > 10 else "")), field=field)
        self.names = list(names)


class TranslationsMissing(StudySetupInvalid):
    """A study in a language cannot open while pool items or the practice item lack that translation."""

    code = "translations_missing"

    def __init__(self, gaps: list[tuple[str, list[str], bool]]):
        """`gaps`: (language name, pool items without a translation, whether the practice item lacks one)."""
        parts = []
        for name, items, practice in gaps:
            listed = ", ".join(items[:8]) + (" …" if len(items) > 8 else "")
            if items and practice:
                parts.append(ngettext("%(n)s pool item (%(items)s) and the practice item have no %(language)s "
                                      "translation", "%(n)s pool items (%(items)s) and the practice item have no "
                                      "%(language)s translation", len(items), n=len(items), items=listed,
                                      language=name))
            elif items:
                parts.append(ngettext("%(n)s pool item (%(items)s) has no %(language)s translation",
                                      "%(n)s pool items (%(items)s) have no %(language)s translation", len(items),
                                      n=len(items), items=listed, language=name))
            else:
                parts.append(gettext("the practice item has no %(language)s translation", language=name))
        super().__init__(
            gettext("The study cannot open: %(gaps)s. Translate them, leave the untranslated items out of the pool "
                    "(and choose a translated practice item), or keep the study as a draft.", gaps="; ".join(parts)),
            field="status", details={"untranslated": {name: items for name, items, _ in gaps}})
        self.gaps = list(gaps)


class AnswerInvalid(Invalid):
    """A malformed answer (400); `errors` maps each field to its messages, `messages` to the first one."""

    code = "answer_invalid"

    def __init__(self, errors: dict[str, str | list[str]]):
        super().__init__(errors={k: [v] if isinstance(v, str) else list(v) for k, v in errors.items()})

    @property
    def messages(self) -> dict[str, str]:
        return {field: messages[0] for field, messages in self.errors.items() if messages}


__all__ = [
    "AnswerInvalid", "AnswerRefused", "AttemptNotRunning", "DraftRefused", "DraftStale", "EmptyPool", "ParticipantIdTaken", "PlaceholderId", "PoolFrozen",
    "PracticeItemInPool", "RatersBelowLoad", "RejectedItems", "StudyError", "StudyNotOpen", "StudySetupInvalid", "TranslationsMissing",
    "UnknownItems",
]
