from django.contrib import admin

from .models import (
    Adjudication, AnnotatorLease, Draft, Item, ItemRevision, ReviewDecision, StageConfig, VerificationDecision,
)


class ItemRevisionInline(admin.TabularInline):
    model = ItemRevision
    extra = 0
    can_delete = False
    fields = ("number", "created_at", "author", "stage", "changed_fields", "note")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    change_list_template = "admin/annotation/item/change_list.html"
    list_display = ("external_id", "source", "split", "question_type", "status", "version", "context_words", "evidence_count")
    list_filter = ("source", "split", "status", "question_type")
    search_fields = ("external_id", "question", "context")
    readonly_fields = ("version", "question_type", "context_words", "context_tokens", "evidence_count",
                       "reasoning_steps", "created_at", "updated_at")
    inlines = [ItemRevisionInline]

    def has_delete_permission(self, request, obj=None):
        return False  # nothing is deleted: reject an item instead

    def save_model(self, request, obj, form, change):
        # Edits from the admin go through the same versioned service as every other edit.
        from .services import derived_facts, item_update

        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data if name in obj.content()}
            status = form.cleaned_data.get("status") if "status" in form.changed_data else None
            updated = item_update(item_id=obj.pk, base_version=obj.version, changes=changes, user=request.user,
                                  note="edited in the admin", status=status)
            obj.version = updated.version
        else:
            for name, value in derived_facts(context=obj.context, question=obj.question, evidence=obj.evidence,
                                             reasoning=obj.reasoning).items():
                setattr(obj, name, value)
            super().save_model(request, obj, form, change)
            ItemRevision.objects.create(item=obj, number=obj.version, author=request.user, stage=obj.status,
                                        note="created in the admin", changed_fields=[], snapshot=obj.content())


@admin.register(ItemRevision)
class ItemRevisionAdmin(admin.ModelAdmin):
    list_display = ("item", "number", "created_at", "author", "stage", "note")
    list_filter = ("stage",)
    search_fields = ("item__external_id", "note")

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False


@admin.register(StageConfig)
class StageConfigAdmin(admin.ModelAdmin):
    list_display = ("stage", "annotators_required", "lease_minutes")
    list_editable = ("annotators_required", "lease_minutes")


@admin.register(AnnotatorLease)
class AnnotatorLeaseAdmin(admin.ModelAdmin):
    list_display = ("item", "stage", "annotator", "status", "leased_at", "expires_at", "submitted_at")
    list_filter = ("stage", "status")
    list_select_related = ("item", "annotator")
    readonly_fields = ("item", "stage", "annotator", "leased_at", "submitted_at")


@admin.register(VerificationDecision)
class VerificationDecisionAdmin(admin.ModelAdmin):
    list_display = ("item", "annotator", "decision", "needs_media", "heavy_math", "no_daily_scenario",
                    "wrong_answer", "bias", "created_at")
    list_filter = ("decision",)
    list_select_related = ("item", "annotator")

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    list_display = ("item", "stage", "status", "decision", "resolved_by", "created_at", "resolved_at")
    list_filter = ("status",)


@admin.register(ReviewDecision)
class ReviewDecisionAdmin(admin.ModelAdmin):
    list_display = ("item", "reviewer", "action", "send_back_to", "created_at")
    list_filter = ("action",)


@admin.register(Draft)
class DraftAdmin(admin.ModelAdmin):
    list_display = ("item", "user", "stage", "base_version", "updated_at")
