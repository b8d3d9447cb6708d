from django.contrib import admin

from evaluation.models import CachedResponse, ModelEndpoint, Result, Run


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "model", "base_url", "api_key_env", "max_concurrency", "requests_per_minute"]
    list_filter = ["kind"]
    search_fields = ["name", "model", "base_url"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "method", "endpoint", "split", "option_order", "seed", "samples", "status", "created_at"]
    list_filter = ["status", "method", "option_order", "endpoint"]
    readonly_fields = ["item_ids", "prompt_version", "params", "created_at", "started_at", "finished_at"]
    list_select_related = ["endpoint"]


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "item", "sample_index", "parse_status", "is_correct", "keyinfo", "cached", "error"]
    list_filter = ["parse_status", "is_correct", "cached"]
    raw_id_fields = ["run", "item"]
    list_select_related = ["run", "item"]
    readonly_fields = [f.name for f in Result._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False  # rows are written by runs (exactly once per run, item, sample), never by hand


@admin.register(CachedResponse)
class CachedResponseAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "tokens_in", "tokens_out", "created_at"]
    search_fields = ["key", "model"]
    readonly_fields = ["key", "model", "text", "tokens_in", "tokens_out", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False  # responses are stored by runs (keyed by a hash of the request), never by hand
