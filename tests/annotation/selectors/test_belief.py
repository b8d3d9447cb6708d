"""The selectors of the belief review (annotation.selectors.belief): the triage note says when triage has nothing to
order by (every belief the same), and that labels without a belief go first; the verification screen makes up no
keep/delete suggestion while the judge's own is in blind review."""
import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import BeliefLabel, BeliefReview, ItemStatus
from annotation.selectors.belief import judge_hidden, screening_view, triage_basis
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from tests.annotation.belief_support import (
    DELETE_FOR_MATH,
    free_text_row,
    record_free_text,
    screening_rows,
    trust_page,
    words,
)
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db


def test_triage_says_when_it_has_nothing_to_order_by(queue, items, annotator, researcher):
    record_free_text(queue, items, [0.9] * 4)
    basis = triage_basis(queue=queue)
    assert basis["nothing_to_order_by"] and basis["pending"] == 4
    assert basis["note"] == ("All 4 label(s) awaiting review have the judge's belief 0.90: triage has nothing to "
                             "order by, so they come in random order.")
    client = Client()
    client.force_login(annotator)
    # The annotators' page says it without the belief (it records no sighting of the labels); the trust page says it.
    annotators = words(client.get(reverse("annotation:belief_queues")).content.decode())
    assert "Triage has nothing to order the 4 label(s) awaiting review by, so they come in random order." in annotators
    assert "0.90" not in annotators and "belief" not in annotators.split("Triage has nothing")[1][:80]
    assert basis["note"] in words(trust_page(researcher, queue))
    # Labels without a belief go first; the note says so, and that the rest are ordered.
    belief_labels_record(queue=queue, rows=[free_text_row(items[0], 50 + i, belief=None, status="unscored")
                                            for i in range(2)])
    record_free_text(queue, items, [0.6], start=60)
    basis = triage_basis(queue=queue)
    assert not basis["nothing_to_order_by"] and basis["no_belief"] == 2
    assert basis["note"].startswith("2 of the 7 label(s) awaiting review have no belief from the judge")
    # Audit order is random by design: no note.
    belief_queue_policy_set(queue_id=queue.pk, order="audit")
    queue.refresh_from_db()
    assert triage_basis(queue=queue)["note"] == ""


def test_a_keep_delete_label_in_blind_review_is_not_made_up_from_the_criteria(annotator, annotator2):
    """k=1: the five criterion labels are reviewed (their judge shown), the keep/delete label is in blind review for
    annotator2. The verification screen shows the criteria, but no keep/delete suggestion derived from them ("Suggests
    delete" because 1.2 says yes) and no button to accept one."""
    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source="dk")
    queue = belief_queue_for(name="scr-dk", blind=True, reviewers_per_label=1, order="audit")
    belief_labels_record(queue=queue, rows=screening_rows(item, DELETE_FOR_MATH))
    keep = BeliefLabel.objects.get(queue=queue, aspect="keep")
    for n, label in enumerate(BeliefLabel.objects.filter(queue=queue).exclude(pk=keep.pk)):
        BeliefLabel.objects.filter(pk=label.pk).update(audit_key=0.01 * (n + 1))
    BeliefLabel.objects.filter(pk=keep.pk).update(audit_key=0.9)  # handed out last
    for _ in range(5):
        lease = belief_lease_next(queue_id=queue.pk, user=annotator)
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=lease.label.label)
    assert BeliefReview.objects.filter(label__queue=queue).count() == 5
    assert judge_hidden(keep, user=annotator2)
    shown = screening_view(item=item, user=annotator2)
    assert shown["keep"] is None and shown["decision"] is None and not shown["consistent"]
    assert shown["criteria"] == ["heavy_math"]  # what the visible criterion labels say, shown as they are
    client = Client()
    client.force_login(annotator2)
    page = client.get(reverse("annotation:verify", args=[item.pk])).content.decode()
    assert 'id="judge-suggestion"' in page and 'id="judge-heavy_math"' in page
    assert 'id="judge-decision"' not in page and 'id="accept-suggestion"' not in page


def test_the_suggestions_are_the_judges_of_the_content_now_also_after_a_revert(researcher):
    """Labels of the content version the item has now come first, else the latest judged (named with its version):
    a revert gives the item its first content's version back, and the first judgement is current again although
    another was made later."""
    from annotation.services import item_revert, item_update

    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source="rv")
    queue = belief_queue_for(name="scr-rv", blind=False)
    keep = {"keep": ("keep", 0.81), "1.2": ("no", 0.7)}
    belief_labels_record(queue=queue, rows=screening_rows(item, keep, version=1))
    edited = item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " Really?"})
    assert screening_view(item=edited, user=researcher)["judged_version"] == 1  # the latest judged, named
    belief_labels_record(queue=queue, rows=screening_rows(item, DELETE_FOR_MATH, version=2))
    view = screening_view(item=edited, user=researcher)
    assert (view["decision"], view["judged_version"]) == ("delete", 2)
    reverted = item_revert(item_id=item.pk, revision_number=1, base_version=edited.version)
    assert reverted.content_version == 1
    view = screening_view(item=reverted, user=researcher)
    assert (view["decision"], view["judged_version"], view["keep"].belief) == ("keep", 1, 0.81)
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("annotation:verify", args=[item.pk])).content.decode()
    assert 'id="judge-decision">keep<' in page and "judged version" not in page
