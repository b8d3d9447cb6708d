"""evaluation.services.judge.judge_probe_launch: a seeded uniform sample of a judge run's targets, the same
configuration, task and target run; refused, with a reason, where there is no option order to permute."""
import pytest

from evaluation.services import judge as services
from foundation.errors import Invalid

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_probe_samples_the_runs_targets_with_its_seed(free_text_run):
    config = services.judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, run=free_text_run, enqueue=False)
    a = services.judge_probe_launch(judge_run=judge_run, sample=7, seed=3, enqueue=False)
    b = services.judge_probe_launch(judge_run=judge_run, sample=7, seed=3, enqueue=False)
    c = services.judge_probe_launch(judge_run=judge_run, sample=7, seed=4, enqueue=False)
    assert a.targets == b.targets != c.targets and len(a.targets) == a.n == 7
    assert set(a.targets) <= set(judge_run.targets) and len(set(a.targets)) == 7
    assert (a.config_id, a.task, a.target_run_id, a.probe) == (config.pk, "free-text", free_text_run.pk, "reversed")
    every = services.judge_probe_launch(judge_run=judge_run, kind="rotated", sample=10_000, enqueue=False)
    assert sorted(every.targets) == sorted(judge_run.targets)
    with pytest.raises(Invalid, match="itself a probe"):
        services.judge_probe_launch(judge_run=a, enqueue=False)
    with pytest.raises(Invalid, match="at least 1"):
        services.judge_probe_launch(judge_run=judge_run, sample=0, enqueue=False)
    with pytest.raises(Invalid, match="permutation"):
        services.judge_probe_launch(judge_run=judge_run, kind="shuffled", enqueue=False)


def test_a_clue_graph_run_has_no_option_order_to_permute(sample_items):
    config = services.judge_config_builtin()
    judge_run = services.judge_run_launch(config=config, task="clue-graph", split="test", limit=2, enqueue=False)
    with pytest.raises(Invalid, match="no option order"):
        services.judge_probe_launch(judge_run=judge_run, enqueue=False)
