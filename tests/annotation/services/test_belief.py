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


def test_once_reviewing_began_a_queue_cannot_become_blind_nor_a_blind_one_ask_more_reviews(items, annotator):
    """The blind review's last gap: the judge's label was shown to annotators before (a sighted queue, or a label
    that had its k reviews); turning blind on, or raising k of a blind queue, would record later reviews as blind
    by people who may have seen it. Before any review both are allowed; lowering k and turning blind off always."""
    from annotation.models import BeliefQueue
    from annotation.services.belief import belief_queue_policy_set
    from annotation.services.belief_review import belief_lease_next, belief_review_submit
    from tests.annotation.belief_support import record_free_text

    for blind in (False, True):
        queue = belief_queue_for(name=f"policy-{int(blind)}", order="audit", blind=blind)
        belief_queue_policy_set(queue_id=queue.pk, reviewers_per_label=2, blind=blind)  # no review yet: allowed
        belief_queue_policy_set(queue_id=queue.pk, reviewers_per_label=1)
        record_free_text(queue, items, [0.9, 0.2, 0.6])
        lease = belief_lease_next(queue_id=queue.pk, user=annotator)
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label="correct")
        field = "reviewers_per_label" if blind else "blind"
        with pytest.raises(Invalid) as refused:
            belief_queue_policy_set(queue_id=queue.pk, blind=True, reviewers_per_label=3)
        assert field in refused.value.errors
        assert BeliefQueue.objects.filter(pk=queue.pk, blind=blind, reviewers_per_label=1).exists()
    belief_queue_policy_set(queue_id=queue.pk, blind=False)  # turning blind off: reviews made blind stay blind
