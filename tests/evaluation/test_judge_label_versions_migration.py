"""evaluation migration 0014: a judge label of a result at a content version the result was not asked at (recorded
by the judge before it graded each result at its own version) becomes an error label with a note, so that the queue's
trust figures, judge-powered shares and quality card no longer count it; labels at the asked version, of current and
of superseded rows alike, are left as they are."""
import importlib

import pytest
from django.apps import apps

from annotation.models import BeliefLabel
from annotation.selectors.belief_trust import belief_trust
from annotation.services import item_update
from annotation.services.belief_review import belief_lease_next, belief_review_submit
from evaluation.execution.judge import judge_run_counts
from evaluation.models import JudgeRun
from evaluation.selectors.judge_quality import judge_quality_card
from evaluation.services.runs import run_refresh
from foundation.errors import Conflict
from tests.evaluation.judge_support import judged_and_reviewed, old_judge_label, unreviewed_results

pytestmark = pytest.mark.django_db(transaction=True)

migration = importlib.import_module("evaluation.migrations.0014_judge_labels_at_other_versions")


def test_labels_at_a_version_their_result_was_not_asked_at_stop_counting(free_text_run, annotator, annotator2):
    config = judged_and_reviewed(free_text_run, annotator)
    before = belief_trust(queue=config.queue)
    card_before = judge_quality_card(config=config)
    [judge_run] = JudgeRun.objects.filter(config=config)
    counts_before = judge_run_counts(judge_run)
    stale, superseded = unreviewed_results(free_text_run)[:2]
    # Both items curated; the old judge labelled both results at the new version; one of them is reviewed there.
    for result in (stale, superseded):
        item = result.item
        item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " (reworded)"})
    wrong = [old_judge_label(BeliefLabel.objects.get(target=f"result:{r.pk}")) for r in (stale, superseded)]
    lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
    assert lease.label.pk == wrong[0].pk
    belief_review_submit(lease_id=lease.pk, user=annotator, human_label=wrong[0].label)
    held = belief_lease_next(queue_id=config.queue_id, user=annotator2)  # leased before the migration
    assert held.label.pk == wrong[1].pk
    run_refresh(run=free_text_run, enqueue=False)  # both rows superseded (kept with the version they were asked at)
    odd = BeliefLabel.objects.create(queue=config.queue, item=stale.item, item_version=1, task="free-text",
                                     target="result:²", aspect="verdict", status="unscored", belief_source="x")
    assert belief_trust(queue=config.queue)["powered"] != before["powered"]  # what the old labels did

    assert migration.flag_labels_at_other_versions(apps) == 2
    assert migration.flag_labels_at_other_versions(apps) == 0  # once
    odd.refresh_from_db()
    assert odd.status == "unscored"  # a target that names no result (a digit that is not 0-9) is left as it is
    odd.delete()
    for label in wrong:
        label.refresh_from_db()
        assert label.status == "error" and label.rationale.startswith("Not counted: this label judged the item's "
                                                                      "content at version 2, but its result was "
                                                                      "asked at version 1")
    assert BeliefLabel.objects.filter(status="error").count() == 2
    after = belief_trust(queue=config.queue)
    assert after["powered"] == before["powered"]
    card = judge_quality_card(config=config)
    assert (card["n_labels"], card["n_scored"]) == (card_before["n_labels"], card_before["n_scored"])
    assert card["spread"] == card_before["spread"]
    # The judge run's counts take the label at the asked version, not the newer error label.
    assert judge_run_counts(judge_run) == counts_before
    # A lease held on such a label is refused and given back, not reviewed.
    with pytest.raises(Conflict) as refused:
        belief_review_submit(lease_id=held.pk, user=annotator2, human_label="correct")
    assert refused.value.code == "label_not_counted"
    assert belief_lease_next(queue_id=config.queue_id, user=annotator2) is None or \
        belief_lease_next(queue_id=config.queue_id, user=annotator2).label.status != "error"
