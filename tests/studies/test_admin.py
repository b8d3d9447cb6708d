"""The studies admin writes through the services: the pool is read-only, setup keeps its rules, attempts have actions."""
import re

from django.contrib.messages import get_messages
from django.urls import reverse

from studies.models import Attempt, AttemptStatus, Study, StudyStatus

from .conftest import started_attempt


def _change_data(study: Study, client=None, **fields) -> dict:
    """The admin form of a study as the browser posts it: with `client`, the pool inline's inputs of the page."""
    data = {
        "title": study.title, "status": study.status, "per_participant": study.per_participant,
        "raters": study.raters, "time_limit_seconds": study.time_limit_seconds,
        "question_time_limit_seconds": study.question_time_limit_seconds or "", "grace_seconds": study.grace_seconds,
        "language": study.language, "consent_text": study.consent_text, "instructions": study.instructions,
        "practice_item": study.practice_item_id or "", "bonus_per_correct": study.bonus_per_correct,
        "bonus_currency": study.bonus_currency, "completion_code": study.completion_code,
        "completion_url": study.completion_url, "seed": study.seed, "pool_split": study.pool_split,
        "pool_sample": study.pool_sample or "",
        "pool-TOTAL_FORMS": "0", "pool-INITIAL_FORMS": "0", "pool-MIN_NUM_FORMS": "0", "pool-MAX_NUM_FORMS": "0",
    }
    if client is not None:
        page = client.get(reverse("admin:studies_study_change", args=[study.pk])).content.decode()
        data.update(re.findall(r'<input[^>]*name="(pool-[^"]*)"[^>]*value="([^"]*)"', page))
        assert int(data["pool-INITIAL_FORMS"]) == study.pool.count()
    data.update(fields)
    return data


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_pool_inline_is_read_only(researcher_client, make_study):
    study = make_study(n_items=4, slug="adm")
    page = researcher_client.get(reverse("admin:studies_study_change", args=[study.pk]))
    assert page.status_code == 200
    inline = page.context["inline_admin_formsets"][0]
    assert not inline.has_add_permission and not inline.has_change_permission and not inline.has_delete_permission
    assert b'name="pool-0-quota"' not in page.content and b'name="pool-0-item"' not in page.content


def test_admin_create_samples_the_pool_through_the_service(researcher_client, items, researcher):
    items(10)
    study = Study(slug="from-admin", title="Admin", pool_split="test", pool_sample=6, seed=3, raters=2,
                  status=StudyStatus.DRAFT)
    data = {**_change_data(study), "slug": "from-admin"}
    response = researcher_client.post(reverse("admin:studies_study_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    created = Study.objects.get(slug="from-admin")
    assert created.pool.count() == 6 and set(created.pool.values_list("quota", flat=True)) == {2}
    assert created.created_by == researcher


def test_admin_refuses_raters_below_load_with_a_message(researcher_client, make_study):
    study = make_study(n_items=3, per_participant=3, raters=2, slug="adm-load")
    started_attempt(study, "a")
    started_attempt(study, "b")
    url = reverse("admin:studies_study_change", args=[study.pk])
    response = researcher_client.post(url, _change_data(study, researcher_client, raters=1, title="Changed"))
    assert response.status_code == 302 and response.url == url
    assert "An item already has 2 raters; raters cannot go below that." in _messages(response)
    study.refresh_from_db()
    assert (study.raters, study.title) == (2, "adm-load")  # the whole save is rolled back
    assert set(study.pool.values_list("quota", flat=True)) == {2}


def test_admin_refuses_a_new_pool_after_start(researcher_client, make_study):
    study = make_study(n_items=6, per_participant=2, raters=1, slug="adm-frozen", pool_split="test")
    started_attempt(study, "a")
    before = list(study.pool.values_list("item_id", flat=True))
    url = reverse("admin:studies_study_change", args=[study.pk])
    response = researcher_client.post(url, _change_data(study, researcher_client, pool_sample=3, seed=5))
    assert response.status_code == 302
    assert "The item pool cannot change after participants have started." in _messages(response)
    study.refresh_from_db()
    assert list(study.pool.values_list("item_id", flat=True)) == before and study.seed == 0


def test_admin_changes_settings_and_resamples_a_draft_pool(researcher_client, make_study):
    study = make_study(n_items=6, per_participant=2, raters=1, slug="adm-draft", pool_split="test",
                       status=StudyStatus.DRAFT)
    url = reverse("admin:studies_study_change", args=[study.pk])
    response = researcher_client.post(url, _change_data(study, researcher_client, pool_sample=4, seed=5, raters=3))
    assert response.status_code == 302 and response.url != url
    study.refresh_from_db()
    assert study.pool.count() == 4 and set(study.pool.values_list("quota", flat=True)) == {3}


def test_attempts_are_records_with_service_actions(researcher_client, make_study):
    study = make_study(n_items=6, per_participant=2, raters=2, slug="adm-attempts")
    running, done = started_attempt(study, "run"), started_attempt(study, "done")
    researcher_client.post(reverse("admin:studies_attempt_changelist"),
                           {"action": "expire", "_selected_action": [done.pk]})
    url = reverse("admin:studies_attempt_changelist")
    response = researcher_client.post(url, {"action": "extend_ten_minutes",
                                            "_selected_action": [running.pk, done.pk]})
    assert response.status_code == 302
    texts = _messages(response)
    assert "1 attempt(s) extended." in texts
    assert f"Attempt {done.pk}: Only a running attempt can be extended." in texts
    running_after = Attempt.objects.get(pk=running.pk)
    assert (running_after.deadline - running.deadline).total_seconds() == 600
    assert Attempt.objects.get(pk=done.pk).status == AttemptStatus.EXPIRED
    change = researcher_client.post(reverse("admin:studies_attempt_change", args=[running.pk]),
                                    {"status": AttemptStatus.FINISHED})
    assert change.status_code == 403
    assert Attempt.objects.get(pk=running.pk).status == AttemptStatus.STARTED
    assert researcher_client.get(reverse("admin:studies_attempt_change", args=[running.pk])).status_code == 200
