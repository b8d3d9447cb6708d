"""The built-in judge end to end on the sample data: labels through annotation's service, counts, resume,
the `judge` command's JSON line and the free-text accuracy of the run."""
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count

from annotation.models import BeliefLabel
from evaluation.execution.judge import judge_run_counts
from evaluation.models import Result, RunStatus
from evaluation.selectors import judge as selectors
from evaluation.services import judge as services
from foundation.errors import Invalid

pytestmark = pytest.mark.django_db(transaction=True)


def judge(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("judge", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def assert_one_label_per_target_and_aspect(queue):
    assert not BeliefLabel.objects.filter(queue=queue).values("target", "aspect", "item_version").annotate(
        c=Count("pk")).filter(c__gt=1).exists()


def test_judge_builtin_run_wait_prints_its_line_and_the_run_gets_an_accuracy(free_text_run):
    [line] = judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    results = Result.objects.filter(run=free_text_run).count()
    assert set(line) == {"judge_run", "config", "task", "status", "n", "scored", "unscored", "errors",
                         "label_counts", "mean_belief", "wall_s"}
    assert (line["task"], line["status"], line["n"], line["errors"]) == ("free-text", "finished", results, 0)
    assert line["scored"] + line["unscored"] == results
    labels = BeliefLabel.objects.filter(producer=f"judge-run:{line['judge_run']}")
    assert labels.count() == results
    correct = labels.filter(status="scored", label="correct").count()
    assert line["label_counts"] == {k: v for k, v in {"correct": correct,
                                                      "incorrect": labels.filter(status="scored", label="incorrect").count()}.items() if v}
    beliefs = list(labels.filter(status="scored").values_list("belief", flat=True))
    assert line["mean_belief"] == pytest.approx(sum(beliefs) / len(beliefs), abs=1e-6)
    # Even answers are the gold option's text, odd ones the next option's: the built-in judge tells them apart.
    for label in labels.select_related("item"):
        index = int(Result.objects.get(pk=int(label.target.split(":")[1])).free_answer.split(":")[0].split()[-1])
        assert label.label == ("correct" if index % 2 == 0 else "incorrect"), label.payload
        assert (label.task, label.aspect, label.belief_source, label.choices) == (
            "free-text", "verdict", "builtin", ["correct", "incorrect"])
        assert len(label.prompt_hash) == 12 and label.item_version == label.item.version
        # The reviewer sees the answer that was graded.
        assert label.payload["answer"] == Result.objects.get(pk=int(label.target.split(":")[1])).free_answer
    [accuracy] = selectors.free_text_accuracy(run=free_text_run)
    assert (accuracy.config, accuracy.n, accuracy.scored, accuracy.correct) == ("builtin", results, line["scored"], correct)
    assert accuracy.unscored_share == pytest.approx((results - line["scored"]) / results)
    assert accuracy.unanswered == accuracy.unreadable == accuracy.pending == 0

    # Re-running computes nothing new: exactly one label per target.
    [again] = judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    assert again["judge_run"] != line["judge_run"] and again["scored"] == line["scored"]
    assert BeliefLabel.objects.filter(task="free-text").count() == results
    assert not BeliefLabel.objects.filter(producer=f"judge-run:{again['judge_run']}").exists()


def test_a_reviewed_final_label_counts_instead_of_the_judges(free_text_run):
    judge("--config", "builtin", "--run", str(free_text_run.pk), "--wait")
    [before] = selectors.free_text_accuracy(run=free_text_run)
    flipped = BeliefLabel.objects.filter(task="free-text", status="scored", label="correct").first()
    BeliefLabel.objects.filter(pk=flipped.pk).update(final_label="incorrect", final_source="judge-overridden")
    [after] = selectors.free_text_accuracy(run=free_text_run)
    assert after.correct == before.correct - 1 and after.reviewed == 1


def test_unanswered_results_are_unscored_and_missing_labels_are_resumed(free_text_run):
    first = Result.objects.filter(run=free_text_run).order_by("pk").first()
    Result.objects.filter(pk=first.pk).update(free_answer="")
    config = services.judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
    services.judge_run_execute_in_process(judge_run=judge_run)
    label = BeliefLabel.objects.get(target=f"result:{first.pk}")
    assert (label.status, label.label, label.belief) == ("unscored", "", None)
    judge_run.refresh_from_db()
    assert judge_run.unscored == 1 and judge_run.scored == judge_run.n - 1

    # Delete half of the labels (as if the run had been killed before writing them) and resume.
    gone = list(BeliefLabel.objects.filter(queue=config.queue).order_by("pk").values_list("pk", flat=True)[::2])
    BeliefLabel.objects.filter(pk__in=gone).delete()
    assert judge_run_counts(judge_run)["errors"] == len(gone)
    services.judge_run_resume(judge_run=judge_run, enqueue=False)
    judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
    assert (judge_run.status, judge_run.errors, judge_run.scored + judge_run.unscored) == (
        RunStatus.FINISHED, 0, judge_run.n)
    assert_one_label_per_target_and_aspect(config.queue)


def test_screening_and_clue_graph_drafts_of_a_split(sample_items):
    [screening] = judge("--config", "builtin", "--split", "test", "--task", "screening", "--limit", "5", "--wait")
    assert (screening["n"], screening["scored"], screening["errors"]) == (5, 5, 0)
    labels = BeliefLabel.objects.filter(task="screening")
    assert labels.count() == 5 * 6
    assert sum(screening["label_counts"].values()) == 30
    assert set(labels.values_list("aspect", flat=True)) == {"1.1", "1.2", "1.3", "1.4", "1.5", "keep"}
    assert all(0 <= b <= 1 for b in labels.values_list("belief", flat=True))
    keep = labels.get(target=f"item:{sample_items[0].pk}", aspect="keep")
    assert keep.choices == ["keep", "delete"]

    [drafts] = judge("--config", "builtin", "--split", "test", "--task", "clue-graph", "--wait")
    assert drafts["n"] == len(sample_items) and drafts["label_counts"] == {"draft": drafts["scored"]}
    for label in BeliefLabel.objects.filter(task="clue-graph").select_related("item"):
        assert label.label == "draft" and label.choices == ["draft", "edited", "discarded"]
        assert label.payload["anchored_share"] == 1.0
        for line in label.payload["evidence"].splitlines():
            assert line.split(" -> ")[0] in label.item.context


def test_refusals(free_text_run, sample_items):
    config = services.judge_config_builtin()
    with pytest.raises(Invalid):
        services.judge_run_launch(config=config, task="screening", run=free_text_run)
    with pytest.raises(Invalid):
        services.judge_run_launch(config=config, task="screening", split="nope")
    with pytest.raises(CommandError, match="--task"):
        judge("--config", "builtin", "--split", "test")
    with pytest.raises(CommandError, match="no judge configuration"):
        judge("--config", "nope", "--split", "test", "--task", "screening")
    naive = free_text_run.endpoint.runs.create(method="naive", item_ids=[sample_items[0].pk], prompt_version="x")
    with pytest.raises(CommandError, match="only free-text"):
        judge("--config", "builtin", "--run", str(naive.pk))


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


def test_a_cancelled_judge_run_computes_nothing(free_text_run):
    config = services.judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
    services.judge_run_cancel(judge_run=judge_run)
    judge_run = services.judge_run_execute_in_process(judge_run=judge_run)
    assert judge_run.status == RunStatus.CANCELLED and not BeliefLabel.objects.exists()


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
