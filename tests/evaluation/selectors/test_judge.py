"""evaluation.selectors.judge.free_text_accuracy: a free-text run's judged accuracy after the built-in judge (a
reviewed final label counts instead of the judge's; no answer counts as wrong; the unscored share says whose it
is; the judge-powered accuracy beside the people-only one), as the run page and the API show it."""
import pytest

from annotation.models import BeliefLabel
from evaluation.models import Result
from evaluation.selectors import judge as selectors
from evaluation.services import judge as services
from tests.evaluation.judge_support import judge, judged_and_reviewed, old_judge_label, unreviewed_results

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reviewed_final_label_counts_instead_of_the_judges(free_text_run):
    judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    [before] = selectors.free_text_accuracy(run=free_text_run)
    flipped = BeliefLabel.objects.filter(task="free-text", status="scored", label="correct").first()
    BeliefLabel.objects.filter(pk=flipped.pk).update(final_label="incorrect", final_source="judge-overridden")
    [after] = selectors.free_text_accuracy(run=free_text_run)
    assert after.correct == before.correct - 1 and after.reviewed == 1



def test_the_run_page_shows_the_judged_accuracy_with_the_unscored_share(free_text_run, researcher_client):
    page = researcher_client.get(f"/evaluation/runs/{free_text_run.pk}/").content.decode()
    assert "free text: not judged yet" in page
    first = Result.objects.filter(run=free_text_run).order_by("pk").first()
    Result.objects.filter(pk=first.pk).update(free_answer="")
    [line] = judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    [accuracy] = selectors.free_text_accuracy(run=free_text_run)
    page = researcher_client.get(f"/evaluation/runs/{free_text_run.pk}/").content.decode()
    assert f"{100 * accuracy.correct / (accuracy.scored + 1):.1f}%" in page
    assert f"judged by builtin: {accuracy.correct}/{line['scored'] + 1} correct" in page
    assert "1 without an answer (counted wrong)" in page and "unscored" not in page  # the model's, not the judge's



def test_no_answer_counts_as_wrong_and_the_unscored_share_says_whose_it_is(free_text_run, researcher_client):
    """Issue 21: a free-text run's judged accuracy dropped unanswered results from its denominator, so a model
    that declines hard items scored higher. No answer counts as wrong (multiple-choice accuracy's rule); what is
    left unscored is told apart: the model's non-answers, the judge's unreadable replies, results not judged
    yet. Rows that failed for infrastructure reasons are left out, as for multiple choice."""
    results = list(Result.objects.filter(run=free_text_run).order_by("pk"))
    Result.objects.filter(pk__in=[r.pk for r in results[:2]]).update(free_answer="")  # the model declined two
    Result.objects.filter(pk=results[2].pk).update(error="connection refused", error_class="connection_refused")
    judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    # The judge's reply for one answered result could not be read.
    unreadable = BeliefLabel.objects.get(target=f"result:{results[3].pk}")
    BeliefLabel.objects.filter(pk=unreadable.pk).update(status="unscored", label="", belief=None,
                                                      raw_output="I think it is right")
    [accuracy] = selectors.free_text_accuracy(run=free_text_run)
    labels = BeliefLabel.objects.filter(task="free-text")
    correct = labels.filter(status="scored", label="correct").count()
    graded = labels.filter(status="scored").count()
    n = len(results) - 1  # the infrastructure failure is no result of the model's
    assert (accuracy.n, accuracy.scored, accuracy.correct) == (n, graded, correct)
    assert (accuracy.unanswered, accuracy.unreadable, accuracy.pending) == (2, 1, 0)
    assert graded == n - 3
    assert accuracy.accuracy == pytest.approx(correct / (graded + 2))  # the two non-answers are wrong
    assert accuracy.unanswered_share == pytest.approx(2 / n)
    assert accuracy.unreadable_share == pytest.approx(1 / n)
    assert accuracy.unscored_share == pytest.approx(1 / n)  # only what nobody knows: the unreadable reply
    page = researcher_client.get(f"/evaluation/runs/{free_text_run.pk}/").content.decode()
    assert f"judged by builtin: {correct}/{graded + 2} correct" in page
    assert "2 without an answer (counted wrong)" in page
    assert "1 reply of the judge unreadable" in page
    data = researcher_client.get(f"/api/evaluation/runs/{free_text_run.pk}/").json()
    [judged] = data["judged_accuracy"]
    assert (judged["unanswered"], judged["unreadable"], judged["pending"]) == (2, 1, 0)
    assert judged["accuracy"] == pytest.approx(correct / (graded + 2))



def test_the_run_page_and_api_show_the_judge_powered_accuracy(free_text_run, researcher_client, annotator):
    """Issue 21, point 1: beside the judge's accuracy, the judge-powered one (PPI++ under the queue's review design)
    and the reviews' alone, each with its n; results without an answer are known to be wrong."""
    from annotation.selectors.belief_trust import powered_share
    from annotation.services.belief import belief_queue_policy_set
    from annotation.services.belief_review import belief_lease_next, belief_review_submit

    first = Result.objects.filter(run=free_text_run).order_by("pk").first()
    Result.objects.filter(pk=first.pk).update(free_answer="")
    judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    [before] = selectors.free_text_accuracy(run=free_text_run)
    assert before.powered["value"] is None and "had no chance of review" in before.powered["reason"]
    config = services.judge_config_builtin()
    belief_queue_policy_set(queue_id=config.queue_id, order="audit")
    for _ in range(14):  # uniform draws: each label reviewed with probability u*
        lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
        label = lease.label
        human = label.label if label.status == "scored" else "incorrect"
        belief_review_submit(lease_id=lease.pk, user=annotator, human_label=human)
    [accuracy] = selectors.free_text_accuracy(run=free_text_run)
    answered = [f"result:{pk}" for pk in Result.objects.filter(run=free_text_run).exclude(pk=first.pk)
                .values_list("pk", flat=True)]
    share = powered_share(queue=config.queue, task="free-text", targets=answered, known_zeros=1)
    assert accuracy.powered == share["powered"] and accuracy.people == share["people"]
    powered = accuracy.powered
    assert powered["value"] is not None and powered["n"] == accuracy.n and powered["low"] <= powered["value"] <= powered["high"]
    reviewed = BeliefLabel.objects.filter(target__in=answered, reviews__isnull=False).distinct().count()
    assert powered["n_reviewed"] == reviewed + 1  # the one without an answer is known, as if reviewed
    page = researcher_client.get(f"/evaluation/runs/{free_text_run.pk}/").content.decode()
    assert f'data-value="{powered["value"]!r}"' in page or f'data-value="{powered["value"]:.17g}"' in page
    assert f"[{powered['low']:.3f}, {powered['high']:.3f}] n = {accuracy.n}; {reviewed + 1} reviewed" in page
    data = researcher_client.get(f"/api/evaluation/runs/{free_text_run.pk}/").json()
    assert data["judged_accuracy"][0]["powered"]["value"] == pytest.approx(powered["value"])
    assert data["judged_accuracy"][0]["people"]["value"] == pytest.approx(accuracy.people["value"])



def test_the_judge_powered_accuracy_counts_only_the_label_at_the_version_each_result_was_asked(
        free_text_run, annotator):
    """A label of a result at another content version (the judge before the lifecycle fix graded a stale answer
    against the item's new content) is not that result's verdict: the judged accuracy ignored it, and so must the
    judge-powered and people-only figures, even when it is the latest and reviewed."""
    from annotation.services import item_update
    from annotation.services.belief_review import belief_lease_next, belief_review_submit

    config = judged_and_reviewed(free_text_run, annotator)
    [before] = selectors.free_text_accuracy(run=free_text_run)
    assert before.powered["value"] is not None, before.powered["reason"]
    # An unreviewed result's item is curated, and a label of that result at the new version is written, flipped.
    result = unreviewed_results(free_text_run).first()
    item = result.item
    item_update(item_id=item.pk, base_version=item.version, changes={"question": item.question + " (reworded)"})
    original = BeliefLabel.objects.get(target=f"result:{result.pk}")
    flipped = old_judge_label(original).label
    lease = belief_lease_next(queue_id=config.queue_id, user=annotator)
    assert lease.label.target == original.target and lease.label.item_version == original.item_version + 1
    belief_review_submit(lease_id=lease.pk, user=annotator, human_label=flipped)
    [after] = selectors.free_text_accuracy(run=free_text_run)
    assert (after.correct, after.scored) == (before.correct, before.scored)
    assert after.powered == before.powered and after.people == before.people
