"""The contract end to end: the built-in judge (evaluation) writes through belief_labels_record, and
the review queue, the trust page and the verification screen work on its labels."""
import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import BeliefLabel, ItemStatus
from annotation.services.belief import belief_queue_policy_set
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db(transaction=True)


def test_builtin_screening_labels_in_the_verification_screen_and_the_queue(annotator, researcher):
    items = make_items(4, status=ItemStatus.VERIFICATION, source="bj")
    out = io.StringIO()
    call_command("judge", "--config", "builtin", "--split", "test", "--task", "screening", "--wait", stdout=out)
    line = json.loads(out.getvalue().splitlines()[-1])
    assert line["n"] == 4 and line["errors"] == 0
    labels = BeliefLabel.objects.filter(item=items[0], task="screening")
    assert {label.aspect for label in labels} == {"1.1", "1.2", "1.3", "1.4", "1.5", "keep"}
    client = Client()
    client.force_login(annotator)
    keep = labels.get(aspect="keep")
    # The judge's queue is new, so in blind review: the verification screen keeps its suggestion to itself ...
    assert keep.queue.blind
    assert 'id="judge-suggestion"' not in client.get(reverse("annotation:verify", args=[items[0].pk])).content.decode()
    # ... until a researcher turns blind review off.
    belief_queue_policy_set(queue_id=keep.queue_id, blind=False)
    page = client.get(reverse("annotation:verify", args=[items[0].pk])).content.decode()
    assert f'id="judge-decision">{keep.label}<' in page and f"{keep.belief:.2f}" in page
    queue = keep.queue
    lease_page = client.post(reverse("annotation:belief_next", args=[queue.name]), follow=True)
    assert lease_page.status_code == 200 and b"review-form" in lease_page.content
    client.force_login(researcher)
    assert client.get(reverse("annotation:belief_trust", args=[queue.name])).status_code == 200
