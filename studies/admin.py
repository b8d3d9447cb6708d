from django.contrib import admin

from .models import Attempt, ParticipantLease, RefusedAnswer, Response, Study, StudyItem


class StudyItemInline(admin.TabularInline):
    model = StudyItem
    extra = 0
    raw_id_fields = ["item"]
    readonly_fields = ["load"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "status", "per_participant", "raters", "time_limit_seconds", "language"]
    list_filter = ["status", "language"]
    search_fields = ["slug", "title"]
    raw_id_fields = ["practice_item"]
    inlines = [StudyItemInline]


class LeaseInline(admin.TabularInline):
    model = ParticipantLease
    extra = 0
    raw_id_fields = ["item", "study_item"]
    readonly_fields = ["position", "status", "expires_at", "shown_at", "ended_at"]


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "external_participant_id", "status", "started_at", "deadline", "ended_at"]
    list_filter = ["status", "study"]
    search_fields = ["external_participant_id", "external_session_id"]
    readonly_fields = ["token"]
    inlines = [LeaseInline]


@admin.register(Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ["id", "attempt", "item", "chosen_option", "is_correct", "confidence", "is_late", "answered_at"]
    list_filter = ["is_late", "is_correct", "attempt__study"]
    raw_id_fields = ["attempt", "item", "lease"]


@admin.register(RefusedAnswer)
class RefusedAnswerAdmin(admin.ModelAdmin):
    list_display = ["id", "attempt", "item", "reason", "received_at"]
    list_filter = ["reason"]
    raw_id_fields = ["attempt", "item"]
