"""The permission matrix (issue 11): every URL pattern × every HTTP method × every kind of visitor.

Visitors: anonymous, a participant (no account, the session and cookie of a study they
joined), an annotator and a researcher. Every route of the resolver has an entry in
MATRIX below saying who may use it and the status each method answers to them; everyone
else gets the refusal of the route's kind (a page sends to the login, an API answers 401
or 403, the admin sends to its own login). A route without an entry fails the test, and
so does an entry whose route no longer exists.

Every request that may write (POST, PUT, PATCH, DELETE) runs in a savepoint that is rolled
back, so each one sees the same world (nothing a POST or DELETE did stays), and the
visitor's cookies are restored after every request (a logout or a login does not change
who asks next). MATRIX_DUMP=path writes what was observed, to write or review entries.

Format suffixes (`.../results.json`) are not routed: DRF's format_suffix_patterns is used
nowhere, so such a URL answers 404 (it answered 500 when the API had a router).
"""
from __future__ import annotations

import os
import re
import time
import warnings
from copy import deepcopy
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
VISITORS = ("anonymous", "participant", "annotator", "researcher")


# ---- who may use each route, and what each method answers them

ANYONE, ANNOTATORS, RESEARCHERS, ADMIN = "anyone", "annotators", "researchers", "admin"
ALLOWED = {ANYONE: set(VISITORS), ANNOTATORS: {"annotator", "researcher"}, RESEARCHERS: {"researcher"},
           ADMIN: {"researcher"}}

# route name (or pattern when unnamed): (who may, statuses for them[, {visitor: statuses} where one differs]).
# Statuses: the status of every method, then METHOD=status where a method differs ("405 POST=302").
MATRIX: dict[str, tuple] = {
    # the site, its login and its API description
    ':home': (ANNOTATORS, '200'),
    ':login': (ANYONE, '200 PATCH=405 DELETE=405'),
    ':logout': (ANYONE, '405 POST=302 OPTIONS=200'),
    ':swagger-ui': (ANNOTATORS, '405 GET=200 HEAD=200'),
    ':schema': (ANNOTATORS, '405 GET=200 HEAD=200 OPTIONS=200'),
    ':favicon': (ANYONE, '301'),
    ':healthz': (ANYONE, '200'),
    ':set_language': (ANYONE, '302'),
    # annotation pages
    'annotation:adjudication_list': (ANNOTATORS, '200'),
    'annotation:adjudication': (ANNOTATORS, '200 POST=400'),
    'annotation:agreement': (RESEARCHERS, '200'),
    'annotation:agreement_export': (RESEARCHERS, '200'),
    'annotation:belief_queues': (ANNOTATORS, '200'),
    'annotation:belief_next': (ANNOTATORS, '405 POST=302'),
    'annotation:belief_trust': (RESEARCHERS, '200 POST=400'),
    'annotation:belief_trust_export': (RESEARCHERS, '200'),
    'annotation:belief_draft': (ANNOTATORS, '405 POST=404'),
    'annotation:belief_review': (ANNOTATORS, '403', {'annotator': '200 POST=400'}),
    'annotation:belief_release': (ANNOTATORS, '405 POST=404', {'annotator': '405 POST=302'}),
    'annotation:belief_trust_index': (RESEARCHERS, '302'),
    'annotation:item_list': (ANNOTATORS, '200'),
    'annotation:item_detail': (ANNOTATORS, '200'),
    'annotation:release': (ANNOTATORS, '405 POST=302'),
    'annotation:clue_graph': (ANNOTATORS, '200 POST=400'),
    'annotation:clue_graph_edit': (ANNOTATORS, '405 POST=422'),
    'annotation:clue_graph_preview': (ANNOTATORS, '405 POST=422'),
    'annotation:history': (ANNOTATORS, '200'),
    'annotation:revert': (ANNOTATORS, '405 POST=400'),
    'annotation:review': (ANNOTATORS, '200 POST=400'),
    'annotation:rewrite': (ANNOTATORS, '200 POST=400'),
    'annotation:rewrite_draft': (ANNOTATORS, '405 POST=200'),
    'annotation:verify': (ANNOTATORS, '200 POST=400'),
    'annotation:item_import': (RESEARCHERS, '200 POST=400'),
    'annotation:progress': (RESEARCHERS, '200 POST=400'),
    'annotation:queue': (ANNOTATORS, '200'),
    'annotation:next_item': (ANNOTATORS, '405 POST=302'),
    'annotation:auto_advance': (ANNOTATORS, '405 POST=302'),
    # annotation API
    'annotation_api:belief_labels': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:belief_review_submit': (ANNOTATORS, '405 POST=400 OPTIONS=200'),
    'annotation_api:belief_queues': (ANNOTATORS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:belief_next': (ANNOTATORS, '405 POST=204 OPTIONS=200', {'annotator': '405 POST=200 OPTIONS=200'}),
    'annotation_api:belief_trust': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:belief_policy': (RESEARCHERS, '405 GET=200 HEAD=200 PATCH=200 OPTIONS=200'),
    'annotation_api:belief_reviews': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:item_list': (ANNOTATORS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:item_detail': (ANNOTATORS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:clue_graph_submit': (ANNOTATORS, '405 POST=400 OPTIONS=200'),
    'annotation_api:item_revisions': (ANNOTATORS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'annotation_api:verification_submit': (ANNOTATORS, '405 POST=400 OPTIONS=200'),
    'annotation_api:next_item': (ANNOTATORS, '405 POST=400 OPTIONS=200'),
    # participant pages: open to anyone with the link (the attempt token is the key)
    'studies_public:landing': (ANYONE, '405 GET=200', {'participant': '405 GET=302'}),
    'studies_public:join': (ANYONE, '302 POST=400'),
    'studies_public:not_found': (ANYONE, '404'),
    'studies_public:attempt': (ANYONE, '405 GET=200'),
    'studies_public:answer': (ANYONE, '302 POST=410'),
    'studies_public:draft': (ANYONE, '405 GET=410 POST=410'),
    'studies_public:language': (ANYONE, '302'),
    'studies_public:practice': (ANYONE, '302 POST=404'),
    'studies_public:return': (ANYONE, '302'),
    'studies_public:start': (ANYONE, '302 POST=200'),  # POST: the attempt's page (the first question) itself
    # studies pages and API
    'studies_api:study_list': (RESEARCHERS, '200 POST=400 PUT=405 PATCH=405 DELETE=405'),
    'studies_api:study_detail': (RESEARCHERS, '200 POST=405 PUT=405 DELETE=405'),
    'studies_api:attempt_list': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'studies_api:attempt_expire': (RESEARCHERS, '405 POST=200 OPTIONS=200'),
    'studies_api:study_reask': (RESEARCHERS, '405 POST=200 OPTIONS=200'),
    'studies_api:attempt_extend': (RESEARCHERS, '405 POST=400 OPTIONS=200'),
    'studies_api:study_export': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'studies:prolific_webhook': (ANYONE, '405 POST=401'),
    'studies_api:prolific_connection': (RESEARCHERS, '405 GET=404 HEAD=404 PUT=400 OPTIONS=200'),
    'studies_api:prolific_test': (RESEARCHERS, '405 POST=400 OPTIONS=200'),
    'studies_api:prolific_submissions': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'studies_api:prolific_review': (RESEARCHERS, '405 POST=400 OPTIONS=200'),
    'studies_api:prolific_bonus_batches': (RESEARCHERS, '405 GET=200 HEAD=200 POST=400 OPTIONS=200'),
    'studies_api:prolific_bonus_approve': (RESEARCHERS, '405 POST=404 OPTIONS=200'),
    'studies_api:prolific_bonus_send': (RESEARCHERS, '405 POST=404 OPTIONS=200'),
    'studies:study_list': (RESEARCHERS, '200'),
    'studies:study_monitor': (RESEARCHERS, '200'),
    'studies:attempt_expire': (RESEARCHERS, '405 POST=302'),
    'studies:attempt_extend': (RESEARCHERS, '405 POST=302'),
    'studies:study_edit': (RESEARCHERS, '200'),
    'studies:exclude_untranslated': (RESEARCHERS, '405 POST=302'),
    'studies:study_reask': (RESEARCHERS, '405 POST=302'),
    'studies:study_export': (RESEARCHERS, '200'),
    'studies:study_results': (RESEARCHERS, '200'),
    'studies:prolific': (RESEARCHERS, '200 POST=400'),
    'studies:prolific_test': (RESEARCHERS, '405 POST=302'),
    'studies:prolific_review': (RESEARCHERS, '405 POST=302'),
    'studies:prolific_bonus_propose': (RESEARCHERS, '405 POST=302'),
    'studies:prolific_bonus_approve': (RESEARCHERS, '405 POST=404'),
    'studies:prolific_bonus_send': (RESEARCHERS, '405 POST=404'),
    'studies:study_preview': (RESEARCHERS, '200'),
    'studies:study_preview_step': (RESEARCHERS, '405 POST=302'),
    'studies:study_preview_answer': (RESEARCHERS, '405 POST=302'),
    'studies:study_preview_draft': (RESEARCHERS, '405 GET=409 POST=409'),
    'studies:study_preview_end': (RESEARCHERS, '200'),
    'studies:study_preview_practice': (RESEARCHERS, '405 POST=302'),
    'studies:study_create': (RESEARCHERS, '200'),
    # evaluation pages and API
    'evaluation_api:run-compare': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:endpoint-list': (RESEARCHERS, '200 POST=400 PUT=405 PATCH=405 DELETE=405'),
    'evaluation_api:endpoint-detail': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200 PUT=400 PATCH=200'),
    'evaluation_api:sweep-launch': (RESEARCHERS, '405 POST=400 OPTIONS=200'),
    'evaluation_api:sweep-estimate': (RESEARCHERS, '405 POST=400 OPTIONS=200'),
    'evaluation_api:figure-list': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'evaluation_api:figure-data': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:figure-file': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:quality-report': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:judge-config-list': (RESEARCHERS, '200 POST=400 PUT=405 PATCH=405 DELETE=405'),
    'evaluation_api:judge-quality': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'evaluation_api:judge-position-probe': (RESEARCHERS, '405 POST=400 OPTIONS=200'),
    'evaluation_api:judge-run-list': (RESEARCHERS, '200 POST=400 PUT=405 PATCH=405 DELETE=405'),
    'evaluation_api:judge-run-detail': (RESEARCHERS, '405 GET=404 HEAD=404 OPTIONS=200'),
    'evaluation_api:judge-run-cancel': (RESEARCHERS, '405 POST=404 OPTIONS=200'),
    'evaluation_api:judge-run-resume': (RESEARCHERS, '405 POST=404 OPTIONS=200'),
    'evaluation_api:leaderboard': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:leaderboard-pairwise': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:one-scale': (RESEARCHERS, '405 GET=400 HEAD=400 OPTIONS=200'),
    'evaluation_api:run-list': (RESEARCHERS, '200 POST=400 PUT=405 PATCH=405 DELETE=405'),
    'evaluation_api:run-detail': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'evaluation_api:run-cancel': (RESEARCHERS, '405 POST=200 OPTIONS=200'),
    'evaluation_api:run-results': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'evaluation_api:run-superseded': (RESEARCHERS, '405 GET=200 HEAD=200 OPTIONS=200'),
    'evaluation_api:run-resume': (RESEARCHERS, '405 POST=200 OPTIONS=200'),
    'evaluation_api:run-refresh': (RESEARCHERS, '405 POST=200 OPTIONS=200'),
    'evaluation:comparison': (RESEARCHERS, '302'),
    'evaluation:run_compare': (RESEARCHERS, '200'),
    'evaluation:endpoint_list': (RESEARCHERS, '200'),
    'evaluation:endpoint_edit': (RESEARCHERS, '200'),
    'evaluation:endpoint_check': (RESEARCHERS, '405 POST=200'),
    'evaluation:figures': (RESEARCHERS, '405 GET=200'),
    'evaluation:figure_file': (RESEARCHERS, '405 GET=400'),
    'evaluation:figure': (RESEARCHERS, '405 GET=400'),
    'evaluation:judge_run_list': (RESEARCHERS, '200'),
    'evaluation:judge_quality': (RESEARCHERS, '200 POST=400'),
    'evaluation:judge_quality_csv': (RESEARCHERS, '200'),
    'evaluation:leaderboard_export': (RESEARCHERS, '400'),
    'evaluation:leaderboard_pairwise_export': (RESEARCHERS, '400'),
    'evaluation:one_scale': (RESEARCHERS, '405 GET=200'),
    'evaluation:one_scale_file': (RESEARCHERS, '405 GET=400'),
    'evaluation:leaderboard': (RESEARCHERS, '200'),
    'evaluation:quality': (RESEARCHERS, '405 GET=200'),
    'evaluation:run_list_export': (RESEARCHERS, '200'),
    'evaluation:run_list': (RESEARCHERS, '200'),
    'evaluation:run_detail': (RESEARCHERS, '200'),
    'evaluation:run_cancel': (RESEARCHERS, '405 POST=302'),
    'evaluation:run_types_export': (RESEARCHERS, '200'),
    'evaluation:run_results_jsonl': (RESEARCHERS, '200'),
    'evaluation:run_superseded_jsonl': (RESEARCHERS, '200'),
    'evaluation:result_detail': (RESEARCHERS, '200'),
    'evaluation:run_resume': (RESEARCHERS, '405 POST=302'),
    'evaluation:run_refresh': (RESEARCHERS, '405 POST=302'),
    'evaluation:run_launch': (RESEARCHERS, '200'),
    'evaluation:run_launch_estimate': (RESEARCHERS, '405 GET=200'),
    # the admin: researchers only (workflow records and answers are read-only, nothing of the data is deleted);
    # accounts, groups, API tokens and login records are for superusers (tests/project/test_admin_roles.py), so
    # the researcher gets 403 there, and 404 for the index of the first app (auth): it has nothing of it
    'admin:index': (ADMIN, '200'),
    'admin/(?P<url>.*)$': (ADMIN, '404'),
    'admin:app_list': (ADMIN, '404'),
    'admin:annotation_adjudication_changelist': (ADMIN, '200'),
    'admin/annotation/adjudication/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_adjudication_change': (ADMIN, '200 POST=403'),
    'admin:annotation_adjudication_delete': (ADMIN, '403'),
    'admin:annotation_adjudication_history': (ADMIN, '200'),
    'admin:annotation_adjudication_add': (ADMIN, '403'),
    'admin:annotation_annotatorlease_changelist': (ADMIN, '200'),
    'admin/annotation/annotatorlease/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_annotatorlease_change': (ADMIN, '302 POST=403'),
    'admin:annotation_annotatorlease_delete': (ADMIN, '403'),
    'admin:annotation_annotatorlease_history': (ADMIN, '302'),
    'admin:annotation_annotatorlease_add': (ADMIN, '403'),
    'admin:annotation_draft_changelist': (ADMIN, '200'),
    'admin/annotation/draft/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_draft_change': (ADMIN, '302 POST=403'),
    'admin:annotation_draft_delete': (ADMIN, '403'),
    'admin:annotation_draft_history': (ADMIN, '302'),
    'admin:annotation_draft_add': (ADMIN, '403'),
    'admin:annotation_item_changelist': (ADMIN, '200'),
    'admin/annotation/item/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_item_change': (ADMIN, '200'),
    'admin:annotation_item_delete': (ADMIN, '403'),
    'admin:annotation_item_history': (ADMIN, '200'),
    'admin:annotation_item_add': (ADMIN, '200'),
    'admin:annotation_itemrevision_changelist': (ADMIN, '200'),
    'admin/annotation/itemrevision/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_itemrevision_change': (ADMIN, '200 POST=403'),
    'admin:annotation_itemrevision_delete': (ADMIN, '403'),
    'admin:annotation_itemrevision_history': (ADMIN, '200'),
    'admin:annotation_itemrevision_add': (ADMIN, '403'),
    'admin:annotation_reviewdecision_changelist': (ADMIN, '200'),
    'admin/annotation/reviewdecision/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_reviewdecision_change': (ADMIN, '302 POST=403'),
    'admin:annotation_reviewdecision_delete': (ADMIN, '403'),
    'admin:annotation_reviewdecision_history': (ADMIN, '302'),
    'admin:annotation_reviewdecision_add': (ADMIN, '403'),
    'admin:annotation_stageconfig_changelist': (ADMIN, '200'),
    'admin/annotation/stageconfig/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_stageconfig_change': (ADMIN, '200'),
    'admin:annotation_stageconfig_delete': (ADMIN, '403'),
    'admin:annotation_stageconfig_history': (ADMIN, '200'),
    'admin:annotation_stageconfig_add': (ADMIN, '200'),
    'admin:annotation_verificationdecision_changelist': (ADMIN, '200'),
    'admin/annotation/verificationdecision/<path:object_id>/': (ADMIN, '302'),
    'admin:annotation_verificationdecision_change': (ADMIN, '302 POST=403'),
    'admin:annotation_verificationdecision_delete': (ADMIN, '403'),
    'admin:annotation_verificationdecision_history': (ADMIN, '302'),
    'admin:annotation_verificationdecision_add': (ADMIN, '403'),
    'admin:auth_group_changelist': (ADMIN, '403'),
    'admin/auth/group/<path:object_id>/': (ADMIN, '302'),
    'admin:auth_group_change': (ADMIN, '403'),
    'admin:auth_group_delete': (ADMIN, '403'),
    'admin:auth_group_history': (ADMIN, '403'),
    'admin:auth_group_add': (ADMIN, '403'),
    'admin:auth_user_changelist': (ADMIN, '403'),
    'admin:auth_user_password_change': (ADMIN, '403'),
    'admin/auth/user/<path:object_id>/': (ADMIN, '302'),
    'admin:auth_user_change': (ADMIN, '403'),
    'admin:auth_user_delete': (ADMIN, '403'),
    'admin:auth_user_history': (ADMIN, '403'),
    'admin:auth_user_add': (ADMIN, '403'),
    'admin:authtoken_tokenproxy_changelist': (ADMIN, '403'),
    'admin/authtoken/tokenproxy/<path:object_id>/': (ADMIN, '302'),
    'admin:authtoken_tokenproxy_change': (ADMIN, '403'),
    'admin:authtoken_tokenproxy_delete': (ADMIN, '403'),
    'admin:authtoken_tokenproxy_history': (ADMIN, '302'),
    'admin:authtoken_tokenproxy_add': (ADMIN, '403'),
    'admin:autocomplete': (ADMIN, '405 GET=403 HEAD=403 OPTIONS=200'),
    'admin:axes_accessattempt_changelist': (ADMIN, '403'),
    'admin/axes/accessattempt/<path:object_id>/': (ADMIN, '302'),
    'admin:axes_accessattempt_change': (ADMIN, '403'),
    'admin:axes_accessattempt_delete': (ADMIN, '403'),
    'admin:axes_accessattempt_history': (ADMIN, '302'),
    'admin:axes_accessattempt_add': (ADMIN, '403'),
    'admin:axes_accessfailurelog_changelist': (ADMIN, '403'),
    'admin/axes/accessfailurelog/<path:object_id>/': (ADMIN, '302'),
    'admin:axes_accessfailurelog_change': (ADMIN, '403'),
    'admin:axes_accessfailurelog_delete': (ADMIN, '403'),
    'admin:axes_accessfailurelog_history': (ADMIN, '302'),
    'admin:axes_accessfailurelog_add': (ADMIN, '403'),
    'admin:axes_accesslog_changelist': (ADMIN, '403'),
    'admin/axes/accesslog/<path:object_id>/': (ADMIN, '302'),
    'admin:axes_accesslog_change': (ADMIN, '403'),
    'admin:axes_accesslog_delete': (ADMIN, '403'),
    'admin:axes_accesslog_history': (ADMIN, '403'),
    'admin:axes_accesslog_add': (ADMIN, '403'),
    'admin:evaluation_cachedresponse_changelist': (ADMIN, '200'),
    'admin/evaluation/cachedresponse/<path:object_id>/': (ADMIN, '302'),
    'admin:evaluation_cachedresponse_change': (ADMIN, '302 POST=403'),
    'admin:evaluation_cachedresponse_delete': (ADMIN, '403'),
    'admin:evaluation_cachedresponse_history': (ADMIN, '302'),
    'admin:evaluation_cachedresponse_add': (ADMIN, '403'),
    'admin:evaluation_modelendpoint_changelist': (ADMIN, '200'),
    'admin/evaluation/modelendpoint/<path:object_id>/': (ADMIN, '302'),
    'admin:evaluation_modelendpoint_change': (ADMIN, '200'),
    'admin:evaluation_modelendpoint_delete': (ADMIN, '200'),
    'admin:evaluation_modelendpoint_history': (ADMIN, '200'),
    'admin:evaluation_modelendpoint_add': (ADMIN, '200'),
    'admin:evaluation_result_changelist': (ADMIN, '200'),
    'admin/evaluation/result/<path:object_id>/': (ADMIN, '302'),
    'admin:evaluation_result_change': (ADMIN, '200 POST=403'),
    'admin:evaluation_result_delete': (ADMIN, '403'),
    'admin:evaluation_result_history': (ADMIN, '200'),
    'admin:evaluation_result_add': (ADMIN, '403'),
    'admin:evaluation_run_changelist': (ADMIN, '200'),
    'admin/evaluation/run/<path:object_id>/': (ADMIN, '302'),
    'admin:evaluation_run_change': (ADMIN, '200 POST=302'),
    'admin:evaluation_run_delete': (ADMIN, '403'),
    'admin:evaluation_run_history': (ADMIN, '200'),
    'admin:evaluation_run_add': (ADMIN, '403'),
    'admin:jsi18n': (ADMIN, '405 GET=200 HEAD=200 OPTIONS=200'),
    'admin:login': (ANYONE, '200 PATCH=405 DELETE=405', {'researcher': '200 GET=302 PATCH=405 DELETE=405'}),
    # Someone not logged in to the admin who asks to log out is sent to the admin (and from there to its login).
    'admin:logout': (ANYONE, '302', {'researcher': '405 POST=302 OPTIONS=200'}),
    'admin:password_change': (ADMIN, '200 PATCH=405 DELETE=405'),
    'admin:password_change_done': (ADMIN, '405 GET=200 HEAD=200 OPTIONS=200'),
    'admin:view_on_site': (ADMIN, '404'),
    'admin:studies_attempt_changelist': (ADMIN, '200'),
    'admin/studies/attempt/<path:object_id>/': (ADMIN, '302'),
    'admin:studies_attempt_change': (ADMIN, '200 POST=403'),
    'admin:studies_attempt_delete': (ADMIN, '403'),
    'admin:studies_attempt_history': (ADMIN, '200'),
    'admin:studies_attempt_add': (ADMIN, '403'),
    'admin:studies_refusedanswer_changelist': (ADMIN, '200'),
    'admin/studies/refusedanswer/<path:object_id>/': (ADMIN, '302'),
    'admin:studies_refusedanswer_change': (ADMIN, '302 POST=403'),
    'admin:studies_refusedanswer_delete': (ADMIN, '403'),
    'admin:studies_refusedanswer_history': (ADMIN, '302'),
    'admin:studies_refusedanswer_add': (ADMIN, '403'),
    'admin:studies_response_changelist': (ADMIN, '200'),
    'admin/studies/response/<path:object_id>/': (ADMIN, '302'),
    'admin:studies_response_change': (ADMIN, '302 POST=403'),
    'admin:studies_response_delete': (ADMIN, '403'),
    'admin:studies_response_history': (ADMIN, '302'),
    'admin:studies_response_add': (ADMIN, '403'),
    'admin:studies_study_changelist': (ADMIN, '200'),
    'admin/studies/study/<path:object_id>/': (ADMIN, '302'),
    'admin:studies_study_change': (ADMIN, '200'),
    'admin:studies_study_delete': (ADMIN, '200'),
    'admin:studies_study_history': (ADMIN, '200'),
    'admin:studies_study_add': (ADMIN, '200'),
}

# Cells that answer 500 today, with the owner who must fix them: the test warns about each, and fails
# once one answers something else (then write its status in MATRIX and remove it here).
BROKEN: dict[tuple[str, str], str] = {
}


def refusal(route: Route, who: str, visitor: str) -> tuple[int, str]:
    """What a visitor who may not use a route gets: (status, where a redirect must point)."""
    if who == ADMIN:
        return 302, "/admin/login/?next="
    if route.pattern.startswith("api/"):
        return (403, "") if visitor == "annotator" else (401, "")
    return (403, "") if visitor == "annotator" else (302, "/accounts/login/?next=")


def parse_statuses(spec: str) -> dict[str, int]:
    default, *overrides = spec.split()
    statuses = dict.fromkeys(METHODS, int(default))
    for override in overrides:
        method, status = override.split("=")
        assert method in METHODS, f"unknown method {method} in {spec!r}"
        statuses[method] = int(status)
    return statuses


def expected(route: Route, visitor: str) -> dict[str, tuple[int, str]]:
    who, spec, *different = MATRIX[route.name]
    if visitor in ALLOWED[who]:
        spec = different[0].get(visitor, spec) if different else spec
        return {method: (status, "") for method, status in parse_statuses(spec).items()}
    return dict.fromkeys(METHODS, refusal(route, who, visitor))


# ---- the routes of the project


@dataclass(frozen=True)
class Route:
    pattern: str  # the full route, e.g. "annotation/items/<int:pk>/"
    name: str  # "namespace:name", or the pattern when the route has no name


def _walk(resolver: URLResolver, prefix: str = "", namespace: str = ""):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = ":".join(part for part in (namespace, entry.namespace) if part) if entry.namespace else namespace
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            pattern = prefix + str(entry.pattern)
            yield Route(pattern, f"{namespace}:{entry.name}" if entry.name else pattern)


def all_routes() -> list[Route]:
    return sorted(set(_walk(get_resolver())), key=lambda r: (r.pattern, r.name))


def _dump_observed(observed: dict) -> None:
    """MATRIX_DUMP=path writes what was observed (to write or review entries)."""
    path = os.environ.get("MATRIX_DUMP")
    if not path:
        return
    with open(path, "w", encoding="utf-8") as out:
        for (route, visitor), statuses in sorted(observed.items(), key=lambda kv: (kv[0][0].pattern, kv[0][1])):
            out.write(f"{route.name}\t{route.pattern}\t{visitor}\t"
                      + " ".join(f"{m}={statuses[m][0]}" for m in METHODS) + "\n")


# ---- the world every request sees


@pytest.fixture
def world(django_user_model):
    from annotation.models import Adjudication, Item, ItemStatus, Stage, StageConfig
    from annotation.services.belief import belief_labels_record, belief_queue_for
    from annotation.services.belief_review import belief_lease_next
    from evaluation.models import Result
    from evaluation.services import runs as evaluation_services
    from studies.models import Attempt, StudyStatus
    from studies.services import study_create
    from tests.annotation.belief_support import free_text_row
    from tests.annotation.workflow_support import make_items
    from tests.evaluation.conftest import compute_rows

    cache.clear()  # API throttle counts of earlier tests
    # The stage settings the data migration writes (the admin's StageConfig pages show the first one): a
    # transactional test that ran before in this process (any order under pytest-xdist) has emptied the table.
    StageConfig.objects.get_or_create(stage=Stage.VERIFICATION)
    users = {}
    for name, group, staff in (("matrix-annotator", "annotators", False), ("matrix-researcher", "researchers", True)):
        user = django_user_model.objects.create_user(name, password="pw-" + name, is_staff=staff)
        user.groups.add(Group.objects.get_or_create(name=group)[0])
        users[group] = user
    items = make_items(4)
    Item.objects.filter(pk=items[3].pk).update(status=ItemStatus.CLUE_GRAPH)
    adjudication = Adjudication.objects.create(item=items[0], stage=Stage.VERIFICATION)
    queue = belief_queue_for(name="matrix-judge")
    belief_labels_record(queue=queue, rows=[free_text_row(items[1], 1, belief=0.7)])
    belief_lease = belief_lease_next(queue_id=queue.pk, user=users["annotators"])
    study = study_create(slug="matrix-study", item_ids=[i.pk for i in items], per_participant=1, raters=4,
                         time_limit_seconds=600, status=StudyStatus.OPEN, completion_code="CODE-1234")
    endpoint = evaluation_services.endpoint_for_cli(builtin="lexical")
    run = compute_rows(evaluation_services.run_launch(endpoint=endpoint, method="naive", split="test", enqueue=False))

    participant = Client(raise_request_exception=False)
    joined = participant.post(f"/s/{study.slug}/join/", {"consent": "yes", "PROLIFIC_PID": "matrix-p1"})
    assert joined.status_code == 302, joined.status_code
    token = joined["Location"].rstrip("/").split("/")[-1]
    attempt = Attempt.objects.get(token=token)
    clients = {"anonymous": Client(raise_request_exception=False), "participant": participant}
    for visitor, group in (("annotator", "annotators"), ("researcher", "researchers")):
        clients[visitor] = Client(raise_request_exception=False)
        clients[visitor].force_login(users[group])
    values = {
        "item": items[0].pk, "adjudication": adjudication.pk, "belief_lease": belief_lease.pk,
        "belief_queue": queue.name, "study": study.slug, "attempt": attempt.pk, "token": attempt.token,
        "run": run.pk, "result": Result.objects.filter(run=run).values_list("pk", flat=True).first(),
        "endpoint": endpoint.pk,
    }
    return clients, values


# Which world object fills a route's parameter: (route prefix, parameter) -> key of `values`, or a literal.
PARAMETERS = [
    ("annotation/items/", "pk", "item"), ("api/annotation/items/", "pk", "item"),
    ("annotation/adjudication/", "pk", "adjudication"),
    ("annotation/belief/leases/", "pk", "belief_lease"), ("api/annotation/belief/leases/", "pk", "belief_lease"),
    ("annotation/belief/drafts/", "pk", "=999999"),
    ("annotation/belief/", "name", "belief_queue"), ("api/annotation/belief/", "name", "belief_queue"),
    ("annotation/", "stage", "=verification"),
    ("evaluation/figures/", "fmt", "=json"), ("api/evaluation/figures/", "fmt", "=png"), ("", "fmt", "=csv"),
    ("s/", "token", "token"), ("s/", "slug", "study"), ("s/", "rest", "=no/such/page"),
    ("studies/", "slug", "study"), ("api/studies/", "slug", "study"),
    ("api/studies/", "submission_id", "=no-such-submission"),
    ("studies/", "attempt_id", "attempt"), ("api/studies/", "pk", "attempt"),
    ("studies/", "submission_id", "=no-such-submission"), ("studies/", "pk", "=999999"),
    ("studies/", "step", "=start"), ("studies/", "kind", "=finished"),  # a researcher's preview
    ("evaluation/runs/", "pk", "run"), ("api/evaluation/runs/", "pk", "run"), ("evaluation/runs/", "result_pk", "result"),
    ("api/evaluation/endpoints/", "pk", "endpoint"), ("evaluation/endpoints/", "pk", "endpoint"),
    ("api/evaluation/judge-runs/", "pk", "=999999"),
    ("evaluation/judge/", "name", "=builtin"), ("api/evaluation/judge-configs/", "name", "=builtin"),
    ("evaluation/figures/", "name", "=accuracy-by-steps"), ("api/evaluation/figures/", "name", "=accuracy-by-steps"),
    ("evaluation/one-scale/", "name", "=respondents"),
]
_CONVERTER = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")
_GROUP = re.compile(r"\(\?P<(?P<name>[^>]+)>(?P<body>[^)]*)\)")


def _admin_value(pattern: str, name: str) -> str:
    """The admin's object ids: the first stored object of the route's model (else one that does not exist)."""
    from django.apps import apps
    from django.contrib.contenttypes.models import ContentType

    if name == "url":  # the admin's catch-all
        return "no/such/page"
    if name == "content_type_id":
        return str(ContentType.objects.get_for_model(apps.get_model("annotation", "Item")).pk)
    parts = pattern.split("/")
    if name == "object_id" and pattern.startswith("admin/r/"):
        return str(apps.get_model("annotation", "Item").objects.values_list("pk", flat=True).first())
    if name == "object_id":
        model = apps.get_model(parts[1], parts[2])
        return str(model._default_manager.values_list("pk", flat=True).order_by("pk").first() or 999999)
    if name == "id":  # the user password form
        return str(apps.get_model("auth", "User").objects.values_list("pk", flat=True).order_by("pk").first())
    raise LookupError(name)


def concrete_url(route: Route, values: dict) -> str:
    """The route with every parameter filled from the world; a parameter with no rule fails the test."""

    def fill(name: str, pattern_body: str | None = None) -> str:
        if route.pattern.startswith("admin/"):
            if pattern_body is not None and "|" in pattern_body:
                return pattern_body.split("|")[0]  # the app index: the first app
            return _admin_value(route.pattern, name)
        for prefix, param, key in PARAMETERS:
            if param == name and route.pattern.startswith(prefix):
                return key[1:] if key.startswith("=") else str(values[key])
        raise LookupError(f"no value for <{name}> in {route.pattern}: add a rule to PARAMETERS")

    url = _GROUP.sub(lambda m: fill(m["name"], m["body"]), route.pattern)
    url = _CONVERTER.sub(lambda m: fill(m["name"]), url)
    return "/" + url.replace("^", "").replace("$", "")


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _ask(client: Client, method: str, url: str) -> tuple[int, str]:
    """(status, Location) of one request; an unsafe one runs in a savepoint that is rolled back."""
    cookies = deepcopy(client.cookies)
    try:
        if method in SAFE_METHODS:
            response = client.generic(method, url)
        else:
            with transaction.atomic():
                response = client.generic(method, url)
                transaction.set_rollback(True)
    finally:
        client.cookies = cookies
    return response.status_code, response.get("Location", "")


def observe(clients: dict, values: dict, routes: list[Route]) -> dict:
    """{(route, visitor): {method: (status, location)}} for every route, visitor and method."""
    observed = {}
    for route in routes:
        url = concrete_url(route, values)
        for visitor in VISITORS:
            observed[(route, visitor)] = {method: _ask(clients[visitor], method, url) for method in METHODS}
    return observed


# ---- the tests


def test_every_route_has_an_entry_and_every_entry_a_route():
    names = {route.name for route in all_routes()}
    missing = sorted(names - set(MATRIX))
    assert not missing, "routes without an entry in MATRIX (say who may use them and what they answer):\n" + \
        "\n".join(missing)
    assert not sorted(set(MATRIX) - names), f"entries without a route: {sorted(set(MATRIX) - names)}"
    for name, (who, spec, *different) in MATRIX.items():
        assert who in ALLOWED, name
        for visitor, statuses in [(None, spec), *(different[0].items() if different else [])]:
            for method, status in parse_statuses(statuses).items():
                assert status != 500 or (name, method) in BROKEN, f"{name} {method}: a 500 is never expected"
            assert visitor is None or visitor in ALLOWED[who], f"{name}: {visitor} may not use it"


def test_every_route_method_and_visitor_answers_as_the_matrix_says(world):
    clients, values = world
    started = time.monotonic()
    routes = all_routes()
    observed = observe(clients, values, routes)
    _dump_observed(observed)
    failures, broken = [], []
    for (route, visitor), answers in observed.items():
        if route.name not in MATRIX:
            failures.append(f"{route.name}: no entry in MATRIX")
            continue
        want = expected(route, visitor)
        for method, (status, location) in answers.items():
            want_status, want_location = want[method]
            where = f"{visitor} {method} {route.name} ({route.pattern})"
            if (route.name, method) in BROKEN and visitor in ALLOWED[MATRIX[route.name][0]]:
                if status == 500:
                    broken.append(f"{where}: {BROKEN[route.name, method]}")
                else:
                    failures.append(f"{where}: fixed, now {status}: write it in MATRIX and remove it from BROKEN")
            elif status != want_status:
                failures.append(f"{where}: {status}, expected {want_status}")
            elif want_location and not location.startswith(want_location):
                failures.append(f"{where}: redirects to {location}, expected {want_location}...")
    took = time.monotonic() - started
    print(f"\npermission matrix: {len(routes)} routes x {len(METHODS)} methods x {len(VISITORS)} visitors = "
          f"{len(observed) * len(METHODS)} requests in {took:.0f} s; {len(broken)} known 500s")
    for cell in broken:
        warnings.warn(f"known 500: {cell}", stacklevel=2)
    assert not failures, f"{len(failures)} cells differ from MATRIX:\n" + "\n".join(failures)


API_ROUTES = [route for route in all_routes() if route.pattern.startswith("api/") and route.pattern.endswith("/")]


@pytest.mark.parametrize("suffix", [".json", ".api", "/.json"])
def test_no_api_route_answers_a_format_suffix(researcher_client, suffix):
    from django.urls import Resolver404, resolve

    values = {"item": 1, "belief_lease": 1, "belief_queue": "q", "study": "s", "attempt": 1, "run": 1,
              "endpoint": 1}
    answers = {}
    for route in API_ROUTES:
        url = concrete_url(route, values).rstrip("/") + suffix
        with pytest.raises(Resolver404):
            resolve(url)
        method = "POST" if route.name.endswith(("cancel", "resume", "submit", "next", "extend", "expire")) else "GET"
        answers[f"{method} {url}"] = researcher_client.generic(method, url).status_code
    assert len(answers) == len(API_ROUTES) >= 30
    assert set(answers.values()) == {404}, {k: v for k, v in answers.items() if v != 404}


def test_the_run_urls_with_a_format_suffix_answer_404_and_change_nothing(researcher_client):
    from evaluation.models import Run
    from evaluation.services import runs as evaluation_services
    from tests.annotation.workflow_support import make_items

    make_items(3)
    run = evaluation_services.run_launch(endpoint=evaluation_services.endpoint_for_cli(builtin="lexical"),
                                         method="naive", split="test", enqueue=False)
    base = f"/api/evaluation/runs/{run.pk}"
    assert researcher_client.get(f"{base}/results/").status_code == 200  # the route without a suffix works
    assert researcher_client.get(f"{base}/results.json").status_code == 404
    assert researcher_client.post(f"{base}/cancel.json").status_code == 404
    assert researcher_client.post(f"{base}/resume.json").status_code == 404
    assert Run.objects.get(pk=run.pk).status == run.status
