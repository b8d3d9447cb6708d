from django.contrib import admin

from evaluation.models import CachedResponse, ModelEndpoint, Result, Run
from evaluation.services import runs as services
from foundation.admin_versions import OpenedAtVersionForm


class ModelEndpointAdminForm(OpenedAtVersionForm):
    class Meta:
        model = ModelEndpoint
        fields = "__all__"

    def stale_message(self, base_version: int) -> str:
        return services.endpoint_edit_conflict(self.instance, base_version).message


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    form = ModelEndpointAdminForm
    list_display = ["name", "kind", "model", "shown_base_url", "api_key_env", "max_concurrency", "requests_per_minute"]
    list_filter = ["kind"]
    search_fields = ["name", "model", "base_url"]

    def save_model(self, request, obj, form, change):
        if not change:
            return super().save_model(request, obj, form, change)
        # Through the edit service, from the version the page was opened at (a save in between is refused).
        changes = {name: form.cleaned_data[name] for name in form.changed_data if name in services.ENDPOINT_FIELDS}
        saved = services.endpoint_update(endpoint=obj, expected_version=form.cleaned_data["base_version"], **changes)
        obj.version = saved.version


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """A run is a record of what was asked and answered: launched, cancelled and resumed through its pages
    and API (which queue its work), never added here; what defines it (method, endpoint, items, seed, ...)
    and its status never change here, for anyone; only its note does. A run with results is never deleted
    (its results are records: ResultAdmin deletes nothing, so the admin refuses the cascade)."""

    list_display = ["id", "method", "endpoint", "split", "option_order", "seed", "samples", "status", "created_at"]
    list_filter = ["status", "method", "option_order", "endpoint"]
    list_select_related = ["endpoint"]
    #: The only field the admin may change.
    editable_fields = ("note",)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Run._meta.fields if f.name not in self.editable_fields and f.name != "id"]

    def has_add_permission(self, request) -> bool:
        return False  # a run added here would never be queued: launch it from the runs page or the API

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.results.exists():
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "item", "sample_index", "parse_status", "is_correct", "keyinfo", "cached", "error"]
    list_filter = ["parse_status", "is_correct", "cached"]
    raw_id_fields = ["run", "item"]
    list_select_related = ["run", "item"]
    readonly_fields = [f.name for f in Result._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False  # rows are written by runs (exactly once per run, item, sample), never by hand

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # what a model answered, as it was scored

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # nor deleted (alone or with its run)


@admin.register(CachedResponse)
class CachedResponseAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "tokens_in", "tokens_out", "created_at"]
    search_fields = ["key", "model"]
    readonly_fields = ["key", "model", "text", "tokens_in", "tokens_out", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False  # responses are stored by runs (keyed by a hash of the request), never by hand
