"""The `judge` management command with the built-in judge on the sample data: its JSON line, labels through
annotation's service, one label per target on a re-run, screening and clue-graph drafts of a split, refusals."""
import pytest
from django.core.management.base import CommandError

from annotation.models import BeliefLabel
from evaluation.models import Result
from evaluation.selectors import judge as selectors
from evaluation.services import judge as services
from foundation.errors import Invalid
from tests.evaluation.judge_support import judge

pytestmark = pytest.mark.django_db(transaction=True)


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

