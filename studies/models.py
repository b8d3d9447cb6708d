"""Timed human studies: a study's item pool, participants' attempts, participant leases and responses."""
from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.models import Item

DEFAULT_TIME_LIMIT = 3 * 60 * 60

#: The languages a study can be shown in: "" is the items' original (English); a code names an item translation.
STUDY_LANGUAGES = [("", _("Original (English)")), ("zh-hans", "简体中文")]
#: Each language by its own name, as a participant looks for it in the language switch.
LANGUAGE_NAMES = {"": "English", "zh-hans": "简体中文"}

#: A consent text for a study whose researcher has not written one (the demo study, `create_study`, a new study
#: form); translated, so a study in Chinese gets it in Chinese.
DEFAULT_CONSENT_TEXT = _(
    "This is a research study on how people solve detective puzzles. You will read short stories, answer one "
    "multiple-choice question about each, and may highlight the passages of the story that you relied on.\n\n"
    "What we record: your answers, the passages you highlight, how sure you said you were, and how long each "
    "question took. If you came from a recruitment platform we also keep the participant, study and session ids "
    "it sent. We do not ask for your name or contact details.\n\n"
    "Taking part is voluntary. You may stop at any time with “Stop and leave the study”; the answers you "
    "gave until then are kept. The results are used for research only and are published only as totals over "
    "many participants.\n\n"
    "If you have questions about this study, contact the researcher through the platform that sent you here."
)


def new_token() -> str:
    """An unguessable attempt token (256 bits)."""
    return secrets.token_urlsafe(32)


class StudyStatus(models.TextChoices):
    DRAFT = "draft", _("Draft")
    OPEN = "open", _("Open")
    CLOSED = "closed", _("Closed")


class Study(models.Model):
    """A timed study: each participant answers `per_participant` distinct items, each item gets `raters` answers."""

    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=StudyStatus.choices, default=StudyStatus.DRAFT)
    per_participant = models.PositiveSmallIntegerField(default=15)
    raters = models.PositiveSmallIntegerField(default=3, help_text=_("Answers wanted per item."))
    time_limit_seconds = models.PositiveIntegerField(default=DEFAULT_TIME_LIMIT, help_text=_("For the whole attempt."))
    question_time_limit_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Optional limit per question; empty = none.")
    )
    grace_seconds = models.PositiveSmallIntegerField(
        default=5, help_text=_("Answers this many seconds after a deadline are accepted and flagged late.")
    )
    language = models.CharField(max_length=10, blank=True, choices=STUDY_LANGUAGES, help_text=_(
        "Language of the items shown (an item's translation) and of the participant pages."))
    extra_languages = models.JSONField(default=list, blank=True, help_text=_(
        'Other languages a participant may switch to ("" = the original English); each needs translations.'))
    consent_text = models.TextField(blank=True)
    instructions = models.TextField(blank=True)
    practice_item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    bonus_per_correct = models.DecimalField(max_digits=7, decimal_places=2, default=0)
    bonus_currency = models.CharField(max_length=8, default="GBP")
    completion_code = models.CharField(max_length=64, blank=True)
    completion_url = models.URLField(blank=True, help_text=_("Redirect after the last answer (Prolific style)."))
    timeout_completion_code = models.CharField(
        max_length=64, blank=True,
        help_text=_("Code shown when the time runs out (answers so far are kept); empty = ask the participant to "
                    "return the study instead."),
    )
    screen_out_code = models.CharField(
        max_length=64, blank=True,
        help_text=_("Code shown to a participant who is screened out (Prolific: the study's screen-out code); they "
                    "return with it and get the study's fixed screen-out payment."))
    screening_question = models.TextField(
        blank=True, help_text=_("Optional: a question asked before the first item (on the start page); a "
                                "participant whose answer is not a passing option is screened out."))
    screening_options = models.JSONField(default=list, blank=True, help_text=_("The screening question's options."))
    screening_pass = models.JSONField(
        default=list, blank=True, help_text=_("The options (0-based) that pass the screening question."))
    timeout_instruction = models.TextField(
        blank=True, help_text=_("What a participant whose time ran out (or who stopped) should do; empty = a "
                                "standard instruction."))
    seed = models.IntegerField(default=0, help_text=_("Seeds the item sample and every participant's order."))
    pool_split = models.CharField(max_length=40, blank=True)
    pool_sample = models.PositiveIntegerField(null=True, blank=True)
    pool_include_rejected = models.BooleanField(
        default=False, help_text=_("Draw the pool also from items that annotators rejected (left out by default)."))
    items = models.ManyToManyField(Item, through="StudyItem", related_name="studies")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(per_participant__gte=1), name="study_per_participant_positive",
                                   violation_error_message="Each participant needs at least one question."),
            models.CheckConstraint(condition=Q(raters__gte=1), name="study_raters_positive",
                                   violation_error_message="Each item needs at least one rater."),
            models.CheckConstraint(condition=Q(time_limit_seconds__gte=10), name="study_time_limit_min",
                                   violation_error_message="The time limit must be at least 10 seconds."),
            models.CheckConstraint(condition=Q(bonus_per_correct__gte=0), name="study_bonus_not_negative",
                                   violation_error_message="The bonus cannot be negative."),
        ]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        if self.language and self.language not in dict(settings.LANGUAGES):
            raise ValidationError({"language": gettext("Unknown language.")})
        known = dict(STUDY_LANGUAGES)
        if self.extra_languages is None:  # an empty JSON field in the admin
            self.extra_languages = []
        extra = self.extra_languages
        if not isinstance(extra, list) or not all(isinstance(code, str) and code in known for code in extra):
            raise ValidationError(
                {"extra_languages": gettext("Languages to switch to: a list of %(languages)s.")
                                    % {"languages": ", ".join(map(repr, known))}})

        self._clean_screening()

    def _clean_screening(self) -> None:
        """The screening question's options: two or more texts; the passing ones named by their index."""
        options, passing = self.screening_options or [], self.screening_pass or []
        self.screening_options, self.screening_pass = options, passing
        if not isinstance(options, list) or not all(isinstance(o, str) and o.strip() for o in options):
            raise ValidationError({"screening_options": _("The screening options: a list of answers, none empty.")})
        if not isinstance(passing, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in passing):
            raise ValidationError({"screening_pass": _("The passing options: a list of option numbers.")})
        if self.screening_question.strip() and len(options) < 2:
            raise ValidationError({"screening_options": _("A screening question needs at least two options.")})
        if options and not self.screening_question.strip():
            raise ValidationError({"screening_question": _("Screening options need the question they answer.")})
        if any(not 0 <= i < len(options) for i in passing):
            raise ValidationError({"screening_pass": _("A passing option must be one of the screening options.")})

    @property
    def languages(self) -> list[str]:
        """Every language a participant may see the study in, the study's own first."""
        return list(dict.fromkeys([self.language, *(self.extra_languages or [])]))

    @property
    def translated_languages(self) -> list[str]:
        """The study's languages that items must be translated into (all but the original)."""
        return [code for code in self.languages if code]

    def language_of(self, chosen: str | None) -> str:
        """The language a participant who chose `chosen` sees: one the study offers, else the study's own."""
        return chosen if chosen is not None and chosen in self.languages else self.language

    @property
    def screening(self) -> bool:
        """Whether participants answer a screening question before starting."""
        return bool(self.screening_question.strip() and self.screening_options)

    def screening_passes(self, option: int) -> bool:
        return option in (self.screening_pass or [])

    def bonus_for(self, correct: int) -> Decimal:
        """A participant's bonus for `correct` right answers."""
        return self.bonus_per_correct * correct


class StudyItem(models.Model):
    """An item of a study's pool with its quota and load (answers + running leases), guarded by the database."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pool")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()
    quota = models.PositiveSmallIntegerField()
    load = models.PositiveSmallIntegerField(default=0, help_text="Answered responses + active leases.")
    released_at = models.DateTimeField(null=True, blank=True, help_text="Last lost a rater; cleared on hand-out.")

    class Meta:
        ordering = ["study_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "item"], name="study_item_unique"),
            models.UniqueConstraint(fields=["study", "position"], name="study_item_unique_position"),
            models.CheckConstraint(condition=Q(load__lte=F("quota")), name="study_item_load_within_quota"),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}:{self.item_id} {self.load}/{self.quota}"


class AttemptStatus(models.TextChoices):
    JOINED = "joined", _("Joined")        # consented, not started: holds no items
    STARTED = "started", _("Started")
    FINISHED = "finished", _("Finished")
    EXPIRED = "expired", _("Expired")
    RETURNED = "returned", _("Returned")
    FULL = "full", _("Study full")
    SCREENED_OUT = "screened_out", _("Screened out")  # answers kept, counted nowhere; leases back to the pool


class ProlificReport(models.TextChoices):
    """What the app told Prolific about an attempt that ended in the app."""

    SCREENED_OUT = "screened_out", _("Screened out through Prolific's API")
    SCREEN_OUT_REFUSED = "screen_out_refused", _("Screen-out refused by Prolific")
    TIMEOUT_CODE = "timeout_code", _("Time-out code shown to the participant")


class Attempt(models.Model):
    """One participant's attempt at a study (participants have no account)."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="attempts")
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    external_participant_id = models.CharField(max_length=100, blank=True, help_text="PROLIFIC_PID")
    external_study_id = models.CharField(max_length=100, blank=True, help_text="STUDY_ID")
    external_session_id = models.CharField(max_length=100, blank=True, help_text="SESSION_ID")
    status = models.CharField(max_length=16, choices=AttemptStatus.choices, default=AttemptStatus.JOINED)
    joined_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True, help_text="Absolute; owned by the server.")
    ended_at = models.DateTimeField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    language = models.CharField(max_length=10, blank=True,
                                help_text="The language the participant sees the study in (one the study offers).")
    screening_answer = models.PositiveSmallIntegerField(null=True, blank=True,
                                                        help_text="The option chosen on the screening question.")
    screened_out_reason = models.CharField(max_length=200, blank=True)
    prolific_report = models.CharField(max_length=20, blank=True, choices=ProlificReport.choices,
                                       help_text="What the app reported to Prolific about the attempt's end.")
    prolific_reported_at = models.DateTimeField(null=True, blank=True)
    prolific_report_detail = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["study_id", "joined_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_participant_id"], condition=~Q(external_participant_id=""),
                name="attempt_unique_external_participant",
            ),
            # Started and deadline are set together, by Start. An attempt that never started has neither, and
            # may still end: the participant returns it from the instructions page, or a researcher expires it.
            models.CheckConstraint(
                condition=Q(deadline__isnull=False, started_at__isnull=False)
                & ~Q(status__in=[AttemptStatus.JOINED, AttemptStatus.FULL])
                | Q(deadline__isnull=True, started_at__isnull=True, status__in=[
                    AttemptStatus.JOINED, AttemptStatus.FULL, AttemptStatus.EXPIRED, AttemptStatus.RETURNED,
                    AttemptStatus.SCREENED_OUT]),
                name="attempt_started_has_deadline",
            ),
        ]
        indexes = [models.Index(fields=["status", "deadline"], name="attempt_status_deadline")]

    #: Not a field: the leases (ParticipantLease instances in presentation order, each made when first read) this
    #: instance's Start just handed out (studies.services.attempt_start), so the first question's page reads none.
    handed_out: Sequence | None = None

    def __str__(self) -> str:
        return f"{self.study_id}/{self.pk} {self.status}"

    def seconds_left(self, now=None) -> int:
        if self.deadline is None:
            return self.study.time_limit_seconds
        return max(0, int((self.deadline - (now or timezone.now())).total_seconds()))

    def grace_deadline(self):
        return self.deadline + timedelta(seconds=self.study.grace_seconds)


class ParticipantLeaseStatus(models.TextChoices):
    ACTIVE = "active", _("Active")
    ANSWERED = "answered", _("Answered")
    RELEASED = "released", _("Released")       # attempt expired or returned before the answer
    TIMED_OUT = "timed_out", _("Timed out")    # the per-question limit passed
    SCREENED_OUT = "screened", _("Screened out")  # the attempt was screened out: its answer (if any) is not counted


class ParticipantLease(models.Model):
    """A participant's lease: an item handed to an attempt until its deadline; position = the order shown."""

    attempt = models.ForeignKey(Attempt, on_delete=models.PROTECT, related_name="leases")
    study_item = models.ForeignKey(StudyItem, on_delete=models.PROTECT, related_name="leases")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=ParticipantLeaseStatus.choices,
                              default=ParticipantLeaseStatus.ACTIVE)
    expires_at = models.DateTimeField()
    shown_at = models.DateTimeField(null=True, blank=True, help_text="First time the question was shown.")
    shown_content_version = models.PositiveIntegerField(null=True, blank=True, help_text=(
        "The item's content version (Item.content_version) the question was last shown at: an answer is scored on "
        "it, and refused when the item's content changed since (the question is shown again)."))
    shown_language = models.CharField(max_length=10, blank=True, default="", db_default="", help_text=(
        "The language the question was last shown in (\"\" = the original): the answer is checked and recorded "
        "in it, whatever the attempt's language is meanwhile."))
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    draft_highlights = models.JSONField(
        default=list, blank=True,
        help_text='The highlights made so far on the open question, saved as they are made ([{"start", "end", '
                  '"text"}] in the shown context): any tab or browser that resumes the attempt shows them. Not an '
                  'answer; the answer keeps the highlights it was submitted with.')
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    quota_given_back = models.BooleanField(default=False, db_default=False, help_text=(
        "An answer on an earlier content whose place in the item's quota was given back to ask it again (kept)."))
    draft_revision = models.PositiveIntegerField(
        default=0, db_default=0,
        help_text="How many times the draft was saved: a save names the revision it replaces and is refused when "
                  "another save came first (a request from a page reloaded meanwhile, arriving late, cannot "
                  "overwrite a newer draft).")

    class Meta:
        ordering = ["attempt_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["attempt", "item"], name="lease_unique_attempt_item"),
            models.UniqueConstraint(fields=["attempt", "position"], name="lease_unique_attempt_position"),
        ]
        indexes = [models.Index(fields=["status", "expires_at"], name="lease_status_expires"),
                   models.Index(fields=["study_item"], condition=Q(quota_given_back=True), name="lease_given_back")]

    def __str__(self) -> str:
        return f"lease {self.attempt_id}:{self.item_id} {self.status}"


class Response(models.Model):
    """A participant's answer to one item (one per attempt and item)."""

    attempt = models.ForeignKey(Attempt, on_delete=models.PROTECT, related_name="responses")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    lease = models.OneToOneField(ParticipantLease, on_delete=models.PROTECT, related_name="response")
    chosen_option = models.PositiveSmallIntegerField()
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    highlights = models.JSONField(default=list, blank=True, help_text='[{"start", "end", "text"}] in the shown context.')
    language = models.CharField(max_length=10, blank=True)
    is_correct = models.BooleanField()
    item_version = models.PositiveIntegerField(help_text="The item's content version (Item.content_version) the answer was scored on.")
    shown_at = models.DateTimeField()
    answered_at = models.DateTimeField()
    is_late = models.BooleanField(default=False, help_text="Accepted within the grace period after a deadline.")

    class Meta:
        ordering = ["attempt_id", "answered_at"]
        constraints = [
            models.UniqueConstraint(fields=["attempt", "item"], name="response_unique_attempt_item"),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=1, confidence__lte=5),
                name="response_confidence_1_5",
            ),
            models.CheckConstraint(condition=Q(answered_at__gte=F("shown_at")), name="response_answered_after_shown"),
            models.CheckConstraint(condition=Q(item_version__gte=1), name="response_item_version_positive"),
        ]

    def __str__(self) -> str:
        return f"response {self.attempt_id}:{self.item_id}"

    @property
    def seconds(self) -> float:
        return (self.answered_at - self.shown_at).total_seconds()


class RefusedAnswer(models.Model):
    """An answer the server refused (late, already answered, attempt closed), kept for the record."""

    class Reason(models.TextChoices):
        LATE = "late", "After the deadline"
        QUESTION_TIMEOUT = "question_timeout", "After the question's time limit"
        ALREADY_ANSWERED = "already_answered", "Already answered"
        CLOSED = "closed", "Attempt not running"
        CONTENT_CHANGED = "content_changed", "The question's content changed since it was shown"

    attempt = models.ForeignKey(Attempt, on_delete=models.PROTECT, related_name="refused_answers")
    item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=20, choices=Reason.choices)
    received_at = models.DateTimeField(default=timezone.now)
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["attempt_id", "received_at"]

    def __str__(self) -> str:
        return f"{self.get_reason_display()}: attempt {self.attempt_id}, item {self.item_id}"


# Prolific's side of a study (studies/prolific/models.py), registered with this app.
from studies.prolific.models import (  # noqa: E402,F401
    BonusBatch,
    BonusPayment,
    ProlificConnection,
    ProlificSubmission,
    ProlificWebhookDelivery,
)
