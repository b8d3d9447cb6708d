"""belief_labels_record: the judge's only way in; idempotent (exact resume), validated."""
import pytest

from annotation.models import BeliefLabel
from annotation.selectors.belief import belief_labels, final_label
from annotation.services.belief import belief_labels_record, belief_queue_for
from foundation.errors import Invalid
from tests.annotation.belief_support import free_text_row

pytestmark = pytest.mark.django_db


def test_records_rows_and_a_second_call_inserts_nothing(queue, items):
    rows = [free_text_row(items[0], 1, belief=0.9), free_text_row(items[1], 2, belief=None, status="unscored")]
    assert belief_labels_record(queue=queue, rows=rows) == 2
    assert belief_labels_record(queue=queue, rows=rows) == 0
    assert belief_labels_record(queue=queue, rows=rows + [free_text_row(items[2], 3, belief=0.4)]) == 1
    stored = BeliefLabel.objects.get(queue=queue, target="result:1")
    assert (stored.label, stored.belief, stored.payload["answer"], stored.tokens) == ("correct", 0.9, "free answer 1", 12)
    assert stored.choices == ["correct", "incorrect"] and 0 <= stored.audit_key < 1 and stored.first_stream == ""
    assert stored.created_at is not None and stored.final_label == ""
    assert final_label(stored) == "correct"
    assert BeliefLabel.objects.filter(queue=queue).count() == 3


def test_the_first_label_of_a_target_is_kept_on_conflict(queue, items):
    belief_labels_record(queue=queue, rows=[free_text_row(items[0], 1, belief=0.9)])
    belief_labels_record(queue=queue, rows=[free_text_row(items[0], 1, belief=0.1, label="incorrect")])
    assert BeliefLabel.objects.get(target="result:1").belief == 0.9


def test_same_target_in_another_queue_or_version_is_another_label(queue, items):
    other = belief_queue_for(name="judge-b")
    assert belief_labels_record(queue=queue, rows=[free_text_row(items[0], 1, belief=0.9)]) == 1
    assert belief_labels_record(queue=other, rows=[free_text_row(items[0], 1, belief=0.9)]) == 1
    assert belief_labels_record(queue=queue, rows=[free_text_row(items[0], 1, belief=0.9, version=7)]) == 1
    assert belief_labels(queue=queue, target__in=["result:1"]).count() == 2


@pytest.mark.parametrize("change, message", [
    ({"belief": 1.5}, "belief"),
    ({"belief": None}, "scored"),
    ({"task": "poetry"}, "task"),
    ({"label": "maybe"}, "choices"),
    ({"item_id": 10 ** 9}, "unknown items"),
    ({"colour": "red"}, "unknown fields"),
    ({"target": "x" * 65}, "target"),
    ({"item_version": 0}, "item_version"),
])
def test_bad_rows_are_refused_and_nothing_is_written(queue, items, change, message):
    bad = {**free_text_row(items[1], 2, belief=0.5), **change}
    rows = [free_text_row(items[0], 1, belief=0.5), bad]
    with pytest.raises(Invalid, match=message):
        belief_labels_record(queue=queue, rows=rows)
    assert not BeliefLabel.objects.exists()


def test_queue_for_gets_or_creates_and_checks_the_policy(db):
    first = belief_queue_for(name="builtin", order="audit", random_share=0.5)
    assert belief_queue_for(name="builtin", order="triage") == first
    first.refresh_from_db()
    # Blind review is the default of a new queue (a reviewer who sees the judge's label first tends to agree).
    assert (first.order, first.random_share, first.reviewers_per_label, first.blind) == ("audit", 0.5, 1, True)
    with pytest.raises(Invalid):
        belief_queue_for(name="Not a slug!")
    with pytest.raises(Invalid):
        belief_queue_for(name="x", random_share=2)
