"""The Django admin for researchers: every write goes through the annotation services.

Items are created and edited as versioned revisions (item_create / item_update), stage
configurations are set with stage_config_set, open leases can be released with
leases_release; the workflow's records (leases, decisions, adjudications, reviews,
drafts) are read-only here: they change only through the workflow pages.
"""
from django import forms
from django.contrib import admin, messages

from annotation import services
from annotation.errors import StaleVersion
from annotation.forms import version_field
from annotation.models import (
    CONTENT_FIELDS,
    Adjudication,
    AnnotatorLease,
    Draft,
    Item,
    ItemRevision,
    ReviewDecision,
    StageConfig,
    VerificationDecision,
)
from annotation.services.items import content_problems
from foundation.admin_versions import OpenedAtVersionForm


class ReadOnlyAdmin(admin.ModelAdmin):
    """History and workflow records: viewed here, changed only by the services behind the pages."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ItemRevisionInline(admin.TabularInline):
    model = ItemRevision
    extra = 0
    can_delete = False
    fields = ("number", "created_at", "author", "stage", "changed_fields", "note")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class ItemAdminForm(OpenedAtVersionForm):
    #: The base form's, bounded as every version a page sends back is (a larger one is refused as input).
    base_version = version_field(widget=forms.HiddenInput, required=False)

    class Meta:
        model = Item
        fields = "__all__"

    def stale_message(self, base_version: int) -> str:
        return StaleVersion(self.instance, base_version).message

    def clean(self):
        # What the edit services refuse to store (a null, NaN, ...: services.items.content_problems), beside its field.
        data = super().clean()
        for name, problems in content_problems({k: v for k, v in data.items() if k in CONTENT_FIELDS}).items():
            self.add_error(name, problems)
        return data


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    form = ItemAdminForm
    change_list_template = "admin/annotation/item/change_list.html"
    list_display = ("external_id", "source", "split", "question_type", "status", "version", "context_words", "evidence_count")
    list_filter = ("source", "split", "status", "question_type")
    search_fields = ("external_id", "question", "context")
    readonly_fields = ("version", "content_version", "highest_content_version", "question_type", "context_words", "context_tokens", "evidence_count",
                       "reasoning_steps", "created_at", "updated_at")
    inlines = [ItemRevisionInline]

    def has_delete_permission(self, request, obj=None):
        return False  # nothing is deleted: reject an item instead

    def save_model(self, request, obj, form, change):
        # Edits from the admin go through the same versioned services as every other edit.
        data = form.cleaned_data
        if change:
            changes = {name: data[name] for name in form.changed_data if name in CONTENT_FIELDS}
            status = data.get("status") if "status" in form.changed_data else None
            # The version the form was opened at (checked again under the item's lock: a save in between is refused).
            saved = services.item_update(item_id=obj.pk, base_version=data["base_version"], changes=changes,
                                         user=request.user, note="edited in the admin", status=status)
        else:
            saved = services.item_create(
                source=data["source"], external_id=data["external_id"], split=data["split"],
                external_id_is_int=data.get("external_id_is_int", True), status=data.get("status") or None,
                content={name: data[name] for name in CONTENT_FIELDS if name in data}, user=request.user,
                note="created in the admin")
        obj.pk, obj.version = saved.pk, saved.version


@admin.register(ItemRevision)
class ItemRevisionAdmin(ReadOnlyAdmin):
    list_display = ("item", "number", "created_at", "author", "stage", "note")
    list_filter = ("stage",)
    search_fields = ("item__external_id", "note")


@admin.register(StageConfig)
class StageConfigAdmin(admin.ModelAdmin):
    list_display = ("stage", "annotators_required", "lease_minutes")
    list_editable = ("annotators_required", "lease_minutes")

    def save_model(self, request, obj, form, change):
        saved = services.stage_config_set(stage=obj.stage, annotators_required=obj.annotators_required,
                                          lease_minutes=obj.lease_minutes)
        obj.pk = saved.pk

    def has_delete_permission(self, request, obj=None):
        return False  # a stage without a row falls back to the defaults; set k instead


@admin.register(AnnotatorLease)
class AnnotatorLeaseAdmin(ReadOnlyAdmin):
    list_display = ("item", "stage", "annotator", "status", "leased_at", "expires_at", "submitted_at")
    list_filter = ("stage", "status")
    list_select_related = ("item", "annotator")
    actions = ["release"]

    def has_release_permission(self, request):
        return request.user.has_perm("annotation.change_annotatorlease")

    @admin.action(description="Release the selected open leases (back to the queue)", permissions=["release"])
    def release(self, request, queryset):
        n = services.leases_release(lease_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"{n} lease(s) released.", messages.SUCCESS)


@admin.register(VerificationDecision)
class VerificationDecisionAdmin(ReadOnlyAdmin):
    list_display = ("item", "annotator", "decision", "needs_media", "heavy_math", "no_daily_scenario",
                    "wrong_answer", "bias", "created_at")
    list_filter = ("decision",)
    list_select_related = ("item", "annotator")


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    list_display = ("item", "stage", "status", "decision", "resolved_by", "created_at", "resolved_at")
    list_filter = ("status",)


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(ReadOnlyAdmin):
    list_display = ("item", "reviewer", "action", "send_back_to", "created_at")
    list_filter = ("action",)


@admin.register(Draft)
class DraftAdmin(ReadOnlyAdmin):
    list_display = ("item", "user", "stage", "base_version", "updated_at")

    def get_queryset(self, request):  # a draft whose work was saved keeps only when (services.draft_discard)
        return super().get_queryset(request).filter(data__isnull=False)
