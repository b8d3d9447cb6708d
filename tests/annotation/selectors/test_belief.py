"""The selectors of the belief review (annotation.selectors.belief): the triage note says when triage has nothing to
order by (every belief the same), and that labels without a belief go first."""
import pytest
from django.test import Client
from django.urls import reverse

from annotation.selectors.belief import triage_basis
from annotation.services.belief import belief_labels_record, belief_queue_policy_set
from tests.annotation.belief_support import free_text_row, record_free_text, trust_page, words

pytestmark = pytest.mark.django_db


def test_triage_says_when_it_has_nothing_to_order_by(queue, items, annotator, researcher):
    record_free_text(queue, items, [0.9] * 4)
    basis = triage_basis(queue=queue)
    assert basis["nothing_to_order_by"] and basis["pending"] == 4
    assert basis["note"] == ("All 4 label(s) awaiting review have the judge's belief 0.90: triage has nothing to "
                             "order by, so they come in random order.")
    client = Client()
    client.force_login(annotator)
    assert basis["note"] in words(client.get(reverse("annotation:belief_queues")).content.decode())
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
