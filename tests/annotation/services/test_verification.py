"""verification_submit and the judge's screening suggestion (annotation.services.verification): where each decision
came from: the suggestion changed (judge-overridden, per label) or absent (human-only)."""
import pytest

from annotation.models import BeliefLabel
from annotation.services.belief import belief_labels_record
from annotation.services.verification import verification_submit
from tests.annotation.belief_support import DELETE_FOR_MATH, screening_rows

pytestmark = pytest.mark.django_db


def test_changing_the_suggestion_records_judge_overridden(annotator, screening_queue, to_verify):
    item = to_verify[0]
    belief_labels_record(queue=screening_queue, rows=screening_rows(item, DELETE_FOR_MATH, version=1))
    decision = verification_submit(item_id=item.pk, user=annotator, decision="delete", criteria=["bias"],
                                   item_version=item.version)
    assert decision.source == "judge-overridden"
    labels = {label.aspect: label for label in BeliefLabel.objects.filter(item=item)}
    assert labels["keep"].final_source == "judge-accepted"  # delete, as the judge said
    assert (labels["1.2"].final_label, labels["1.2"].final_source) == ("no", "judge-overridden")
    assert (labels["1.5"].final_label, labels["1.5"].final_source) == ("yes", "judge-overridden")


def test_without_a_suggestion_the_decision_is_human_only(annotator, to_verify):
    item = to_verify[1]
    decision = verification_submit(item_id=item.pk, user=annotator, decision="keep", criteria=[],
                                   item_version=item.version)
    assert decision.source == "human-only"
