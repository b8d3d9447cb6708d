"""The request count (and cost, when the endpoint has prices) shown on the launch page before a launch:
equal to the requests the launched runs really make against a stand-in server, circular order included."""
import re
import time

import pytest
from django.urls import reverse

from annotation.models import Item
from evaluation.model_calls.launch_estimate import estimate, template_tokens
from evaluation.prompting.methods import get_method
from evaluation.selectors import analysis
from evaluation.services import runs as services
from tests.support.items import import_items
from tests.support.model_server import ModelServer

METHODS = ["naive", "self-consistency", "complexity-cot", "detective-thinking-multiround"]


def test_requests_per_method_samples_and_rotations():
    methods = [get_method(m) for m in METHODS]
    plan = estimate(methods=methods, k=3, items=10, item_tokens=2000, samples=2, rotations=4)
    assert [r.requests for r in plan.runs] == [80 * 1, 80 * 3, 80 * 4, 80 * 5]
    assert plan.requests == 80 * 13 and all(r.rows == 80 for r in plan.runs)
    assert plan.runs[0].tokens_in == 80 * (200 + template_tokens(methods[0]))
    assert not plan.priced and plan.cost_in is None and plan.max_tokens_out is None
    priced = estimate(methods=methods[:1], k=None, items=10, item_tokens=2000, samples=1, rotations=1,
                      max_tokens=100, price_in_per_mtok=2.0, price_out_per_mtok=8.0)
    assert priced.cost_in == pytest.approx(priced.tokens_in * 2.0 / 1e6)
    assert priced.cost_out_max == pytest.approx(10 * 100 * 8.0 / 1e6)
    three_shot = estimate(methods=[get_method("naive-3shot")], k=None, items=10, item_tokens=2000, samples=1,
                          rotations=1)
    assert three_shot.tokens_in > priced.tokens_in + 3 * 2000 - 1  # the demonstrations are sent too


@pytest.mark.django_db(transaction=True)
def test_the_count_shown_is_what_the_launch_asks(detectbench_dir, researcher_client):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)
    with ModelServer(reply_mode="first") as server:
        endpoint = services.endpoint_create(name=f"stand-in {time.time_ns()}", base_url=server.base_url,
                                            model="stand-in", use_cache=False, max_tokens=50,
                                            price_in_per_mtok="1.5", price_out_per_mtok="6")
        query = {"endpoint": endpoint.pk, "methods": METHODS, "split": "test", "samples": 2, "k": 3,
                 "option_order": "circular", "seed": 1}
        fragment = researcher_client.get(reverse("evaluation:run_launch_estimate"), query,
                                         HTTP_HX_REQUEST="true").content.decode()
        shown = int(re.search(r'data-requests="(\d+)"', fragment).group(1))
        assert shown == 6 * 2 * 4 * (1 + 3 + 4 + 5)
        assert 'class="cost-in"' in fragment and 'class="cost-out"' in fragment
        plan = analysis.launch_estimate(endpoint=endpoint, methods=METHODS, split="test", samples=2, k=3,
                                        option_order="circular")
        assert plan.cost_out_max == pytest.approx(shown * 50 * 6 / 1e6)
        for run in services.runs_launch(methods=METHODS, endpoint=endpoint, split="test", samples=2, k=3,
                                        option_order="circular", enqueue=False):
            services.run_execute_in_process(run=run)
        assert server.stats.requests == shown
    plain = researcher_client.get(reverse("evaluation:run_launch_estimate"),
                                  {**query, "option_order": "original", "samples": 1, "methods": ["naive"],
                                   "endpoint": services.endpoint_for_cli(builtin="random").pk}).content.decode()
    assert 'data-requests="6"' in plain and "built-in" in plain and "cost-in" not in plain
    missing = researcher_client.get(reverse("evaluation:run_launch_estimate"), {"split": "test"}).content.decode()
    assert "Choose an endpoint" in missing
    empty = researcher_client.get(reverse("evaluation:run_launch_estimate"),
                                  {**query, "split": "nope"}).content.decode()
    assert "No items match" in empty
    page = researcher_client.get(reverse("evaluation:run_launch")).content.decode()
    assert reverse("evaluation:run_launch_estimate") in page and 'hx-params="not csrfmiddlewaretoken"' in page
    assert Item.objects.count() == 6
