"""The home page as a dashboard: per split and status the items, open studies and their fill, model runs in
progress, judge labels waiting, each with its link; what a person reads is asserted."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import ItemStatus
from annotation.services.belief import belief_queue_for
from evaluation.services.runs import endpoint_create, run_launch
from studies.models import StudyStatus
from studies.services import attempt_start, question_open, response_submit, study_create, study_join
from tests.annotation.workflow_support import client_for, make_items
from tests.support.page_text import visible_text

pytestmark = pytest.mark.django_db


def _world():
    make_items(3, status=ItemStatus.IMPORTED)
    make_items(2, status=ItemStatus.VERIFICATION, start=10)
    dev = make_items(1, status=ItemStatus.PUBLISHED, start=20, source="d")
    ids = [item.pk for item in make_items(4, status=ItemStatus.PUBLISHED, start=30, source="s")]
    study = study_create(slug="pilot", title="Pilot study", item_ids=ids, per_participant=2, raters=2,
                         time_limit_seconds=600, status=StudyStatus.OPEN, completion_code="C0DE-1")
    study_create(slug="later", title="A draft study", item_ids=ids, per_participant=2, raters=1,
                 time_limit_seconds=600, completion_code="C0DE-2")
    attempt = attempt_start(attempt_id=study_join(study=study, participant_id="p1").pk)
    question = question_open(attempt=attempt)
    response_submit(token=attempt.token, position=question.lease.position, chosen_option=0, highlights=[])
    endpoint = endpoint_create(name="first option", kind="builtin", model="first-option")
    run = run_launch(endpoint=endpoint, method="naive", ids=ids, enqueue=False)
    return dev, study, run


def test_the_researchers_home_page_counts_items_studies_runs_and_labels(researcher):
    dev, study, run = _world()
    page = client_for(researcher).get(reverse("home"))
    html, text = page.content.decode(), visible_text(page)
    # Items per split and status: the split "test" holds 3 imported, 2 in verification and 5 published.
    assert "10 items" in text
    assert ("Split Imported Question verification Question rewriting Clue-graph construction Review Published "
            "Rejected Total") in text
    assert "test 3 2 0 0 0 5 0 10" in text
    assert "0 open disagreements · 0 items being worked on now" in text
    # The open study with its fill: 1 of the 8 answers wanted (4 items x 2 raters); the draft is not listed.
    assert "Pilot study 1 of 8 answers (12%) · 1 participant" in text and "A draft study" not in text
    assert f'href="{reverse("studies:study_monitor", args=[study.slug])}"' in html
    # The run that is queued, with its progress.
    assert f"Run {run.pk}: naive on first option Queued · 0 of 4 rows" in text
    assert f'href="{reverse("evaluation:run_detail", args=[run.pk])}"' in html
    assert "0 labels waiting for review" in text
    for url in ("annotation:progress", "annotation:item_import", "studies:study_list", "evaluation:run_list",
                "annotation:belief_queues", "annotation:queue"):
        assert f'href="{reverse(url)}"' in html, url


def test_an_empty_install_says_what_to_do_first(researcher):
    text = visible_text(client_for(researcher).get(reverse("home")))
    assert ("No items yet. Import a DetectBench file, then queue the items for verification on Curation "
            "progress.") in text
    assert "No study is open." in text and "No run is queued or running." in text
    assert "Nothing to work on yet" in text


def test_annotators_see_their_queue_and_the_labels_not_the_research_numbers(annotator):
    make_items(2, status=ItemStatus.VERIFICATION)
    belief_queue_for(name="judge-a")
    page = client_for(annotator).get(reverse("home"))
    text = visible_text(page)
    assert "Your work queue" in text and "Question verification: 2 items waiting" in text
    assert "labels waiting for review" in text
    assert "Open studies" not in text and "Model runs in progress" not in text and 'id="dash-items"' not in \
        page.content.decode()


def test_a_user_without_a_role_is_told_whom_to_ask(plain_user):
    assert "Ask a researcher to add you" in visible_text(client_for(plain_user).get(reverse("home")))


def test_the_dashboard_query_count_does_not_grow_with_the_data(researcher):
    client = client_for(researcher)
    _world()
    client.get(reverse("home"))
    with CaptureQueriesContext(connection) as small:
        client.get(reverse("home"))
    make_items(20, status=ItemStatus.REVIEW, start=100, source="more")
    study_create(slug="second", title="Second", item_ids=[i.pk for i in make_items(3, start=200, source="x")],
                 per_participant=1, raters=1, time_limit_seconds=600, status=StudyStatus.OPEN, completion_code="C-3")
    with CaptureQueriesContext(connection) as large:
        client.get(reverse("home"))
    assert len(large) == len(small) <= 25, [q["sql"] for q in large.captured_queries]
