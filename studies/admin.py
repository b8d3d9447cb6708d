"""The admin writes through the services: study setup keeps "pool frozen after start" and "raters >= load";
attempts, participant leases, responses and refused answers are records (read-only) with service actions.
"""
from django.contrib import admin, messages
from django.db import models
from django.http import HttpResponseRedirect

from foundation.error_mapping import REFUSED, error_text
from studies import services
from studies.forms import SETTING_FIELDS
from studies.models import Attempt, ParticipantLease, RefusedAnswer, Response, Study, StudyItem


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class StudyItemInline(ReadOnlyInline):
    """The pool as it is: it changes through the study's pool settings (split, sample, seed), never row by row."""

    model = StudyItem
    fields = readonly_fields = ["position", "item", "quota", "load", "released_at"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "status", "per_participant", "raters", "time_limit_seconds", "language"]
    list_filter = ["status", "language"]
    search_fields = ["slug", "title"]
    raw_id_fields = ["practice_item"]
    exclude = ["created_by"]
    inlines = [StudyItemInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # as the study form

    def get_readonly_fields(self, request, obj=None):
        return ["slug"] if obj is not None else []

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        """A refused setup (the whole save is rolled back) comes back to the form with the reason."""
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except REFUSED as error:
            self.message_user(request, error_text(error), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in SETTING_FIELDS if name in form.cleaned_data}
        if change:
            changed = {name: value for name, value in fields.items() if name in form.changed_data}
            study = services.study_update(study_id=obj.pk, **changed)
        else:
            study = services.study_create(slug=form.cleaned_data["slug"], user=request.user, **fields)
        obj.pk, obj.created_by_id, obj.created_at = study.pk, study.created_by_id, study.created_at


class ParticipantLeaseInline(ReadOnlyInline):
    model = ParticipantLease
    fields = readonly_fields = ["position", "item", "study_item", "status", "expires_at", "shown_at", "ended_at"]


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "external_participant_id", "status", "started_at", "deadline", "ended_at"]
    list_filter = ["status", "study"]
    search_fields = ["external_participant_id", "external_session_id"]
    inlines = [ParticipantLeaseInline]
    actions = ["extend_ten_minutes", "expire"]

    def has_add_permission(self, request) -> bool:
        return False  # participants join through the study link

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # an attempt changes only through its services (the actions below)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # nothing is deleted

    @admin.action(description="Extend the selected running attempts by 10 minutes", permissions=["view"])
    def extend_ten_minutes(self, request, queryset):
        self._each(request, queryset, lambda a: services.attempt_extend(attempt_id=a.pk, seconds=600), "extended")

    @admin.action(description="Expire the selected attempts (unanswered items go back to the pool)",
                  permissions=["view"])
    def expire(self, request, queryset):
        self._each(request, queryset, lambda a: services.attempt_expire(attempt_id=a.pk), "expired")

    def _each(self, request, queryset, call, done: str) -> None:
        ok = 0
        for attempt in queryset:
            try:
                call(attempt)
            except REFUSED as error:
                self.message_user(request, f"Attempt {attempt.pk}: {error_text(error)}", messages.WARNING)
            else:
                ok += 1
        if ok:
            self.message_user(request, f"{ok} attempt(s) {done}.", messages.SUCCESS)


class RecordAdmin(admin.ModelAdmin):
    """Participants' answers are kept as given: viewable, never edited or deleted."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Response)
class ResponseAdmin(RecordAdmin):
    list_display = ["id", "attempt", "item", "option_chosen", "is_correct", "confidence", "is_late", "answered_at"]
    list_filter = ["is_late", "is_correct", "attempt__study"]

    @admin.display(description="option chosen (1 = first)", ordering="chosen_option")
    def option_chosen(self, response: Response) -> int:
        return response.chosen_option + 1


@admin.register(RefusedAnswer)
class RefusedAnswerAdmin(RecordAdmin):
    list_display = ["id", "attempt", "item", "reason", "received_at"]
    list_filter = ["reason"]
